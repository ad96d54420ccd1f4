'use strict';
// P2P topics: each side addresses the other by its usr… id.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

for (const transport of TRANSPORTS) {
  describe(`p2p over ${transport}`, () => {
    test(`${transport}: A writes to B's usr… id, B answers on A's usr… id`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'pa', { public: { fn: 'Peer A' } });
      const b = await newUser(t, srv.host, transport, 'pb', { public: { fn: 'Peer B' } });
      const uidA = a.uid();
      const uidB = b.uid();
      // B is online on `me`, so the server can tell it about the new conversation.
      const mB = b.mark();
      await b.subscribeMe();

      // A opens the P2P topic by naming B.
      const pA = a.tn.getTopic(uidB);
      const mA = a.mark();
      const ctrl = await pA.subscribe(pA.startMetaQuery().withDesc().withLaterSub().build());
      assert.equal(ctrl.code, 200, `sub ${uidB}: ${j(ctrl)}`);
      assert.equal(ctrl.topic, uidB, `the ctrl names the topic as the client did (usr…), not p2p…: ${j(ctrl)}`);
      assert.equal(pA.name, uidB);
      assert.ok(pA.isP2PType());

      // A sees B's public in the topic desc.
      const descA = await a.waitFor(p => p.meta && p.meta.topic === uidB && p.meta.desc,
        { since: mA, what: `meta desc on ${uidB}` });
      assert.deepEqual(descA.meta.desc.public, { fn: 'Peer B' }, `P2P desc.public is the peer's: ${j(descA.meta.desc)}`);

      const text1 = `ping ${rand(3)}`;
      const c1 = await a.publish(pA, text1);
      assert.equal(c1.code, 202, j(c1));
      assert.equal(c1.params.seq, 1, `first message in a new P2P topic has seq 1: ${j(c1)}`);
      const echo = await a.waitData(uidB, d => d.seq === 1, { since: mA });
      assert.equal(echo.from, uidA);

      // B is not attached to the P2P topic; it learns about the message on `me`.
      const presMsg = await b.waitPres('me', p => p.src === uidA && p.what === 'msg', { since: mB })
        .catch(e => e);

      // B attaches to A's id and fetches the message.
      const pB = b.tn.getTopic(uidA);
      const mB2 = b.mark();
      const ctrlB = await pB.subscribe(pB.startMetaQuery().withLaterData(24).withDesc().withLaterSub().build());
      assert.equal(ctrlB.code, 200, j(ctrlB));
      assert.equal(ctrlB.topic, uidA, `B's ctrl names the topic ${uidA}: ${j(ctrlB)}`);
      const d1 = await b.waitData(uidA, d => d.seq === 1, { since: mB2 });
      assert.equal(d1.from, uidA);
      assert.equal(d1.content, text1);
      const descB = await b.waitFor(p => p.meta && p.meta.topic === uidA && p.meta.desc,
        { since: mB2, what: `meta desc on ${uidA}` });
      assert.deepEqual(descB.meta.desc.public, { fn: 'Peer A' }, `B sees A's public: ${j(descB.meta.desc)}`);

      // B answers; A (attached) receives it live on topic usrB.
      const mA2 = a.mark();
      const text2 = `pong ${rand(3)}`;
      const c2 = await b.publish(pB, text2);
      assert.equal(c2.params.seq, 2, j(c2));
      const d2 = await a.waitData(uidB, d => d.seq === 2, { since: mA2 });
      assert.equal(d2.from, uidB);
      assert.equal(d2.content, text2);

      // A writes again; B is attached now and receives it live.
      const mB3 = b.mark();
      const c3 = await a.publish(pA, 'again');
      const d3 = await b.waitData(uidA, d => d.seq === c3.params.seq, { since: mB3 });
      assert.equal(d3.content, 'again');

      // The conversation is in both users' subscription lists on `me`, named by the peer.
      const mA3 = a.mark();
      await a.subscribeMe();
      const subsA = await a.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub),
        { since: mA3, what: 'meta sub on me' });
      assert.ok(subsA.meta.sub.some(s => s.topic === uidB), `A's contacts: ${j(subsA.meta.sub)}`);

      // Checked last so the messaging checks above report first.
      assert.ok(!(presMsg instanceof Error),
        `B (online on me, not attached) must get {pres topic:"me" src:"${uidA}" what:"msg"}: ${presMsg && presMsg.message}`);
      assert.equal(presMsg.seq, 1, `pres msg seq: ${j(presMsg)}`);
    });
  });
}
