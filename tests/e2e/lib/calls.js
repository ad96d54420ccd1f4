'use strict';
// Call steps shared by test/calls.test.js and the call party it runs in a child process (so that it can SIGKILL
// a client mid-call). Run as a script, this file is that party:
//
//   node lib/calls.js <host:port> <auth token> <peer usr… id> [ws|lp]
//
// It logs in with the token, subscribes to `me` and to the P2P topic with the peer, dials an audio call and prints
// one line per step on stdout, STEP_MARK and JSON (other lines, such as the SDK's log with E2E_DEBUG=1, are not
// steps): {"dialled":<seq>}, then {"accepted":<seq>} once the peer accepts; then it idles until it is killed. A
// failure prints {"error":"…"} and exits with status 1.

const assert = require('node:assert/strict');
const { Client } = require('./client');
const { Drafty } = require('tinode-sdk');
const { j } = require('./common');

const STEP_MARK = '@@call-step ';

/**
 * True if `p` is a call {info} about the P2P topic `peer` (named as this client names it). Palaver sends every
 * call event on `me` with `src`; Tinode sends the ones meant for a call party's own session (ringing, accept to
 * the caller, offer, answer, ice-candidate, hang-up to attached sessions) on the P2P topic itself. The flow
 * checks accept either; the routing test in calls.test.js insists on Tinode's.
 */
function isCallInfo(p, peer, event, seq) {
  const i = p && p.info;
  return !!i && i.what === 'call' && i.event === event && (seq === undefined || i.seq === seq) &&
    ((i.topic === 'me' && i.src === peer) || i.topic === peer);
}

/**
 * Dials on the attached P2P topic the way tinode-webapp does: a Drafty video-call message with
 * head {webrtc:"started", aonly}. Resolves {msg, ctrl}: the pub sent and the server's reply to it (taken from the
 * wire, since topic.publishMessage() swallows rejections), or ctrl null if none arrived.
 */
async function sendDial(c, topic, aonly = true) {
  const msg = topic.createMessage(Drafty.videoCall(aonly), false);
  msg.head = Object.assign(msg.head || {}, { webrtc: 'started', aonly });
  const since = c.mark();
  await topic.publishMessage(msg);
  const reply = c.received(p => p.ctrl && p.ctrl.id === msg.id, since)[0];
  return { msg, ctrl: reply ? reply.ctrl : null };
}

/** Dials and requires the call to be accepted by the server (202). Resolves the call's seq. */
async function dial(c, topic, aonly = true) {
  const { msg, ctrl } = await sendDial(c, topic, aonly);
  assert.ok(ctrl && ctrl.code === 202 && ctrl.params && ctrl.params.seq > 0,
    `${c.name}: the call message ${j(msg)} must be accepted with ctrl 202 and params.seq: got ${j(ctrl)}`);
  return ctrl.params.seq;
}

async function main() {
  const [host, token, peer, transport = 'ws'] = process.argv.slice(2);
  if (!host || !token || !/^usr/.test(String(peer))) {
    throw new Error('usage: node lib/calls.js <host:port> <auth token> <peer usr… id> [ws|lp]');
  }
  const say = obj => process.stdout.write(STEP_MARK + JSON.stringify(obj) + '\n');
  const c = new Client(host, { transport, name: 'call-party' });
  await c.connect();
  const login = await c.loginToken(token);
  assert.equal(login.code, 200, `token login: ${j(login)}`);
  await c.subscribeMe();
  const topic = c.tn.getTopic(peer);
  const sub = await topic.subscribe(topic.startMetaQuery().withDesc().build());
  assert.equal(sub.code, 200, `subscribe ${peer}: ${j(sub)}`);
  const since = c.mark();
  const seq = await dial(c, topic, true);
  say({ dialled: seq });
  await c.waitFor(p => isCallInfo(p, peer, 'accept', seq), { since, timeout: 60000, what: 'accept' });
  say({ accepted: seq });
  // Keep the connection (and the event loop) alive until the test kills this process.
  setInterval(() => {}, 60000);
}

if (require.main === module) {
  main().catch(e => {
    process.stdout.write(STEP_MARK + JSON.stringify({ error: e && e.stack ? e.stack : String(e) }) + '\n');
    process.exit(1);
  });
}

module.exports = { isCallInfo, sendDial, dial, STEP_MARK };
