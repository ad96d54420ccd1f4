'use strict';
// Several nodes sharing MariaDB and Redis must behave as one server to real tinode-sdk clients. Runs only when
// PALAVER_URLS names at least two nodes ("host:port,host:port"); scripts/test-all.sh starts them.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { newUser, secondDevice, createGroup, joinTopic, tick } = require('../lib/fixtures');
const { connectClient } = require('../lib/client');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, j } = require('../lib/common');

const NODES = (process.env.PALAVER_URLS || '').split(',').map(s => s.trim()).filter(Boolean);
const skip = NODES.length < 2 ? 'set PALAVER_URLS to two or more nodes to run the multi-node tests' : false;

/** Opens `peer`'s P2P topic on `c` (both sides attached), resolving the Topic. */
async function openP2P(c, peer) {
  const topic = c.tn.getTopic(peer);
  const ctrl = await topic.subscribe(topic.startMetaQuery().withDesc().build());
  assert.equal(ctrl.code, 200, j(ctrl));
  await tick();
  return topic;
}

for (const transport of TRANSPORTS) {
  describe(`multi-node over ${transport}`, { skip }, () => {
    const [n1, n2] = NODES;

    test(`${transport}: a P2P message reaches both devices of the recipient and the sender's other device, on either node`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const alice = await newUser(t, n1, transport, 'mna');
        const bob = await newUser(t, n1, transport, 'mnb');
        const alice2 = await secondDevice(t, n2, transport, alice, 'alice@node2');
        const bob2 = await secondDevice(t, n2, transport, bob, 'bob@node2');
        const [uidA, uidB] = [alice.uid(), bob.uid()];
        const pB = await openP2P(bob, uidA);
        await openP2P(alice, uidB);
        await openP2P(alice2, uidB);
        await openP2P(bob2, uidA);
        const marks = [alice.mark(), alice2.mark(), bob2.mark()];
        const text = `across ${rand(4)}`;
        const ctrl = await bob.publish(pB, text);
        assert.equal(ctrl.code, 202, j(ctrl));
        const seq = ctrl.params.seq;
        const d1 = await alice.waitData(uidB, d => d.seq === seq, { since: marks[0] });
        const d2 = await alice2.waitData(uidB, d => d.seq === seq, { since: marks[1] });
        const d3 = await bob2.waitData(uidA, d => d.seq === seq, { since: marks[2] });
        for (const d of [d1, d2, d3]) assert.equal(d.content, text);
        assert.equal(d3.from, uidB, "the sender's other device sees its own message");
        await new Promise(r => setTimeout(r, 300));
        assert.equal(alice2.dataOn(uidB, marks[1]).filter(d => d.seq === seq).length, 1, 'exactly once per device');
      });

    test(`${transport}: group members on two nodes exchange messages, typing and read receipts`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const owner = await newUser(t, n1, transport, 'mno');
        const member = await newUser(t, n2, transport, 'mnm');
        const grp = await createGroup(owner, `multinode ${rand(3)}`);
        const gM = await joinTopic(member, grp.name);
        const mO = owner.mark();
        const c1 = await member.publish(gM, 'from node 2');
        const got = await owner.waitData(grp.name, d => d.seq === c1.params.seq, { since: mO });
        assert.equal(got.from, member.uid());
        const mM = member.mark();
        const c2 = await owner.publish(grp, 'from node 1');
        await member.waitData(grp.name, d => d.seq === c2.params.seq, { since: mM });
        const mO2 = owner.mark();
        gM.noteKeyPress();
        const kp = await owner.waitInfo(grp.name, i => i.what === 'kp', { since: mO2 });
        assert.equal(kp.from, member.uid());
        gM.noteRead(c2.params.seq);
        const read = await owner.waitInfo(grp.name, i => i.what === 'read', { since: mO2 });
        assert.equal(read.seq, c2.params.seq);
      });

    test(`${transport}: a read on one device clears unread on the user's other device on the other node`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const alice = await newUser(t, n1, transport, 'mnr');
        const bob = await newUser(t, n2, transport, 'mns');
        const alice2 = await secondDevice(t, n2, transport, alice, 'alice-me-only@node2');
        await alice2.subscribeMe();
        const [uidA, uidB] = [alice.uid(), bob.uid()];
        const pA = await openP2P(alice, uidB);
        const pB = await openP2P(bob, uidA);
        const c = await bob.publish(pB, 'unread?');
        await alice.waitData(uidB, d => d.seq === c.params.seq);
        const [m2, mB] = [alice2.mark(), bob.mark()];
        pA.noteRead(c.params.seq);
        const pres = await alice2.waitPres('me', p => p.what === 'read' && p.src === uidB, { since: m2 });
        assert.equal(pres.seq, c.params.seq);
        const info = await bob.waitInfo(uidA, i => i.what === 'read', { since: mB });
        assert.equal(info.seq, c.params.seq, 'the peer sees the read');
      });

    test(`${transport}: contacts on another node see a user come online and go offline`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        if (transport === 'lp') {
          // A long-polling session ends when its poll times out on the server, not when the client goes away.
          t.skip('going offline over long polling waits for the server-side session timeout');
          return;
        }
        const alice = await newUser(t, n1, transport, 'mnp');
        const bob = await newUser(t, n2, transport, 'mnq');
        const [uidA, uidB] = [alice.uid(), bob.uid()];
        await openP2P(alice, uidB);
        await openP2P(bob, uidA);
        await bob.subscribeMe();
        const mB = bob.mark();
        const again = await secondDevice(null, n1, transport, alice, 'alice-again');
        alice.close();
        await again.subscribeMe();
        await bob.waitPres('me', p => p.src === uidA && p.what === 'on', { since: mB });
        const mB2 = bob.mark();
        again.close();
        await bob.waitPres('me', p => p.src === uidA && p.what === 'off', { since: mB2 });
      });

    test(`${transport}: a password change on one node closes the user's sessions on the other and revokes the old token`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const alice = await newUser(t, n1, transport, 'mnw');
        const other = await secondDevice(t, n2, transport, alice, 'alice-other@node2');
        const oldToken = alice.token;
        const mO = other.mark();
        const current = { scheme: 'basic', secret: Buffer.from(`${alice.login}:${alice.password}`).toString('base64') };
        const ctrl = await alice.tn.updateAccountBasic(alice.uid(), alice.login, `new-${alice.password}`, current);
        assert.equal(ctrl.code, 200, j(ctrl));
        const evicted = await other.waitFor(p => p.ctrl && p.ctrl.code === 205, { since: mO, what: 'ctrl 205' });
        assert.equal(evicted.ctrl.params.reason, 'password changed', j(evicted));
        const c = await connectClient(t, n2, { transport, name: 'old-token' });
        await assert.rejects(c.loginToken(oldToken), e => e.code === 401, 'the old token fails on every node');
      });
  });
}
