'use strict';
// Message history paging: 30 messages, read back by a fresh client in pages of 10.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, createGroup, joinTopic, tick } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

const N = 30;
const PAGE = 10;

/** Sends one {get what:"data"} and returns the {data} packets and the closing ctrl, in wire order. */
async function fetchPage(c, topic, since, before, limit) {
  const mark = c.mark();
  const q = topic.startMetaQuery().withData(since, before, limit).build();
  const ctrl = await topic.getMeta(q);
  const data = c.dataOn(topic.name, mark);
  return { ctrl, data };
}

for (const transport of TRANSPORTS) {
  describe(`history over ${transport}`, () => {
    test(`${transport}: ${N} messages come back in pages of ${PAGE}, newest first, seqs 1..${N} without gaps`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ha');
        const grp = await createGroup(a, 'history');
        const sent = [];
        for (let i = 1; i <= N; i++) {
          const ctrl = await a.publish(grp, `message ${i}`);
          sent.push(ctrl.params.seq);
        }
        assert.deepEqual(sent, Array.from({ length: N }, (_, i) => i + 1), `pub seqs: ${j(sent)}`);

        // A fresh client (user B) joins without data and pages backwards.
        const b = await newUser(t, srv.host, transport, 'hb');
        const topic = await joinTopic(b, grp.name);
        assert.equal(topic.seq, N, `desc.seq on join must be the last seq: ${topic.seq}`);

        const all = [];
        let before; // undefined: newest page first
        for (let page = 0; page < N / PAGE; page++) {
          const { ctrl, data } = await fetchPage(b, topic, undefined, before, PAGE);
          assert.equal(ctrl.code, 208, `page ${page}: a non-empty get data ends with ctrl 208: ${j(ctrl)}`);
          assert.equal(ctrl.params && ctrl.params.what, 'data', `ctrl.params.what: ${j(ctrl)}`);
          assert.equal(ctrl.params && ctrl.params.count, PAGE, `ctrl.params.count: ${j(ctrl)}`);
          const seqs = data.map(d => d.seq);
          const hi = N - page * PAGE;
          const expected = Array.from({ length: PAGE }, (_, i) => hi - i);
          assert.deepEqual(seqs, expected, `page ${page}: newest first (seq DESC): ${j(seqs)}`);
          for (const d of data) {
            assert.equal(d.content, `message ${d.seq}`, `content of seq ${d.seq}`);
            assert.equal(d.from, a.uid());
            assert.ok(d.ts instanceof Date, `ts of seq ${d.seq}: ${j(d)}`);
          }
          all.push(...data);
          before = Math.min(...seqs);
        }
        // Past the oldest message: empty, ctrl 204 with params.what = "data".
        const { ctrl: last, data: none } = await fetchPage(b, topic, undefined, before, PAGE);
        assert.equal(none.length, 0, `nothing before seq 1: ${j(none)}`);
        assert.equal(last.code, 204, `empty get data: ctrl 204: ${j(last)}`);
        assert.equal(last.params && last.params.what, 'data', `ctrl 204 params.what: ${j(last)}`);

        const seqs = all.map(d => d.seq).sort((x, y) => x - y);
        assert.deepEqual(seqs, Array.from({ length: N }, (_, i) => i + 1), 'all 30, no gaps, no duplicates');

        // The SDK's own cache has all of them in order (it routes {data} with setTimeout(0): let it run).
        await tick(20);
        const cached = [];
        topic.messages(m => cached.push(m.seq));
        assert.deepEqual(cached, seqs);

        // since/before window: since inclusive, before exclusive.
        const { data: win } = await fetchPage(b, topic, 5, 9, 100);
        assert.deepEqual(win.map(d => d.seq), [8, 7, 6, 5], `since=5 before=9: ${j(win.map(d => d.seq))}`);
        // since only, with a limit: the newest `limit` at or after `since`.
        const { data: lim } = await fetchPage(b, topic, 20, undefined, 3);
        assert.deepEqual(lim.map(d => d.seq), [30, 29, 28], `since=20 limit=3: ${j(lim.map(d => d.seq))}`);
      });

    test(`${transport}: subscribe with withLaterData(24) delivers the latest 24 then ctrl 208`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'la');
        const grp = await createGroup(a, 'later data');
        for (let i = 1; i <= N; i++) await a.publish(grp, `m${i}`);
        const b = await newUser(t, srv.host, transport, 'lb');
        const topic = b.tn.getTopic(grp.name);
        const mark = b.mark();
        const ctrl = await topic.subscribe(topic.startMetaQuery().withLaterData(24).withLaterDesc().withLaterSub().build());
        assert.equal(ctrl.code, 200, j(ctrl));
        const end = await b.waitFor(p => p.ctrl && p.ctrl.topic === grp.name && p.ctrl.code === 208,
          { since: mark, what: 'ctrl 208 after the sub data' });
        assert.equal(end.ctrl.params.what, 'data', j(end));
        const seqs = b.dataOn(grp.name, mark).map(d => d.seq);
        assert.deepEqual(seqs, Array.from({ length: 24 }, (_, i) => N - i), `latest 24, newest first: ${j(seqs)}`);
        // The ctrl for the sub itself comes before its data.
        const idxCtrl = b.packets.findIndex((p, i) => i >= mark && p.ctrl && p.ctrl.id && p.ctrl.code === 200);
        const idxData = b.packets.findIndex((p, i) => i >= mark && p.data);
        assert.ok(idxCtrl >= 0 && idxCtrl < idxData, 'the sub ctrl precedes the data');
      });

    test(`${transport}: {get data:{ranges}} returns exactly the seqs in the ranges`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'ra');
      const grp = await createGroup(a, 'ranges');
      for (let i = 1; i <= N; i++) await a.publish(grp, `r${i}`);
      await a.waitData(grp.name, d => d.seq === N); // the last echo, so it is not mistaken for a reply below
      // tinode-sdk: withDataRanges() / withDataList() build {data:{ranges:[…]}}.
      const mark = a.mark();
      const ctrl = await grp.getMeta(grp.startMetaQuery().withDataRanges([{ low: 5, hi: 8 }, { low: 20 }]).build());
      assert.ok(ctrl.code === 208, j(ctrl));
      const seqs = a.dataOn(grp.name, mark).map(d => d.seq).sort((x, y) => x - y);
      assert.deepEqual(seqs, [5, 6, 7, 20], `ranges [5,8) and 20: ${j(seqs)}`);
      const mark2 = a.mark();
      await grp.getMeta(grp.startMetaQuery().withDataList([2, 3, 29]).build());
      const seqs2 = a.dataOn(grp.name, mark2).map(d => d.seq).sort((x, y) => x - y);
      assert.deepEqual(seqs2, [2, 3, 29], `withDataList([2,3,29]): ${j(seqs2)}`);
    });

    test(`${transport}: topic.getMessagesPage() scrolls back through the whole history`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'sa');
        const grp = await createGroup(a, 'scroll back');
        for (let i = 1; i <= N; i++) await a.publish(grp, `s${i}`);
        const b = await newUser(t, srv.host, transport, 'sb');
        const topic = await joinTopic(b, grp.name); // desc only: topic.seq = 30, empty cache
        const cached = () => { const c = []; topic.messages(m => c.push(m.seq)); return c; };
        for (let page = 1; page <= N / PAGE; page++) {
          // Load the page older than the oldest cached message (the SDK works out the gap and asks for its range).
          const max = topic.minMsgSeq() > 0 ? topic.minMsgSeq() : topic.seq + 1;
          await topic.getMessagesPage(PAGE, undefined, undefined, max, false);
          await tick(20);
          const got = cached();
          const expected = Array.from({ length: page * PAGE }, (_, i) => N - page * PAGE + 1 + i);
          assert.deepEqual(got, expected, `after page ${page} the SDK cache holds ${expected[0]}..${N}: ${j(got)}`);
        }
      });
  });
}
