'use strict';
// Higher-level steps shared by the test files: users, second devices, groups.

const assert = require('node:assert/strict');
const { connectClient } = require('./client');
const { uniqueLogin, uniquePassword, j } = require('./common');

const USER_RE = /^usr[A-Za-z0-9_-]+$/;
const GRP_RE = /^grp[A-Za-z0-9_-]+$/;

/** Connects a new client and signs up a fresh user (createAccountBasic with login:true). */
async function newUser(t, host, transport, prefix = 'u', params = {}) {
  const c = await connectClient(t, host, { transport, name: `${prefix}(${transport})` });
  const login = uniqueLogin(prefix);
  const password = uniquePassword();
  const ctrl = await c.signUp(login, password, params);
  assert.ok(ctrl && ctrl.code >= 200 && ctrl.code < 300, `sign-up ctrl: ${j(ctrl)}`);
  assert.match(String(c.uid()), USER_RE, `sign-up must return params.user: ${j(ctrl)}`);
  const tok = c.tn.getAuthToken();
  assert.ok(tok && tok.token, `sign-up with login:true must return params.token and params.expires: ${j(ctrl)}`);
  c.token = tok.token;
  return c;
}

/** A second device of the same user: a new client that logs in with the first one's token. */
async function secondDevice(t, host, transport, first, name) {
  const c = await connectClient(t, host, { transport, name: name || `${first.name}#2` });
  const ctrl = await c.loginToken(first.token);
  assert.equal(c.uid(), first.uid(), `token login must resolve to the same user: ${j(ctrl)}`);
  c.login = first.login;
  c.password = first.password;
  c.token = first.token;
  return c;
}

/** Creates a group topic through the SDK's new-topic path. Resolves the Topic (renamed to grp…). */
async function createGroup(c, fn = 'E2E group', tags) {
  const topic = c.tn.getTopic(c.tn.newGroupTopicName(false));
  const setParams = { desc: { public: { fn } } };
  if (tags) setParams.tags = tags;
  const ctrl = await topic.subscribe(null, setParams);
  assert.ok(ctrl && ctrl.code >= 200 && ctrl.code < 300, `create group ctrl: ${j(ctrl)}`);
  assert.match(String(ctrl.topic), GRP_RE, `ctrl.topic must be the real grp… name: ${j(ctrl)}`);
  assert.equal(topic.name, ctrl.topic, 'the SDK renames the topic to ctrl.topic');
  assert.ok(topic.isSubscribed(), 'creator is attached');
  return topic;
}

/** Lets the SDK run the routing it defers with setTimeout(0) (meta/data/pres/info processing). */
function tick(ms = 5) {
  return new Promise(r => setTimeout(r, ms));
}

/**
 * Subscribes (joins) an existing topic by name, fetching desc and subscribers. Waits until the desc has arrived
 * and the SDK has processed it (the sub promise resolves on the ctrl, which comes before the meta). Resolves the
 * Topic.
 */
async function joinTopic(c, name, { withData = false } = {}) {
  const topic = c.tn.getTopic(name);
  let q = topic.startMetaQuery().withDesc().withLaterSub();
  if (withData) q = q.withLaterData(100);
  const mark = c.mark();
  const ctrl = await topic.subscribe(q.build());
  assert.ok(ctrl && ctrl.code >= 200 && ctrl.code < 300, `subscribe ${name} ctrl: ${j(ctrl)}`);
  assert.ok(topic.isSubscribed(), `${c.name} attached to ${name}`);
  await c.waitFor(p => p.meta && p.meta.topic === name && p.meta.desc,
    { since: mark, what: `{meta desc} on ${name} after sub with get desc` });
  await tick();
  return topic;
}

module.exports = { newUser, secondDevice, createGroup, joinTopic, tick, USER_RE, GRP_RE };
