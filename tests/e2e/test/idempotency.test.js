'use strict';
// Idempotent publish (Palaver extension): a {pub} with the same client_mid from the same user on the same topic
// is stored once; a retry gets the same seq.
//
// tinode-sdk can send it: createMessage() returns the {pub} body and publishMessage() copies every field it has
// (only `_`-prefixed and empty ones are dropped), so `pub.client_mid = "…"` goes on the wire.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, createGroup, joinTopic } = require('../lib/fixtures');
const { openRaw } = require('../lib/raw');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, sleep, uniqueLogin, uniquePassword, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

async function history(c, topic) {
  const mark = c.mark();
  await topic.getMeta(topic.startMetaQuery().withData(undefined, undefined, 100).build());
  return c.dataOn(topic.name, mark);
}

for (const transport of TRANSPORTS) {
  describe(`idempotent publish via tinode-sdk over ${transport}`, () => {
    test(`${transport}: the same client_mid twice returns the same seq and stores one message`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ia');
        const b = await newUser(t, srv.host, transport, 'ib');
        const grp = await createGroup(a, 'idempotent');
        await joinTopic(b, grp.name);
        const mid = `m-${rand(6)}`;

        const first = grp.createMessage('only once', false);
        first.client_mid = mid;
        const mB = b.mark();
        const c1 = await a.tn.publishMessage(first);
        assert.equal(c1.code, 202, j(c1));
        const seq = c1.params.seq;

        const retry = grp.createMessage('only once', false); // a fresh request id, the same client_mid
        retry.client_mid = mid;
        assert.notEqual(retry.id, first.id);
        const c2 = await a.tn.publishMessage(retry);
        assert.ok(c2.code >= 200 && c2.code < 300, `retry must succeed: ${j(c2)}`);
        assert.equal(c2.params && c2.params.seq, seq, `retry returns the original seq: ${j(c2)}`);

        // A different client_mid is a new message.
        const other = grp.createMessage('another', false);
        other.client_mid = `m-${rand(6)}`;
        const c3 = await a.tn.publishMessage(other);
        assert.equal(c3.params.seq, seq + 1, `new client_mid, new seq: ${j(c3)}`);

        // B got the message once, then the other one.
        await b.waitData(grp.name, d => d.seq === seq + 1, { since: mB });
        await sleep(200);
        const live = b.dataOn(grp.name, mB).map(d => d.seq);
        assert.deepEqual(live, [seq, seq + 1], `subscribers get one {data} per distinct message: ${j(live)}`);

        const hist = await history(a, grp);
        const copies = hist.filter(d => d.content === 'only once');
        assert.equal(copies.length, 1, `stored once: ${j(hist)}`);
        assert.equal(copies[0].seq, seq);

        // The same client_mid from another user is that user's own message.
        const fromB = b.tn.createMessage(grp.name, 'same mid, other user', false);
        fromB.client_mid = mid;
        const c4 = await b.tn.publishMessage(fromB);
        assert.equal(c4.params.seq, seq + 2, `client_mid is scoped per sender: ${j(c4)}`);
      });
  });
}

describe('idempotent publish over raw WebSocket JSON', () => {
  test('{pub client_mid} twice → ctrl 202 with the same params.seq', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host, { name: 'raw-idem' });
    const hi = await r.hi();
    assert.equal(hi.code, 201, `hi over WS: ctrl 201: ${j(hi)}`);
    const login = uniqueLogin('raw');
    const acc = await r.signUp(login, uniquePassword());
    assert.equal(acc.code, 200, j(acc));

    const sub = await r.request('sub', { topic: 'new', set: { desc: { public: { fn: 'raw idem' } } } });
    assert.equal(sub.code, 200, j(sub));
    const topic = sub.topic;
    assert.match(topic, /^grp/, j(sub));

    const since = r.mark();
    const p1 = await r.request('pub', { id: '5', topic, content: 'x', client_mid: 'm1' });
    assert.equal(p1.code, 202, j(p1));
    assert.equal(p1.topic, topic, `pub ctrl carries the topic: ${j(p1)}`);
    const seq = p1.params.seq;
    assert.ok(seq >= 1, j(p1));
    const p2 = await r.request('pub', { id: '6', topic, content: 'x', client_mid: 'm1' });
    assert.equal(p2.id, '6');
    assert.ok(p2.code >= 200 && p2.code < 300, j(p2));
    assert.equal(p2.params && p2.params.seq, seq, `same client_mid → same seq: ${j(p2)}`);
    const p3 = await r.request('pub', { id: '7', topic, content: 'y', client_mid: 'm2' });
    assert.equal(p3.params.seq, seq + 1, j(p3));
    // Without client_mid every pub is new.
    const p4 = await r.request('pub', { id: '8', topic, content: 'x' });
    const p5 = await r.request('pub', { id: '9', topic, content: 'x' });
    assert.equal(p5.params.seq, p4.params.seq + 1, 'no client_mid, no dedup');

    // Echoes: one {data} per stored message.
    await r.waitFor(p => p.data && p.data.seq === p5.params.seq, { since, what: 'data echo of the last pub' });
    await sleep(200);
    const seqs = r.received(p => p.data && p.data.topic === topic, since).map(p => p.data.seq);
    assert.deepEqual(seqs, [seq, seq + 1, p4.params.seq, p5.params.seq], `echoes: ${j(seqs)}`);

    // A pub without an id gets no ctrl at all (Tinode answers pub only when id is set), but is stored.
    const before = r.mark();
    r.send({ pub: { topic, content: 'no id' } });
    const d = await r.waitFor(p => p.data && p.data.content === 'no id', { since: before, what: 'echo of the id-less pub' });
    assert.equal(d.data.seq, p5.params.seq + 1);
    await sleep(300);
    const ctrls = r.received(p => p.ctrl, before);
    assert.equal(ctrls.length, 0, `no ctrl for a pub without id: ${j(ctrls)}`);
  });
});
