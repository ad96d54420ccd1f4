'use strict';
// Read receipts: {note what:"read"} is forwarded as {info} and persisted on the subscription.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { newUser, secondDevice, createGroup, joinTopic } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, sleep, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

for (const transport of TRANSPORTS) {
  describe(`read receipts over ${transport}`, () => {
    test(`${transport}: B's noteRead(seq) reaches A and B's other device as {info what:"read"}, and is persisted`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ra');
        const b1 = await newUser(t, srv.host, transport, 'rb');
        const b2 = await secondDevice(t, srv.host, transport, b1);
        const grpA = await createGroup(a, 'receipts');
        const name = grpA.name;
        const grpB1 = await joinTopic(b1, name);
        await joinTopic(b2, name);

        const mB1 = b1.mark();
        const mB2 = b2.mark();
        let last = 0;
        for (let i = 0; i < 3; i++) last = (await a.publish(grpA, `r${i}`)).params.seq;
        await b1.waitData(name, d => d.seq === last, { since: mB1 });
        await b2.waitData(name, d => d.seq === last, { since: mB2 });

        // The SDK sends {note what:"recv"} by itself ~100 ms after new data; A sees it as info recv.
        const mA = a.mark();
        const mB2b = b2.mark();
        grpB1.noteRead(last);
        const infoA = await a.waitInfo(name, i => i.what === 'read' && i.from === b1.uid(), { since: mA });
        assert.equal(infoA.seq, last, `A's info: ${j(infoA)}`);
        assert.equal(infoA.topic, name);
        const infoB2 = await b2.waitInfo(name, i => i.what === 'read' && i.from === b1.uid(), { since: mB2b });
        assert.equal(infoB2.seq, last, `B's other device's info: ${j(infoB2)}`);

        // Persisted: a new session of B reads read=last from its `me` subscription list and from the topic desc.
        b1.close();
        b2.close();
        await sleep(200);
        const b3 = await connectClient(t, srv.host, { transport, name: 'rb#3' });
        await b3.loginToken(b1.token);
        const mB3 = b3.mark();
        const me = b3.tn.getMeTopic();
        await me.subscribe(me.startMetaQuery().withSub().withDesc().build());
        const subs = await b3.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub),
          { since: mB3, what: "meta sub on me" });
        const entry = subs.meta.sub.find(s => s.topic === name);
        assert.ok(entry, `me sub list has the group: ${j(subs.meta.sub)}`);
        assert.equal(entry.read, last, `me sub entry read: ${j(entry)}`);
        assert.ok(entry.recv >= last, `recv >= read: ${j(entry)}`);
        assert.equal(entry.seq, last, `me sub entry seq: ${j(entry)}`);

        const topic = b3.tn.getTopic(name);
        const mB3b = b3.mark();
        await topic.subscribe(topic.startMetaQuery().withDesc().build());
        const desc = await b3.waitFor(p => p.meta && p.meta.topic === name && p.meta.desc,
          { since: mB3b, what: 'meta desc' });
        assert.equal(desc.meta.desc.read, last, `topic desc read: ${j(desc.meta.desc)}`);
        assert.equal(desc.meta.desc.seq, last, `topic desc seq: ${j(desc.meta.desc)}`);
      });

    test(`${transport}: a read receipt never goes backwards`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'ma');
      const b = await newUser(t, srv.host, transport, 'mb');
      const grpA = await createGroup(a, 'monotonic');
      const grpB = await joinTopic(b, grpA.name);
      for (let i = 0; i < 4; i++) await a.publish(grpA, `x${i}`);
      await b.waitData(grpA.name, d => d.seq === 4);
      // Bypass the SDK's local monotonic check: send the notes directly.
      b.tn.note(grpA.name, 'read', 3);
      await a.waitInfo(grpA.name, i => i.what === 'read' && i.seq === 3 && i.from === b.uid());
      b.tn.note(grpA.name, 'read', 2);
      await sleep(500);
      const b2 = await connectClient(t, srv.host, { transport, name: 'mb#2' });
      await b2.loginToken(b.token);
      const mk = b2.mark();
      const topic = b2.tn.getTopic(grpA.name);
      await topic.subscribe(topic.startMetaQuery().withDesc().build());
      const desc = await b2.waitFor(p => p.meta && p.meta.topic === grpA.name && p.meta.desc,
        { since: mk, what: 'meta desc' });
      assert.equal(desc.meta.desc.read, 3, `read stays at 3 after a note read=2: ${j(desc.meta.desc)}`);
      assert.ok(grpB.isSubscribed());
    });
  });
}
