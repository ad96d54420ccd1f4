'use strict';
// Authorization attacks through tinode-sdk: granting rights one does not hold, reading a group one is not in,
// and rejoining a group after being removed.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, joinTopic, tick, GRP_RE } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, sleep, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

/** A group whose members get `auth` by default. */
async function groupWith(c, fn, auth) {
  const topic = c.tn.getTopic(c.tn.newGroupTopicName(false));
  const ctrl = await topic.subscribe(null, { desc: { public: { fn }, defacs: { auth } } });
  assert.match(String(ctrl.topic), GRP_RE, j(ctrl));
  return topic;
}

const refusedWith = code => e => {
  assert.equal(e.code, code, `expected ${code}: ${e.message}`);
  return true;
};

for (const transport of TRANSPORTS) {
  describe(`authorization over ${transport}`, () => {
    test(`${transport}: a member's invites and mode changes stay within its own rights`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'sa');
        const b = await newUser(t, srv.host, transport, 'sb');
        const c = await newUser(t, srv.host, transport, 'sc');
        // Read-only for members, who may still share it.
        const grpA = await groupWith(a, 'read only', 'JRPS');
        const grpB = await joinTopic(b, grpA.name);
        await assert.rejects(grpB.invite(c.uid(), 'JRWPD'), refusedWith(403), 'W and D are not the inviter\'s');
        const ok = await grpB.invite(c.uid(), 'JRP');
        assert.equal(ok.code, 200, j(ok));
        // Default access is the owner's to change.
        await assert.rejects(grpB.setMeta({ desc: { defacs: { auth: 'JRWPASD' } } }), refusedWith(403));
        // The invitee holds only what it was given.
        const grpC = await joinTopic(c, grpA.name);
        assert.equal(grpC.getAccessMode().getGiven(), 'JRP', j(grpC.getAccessMode()));
        await assert.rejects(c.tn.publish(grpA.name, 'may I write?', false), refusedWith(403));
      });

    test(`${transport}: a stranger cannot list a group's members, tags or read positions`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'va');
        const b = await newUser(t, srv.host, transport, 'vb');
        const s = await newUser(t, srv.host, transport, 'vs');
        const grpA = await groupWith(a, 'members only', 'JRWPS');
        await joinTopic(b, grpA.name);
        const mk = s.mark();
        await assert.rejects(s.tn.getMeta(grpA.name, { what: 'sub' }), refusedWith(403));
        await assert.rejects(s.tn.getMeta(grpA.name, { what: 'tags' }), refusedWith(403));
        await assert.rejects(s.tn.getMeta(grpA.name, { what: 'del' }), refusedWith(403));
        await sleep(200);
        const leaked = s.received(p => p.meta && p.meta.topic === grpA.name && (p.meta.sub || p.meta.tags), mk);
        assert.equal(leaked.length, 0, `meta reached a stranger: ${j(leaked)}`);
        // The public description stays visible.
        const meta = await s.tn.getMeta(grpA.name, { what: 'desc' });
        assert.deepEqual(meta.desc.public, { fn: 'members only' }, j(meta));
      });

    test(`${transport}: a removed member cannot rejoin until an admin invites them back`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ra');
        const b = await newUser(t, srv.host, transport, 'rb');
        const grpA = await groupWith(a, 'with a ban', 'JRWPS');
        await joinTopic(b, grpA.name);
        await tick(50);
        const ctrl = await grpA.delSubscription(b.uid());
        assert.equal(ctrl.code, 200, j(ctrl));
        await sleep(200);
        await assert.rejects(b.tn.subscribe(grpA.name), e => {
          assert.equal(e.code, 403, e.message);
          assert.match(e.message, /removed from this group/, e.message);
          return true;
        });
        const back = await grpA.invite(b.uid(), 'JRWP');
        assert.equal(back.code, 200, j(back));
        const again = await b.tn.subscribe(grpA.name);
        assert.equal(again.code, 200, j(again));
      });
  });
}
