'use strict';
// Group topics through tinode-sdk: create, join, publish both ways, several devices of one user, noEcho.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, secondDevice, createGroup, joinTopic, GRP_RE } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, sleep, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

for (const transport of TRANSPORTS) {
  describe(`group topics over ${transport}`, () => {
    test(`${transport}: A creates a group via new… + subscribe(set desc, tags) and gets a grp… name`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'owner');
        const tn = a.tn;
        const tmp = tn.newGroupTopicName(false);
        assert.match(tmp, /^new/);
        const topic = tn.getTopic(tmp);
        const fn = `Group ${rand(3)}`;
        const tag = `grptag${rand(4)}`;
        const ctrl = await topic.subscribe(null, { desc: { public: { fn } }, tags: [tag] });
        assert.equal(ctrl.code, 200, `ctrl: ${j(ctrl)}`);
        assert.match(ctrl.topic, GRP_RE, `ctrl.topic: ${j(ctrl)}`);
        assert.equal(topic.name, ctrl.topic, 'SDK renamed the local topic');
        assert.ok(tn.isTopicCached(ctrl.topic), 'topic cached under the real name');
        assert.equal(ctrl.params && ctrl.params.tmpname, tmp, `params.tmpname echoes the new… name: ${j(ctrl)}`);
        const acs = ctrl.params && ctrl.params.acs;
        assert.ok(acs && acs.isOwner && acs.isOwner(), `creator's acs must include O: ${j(ctrl.params)}`);

        // The description and tags were stored.
        const since = a.mark();
        await topic.getMeta(topic.startMetaQuery().withDesc().withTags().build());
        const descPkt = await a.waitFor(p => p.meta && p.meta.topic === topic.name && p.meta.desc,
          { since, what: 'meta desc' });
        assert.deepEqual(descPkt.meta.desc.public, { fn }, `desc.public: ${j(descPkt.meta.desc)}`);
        const tagsPkt = await a.waitFor(p => p.meta && p.meta.topic === topic.name && p.meta.tags,
          { since, what: 'meta tags' });
        assert.ok(tagsPkt.meta.tags.includes(tag), `tags: ${j(tagsPkt.meta.tags)}`);

        // The group shows up in the owner's subscription list on `me`.
        const since2 = a.mark();
        const me = tn.getMeTopic();
        await me.subscribe(me.startMetaQuery().withSub().withDesc().build());
        const subs = await a.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub),
          { since: since2, what: 'meta sub on me' });
        assert.ok(subs.meta.sub.some(s => s.topic === topic.name), `me sub list: ${j(subs.meta.sub)}`);
      });

    test(`${transport}: B joins A's group by name; A→B and B→A messages are delivered`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ga');
        const b = await newUser(t, srv.host, transport, 'gb');
        const grpA = await createGroup(a, 'A and B');
        const name = grpA.name;
        const grpB = await joinTopic(b, name);

        // A publishes; B receives it (and A gets the echo).
        const markA = a.mark();
        const markB = b.mark();
        const text1 = `hello from A ${rand(3)}`;
        const ctrl1 = await a.publish(grpA, text1);
        assert.equal(ctrl1.code, 202, `pub ctrl: ${j(ctrl1)}`);
        assert.ok(Number.isInteger(ctrl1.params.seq) && ctrl1.params.seq >= 1, `params.seq: ${j(ctrl1)}`);
        const d1 = await b.waitData(name, d => d.seq === ctrl1.params.seq, { since: markB });
        assert.equal(d1.from, a.uid(), `data.from: ${j(d1)}`);
        assert.equal(d1.content, text1);
        assert.ok(d1.ts instanceof Date, `data.ts must be an RFC 3339 timestamp: ${j(d1)}`);
        const echo1 = await a.waitData(name, d => d.seq === ctrl1.params.seq, { since: markA });
        assert.equal(echo1.content, text1, 'sender gets its own echo without noecho');

        // B publishes; A receives it.
        const text2 = `reply from B ${rand(3)}`;
        const ctrl2 = await b.publish(grpB, text2);
        assert.equal(ctrl2.code, 202, `pub ctrl: ${j(ctrl2)}`);
        assert.equal(ctrl2.params.seq, ctrl1.params.seq + 1, 'seqs are consecutive');
        const d2 = await a.waitData(name, d => d.seq === ctrl2.params.seq, { since: markA });
        assert.equal(d2.from, b.uid());
        assert.equal(d2.content, text2);

        // A Drafty message (the SDK turns markdown into Drafty) round-trips with head.mime.
        const ctrl3 = await a.publish(grpA, 'some *bold* text');
        const d3 = await b.waitData(name, d => d.seq === ctrl3.params.seq, { since: markB });
        assert.equal(d3.head && d3.head.mime, 'text/x-drafty', `head: ${j(d3)}`);
        assert.equal(d3.content.txt, 'some bold text', `drafty content: ${j(d3.content)}`);
      });

    test(`${transport}: two devices of user C both receive every message`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'ma');
      const c1 = await newUser(t, srv.host, transport, 'mc');
      const c2 = await secondDevice(t, srv.host, transport, c1);
      const grpA = await createGroup(a, 'multi-device');
      const name = grpA.name;
      const grpC1 = await joinTopic(c1, name);
      await joinTopic(c2, name); // the second device attaches too

      const m1 = c1.mark();
      const m2 = c2.mark();
      const mA = a.mark();
      const sent = [];
      for (let i = 0; i < 3; i++) {
        const ctrl = await a.publish(grpA, `A#${i}`);
        sent.push(ctrl.params.seq);
      }
      const ctrlC = await c1.publish(grpC1, 'from C device 1');
      sent.push(ctrlC.params.seq);

      for (const seq of sent) {
        await c1.waitData(name, d => d.seq === seq, { since: m1 });
        await c2.waitData(name, d => d.seq === seq, { since: m2 });
        await a.waitData(name, d => d.seq === seq, { since: mA });
      }
      const fromC = c2.dataOn(name, m2).find(d => d.seq === ctrlC.params.seq);
      assert.equal(fromC.from, c1.uid(), "C's other device sees C's own message with from=C");
      // No duplicates.
      for (const [who, cl, mk] of [['c1', c1, m1], ['c2', c2, m2], ['a', a, mA]]) {
        const got = cl.dataOn(name, mk).map(d => d.seq);
        assert.deepEqual(got, sent, `${who} received each message exactly once, in order: ${j(got)}`);
      }
    });

    test(`${transport}: noEcho skips the sending session only`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'na');
      const c1 = await newUser(t, srv.host, transport, 'nc');
      const c2 = await secondDevice(t, srv.host, transport, c1);
      const grpA = await createGroup(a, 'noecho');
      const name = grpA.name;
      const grpC1 = await joinTopic(c1, name);
      await joinTopic(c2, name);

      const m1 = c1.mark();
      const m2 = c2.mark();
      const mA = a.mark();
      const ctrl = await c1.publish(grpC1, 'quiet please', true);
      assert.equal(ctrl.code, 202, j(ctrl));
      const seq = ctrl.params.seq;
      await c2.waitData(name, d => d.seq === seq, { since: m2 });
      await a.waitData(name, d => d.seq === seq, { since: mA });
      // Then a normal message from A: once C1 has that, the server has had every chance to send the echo.
      const ctrlA = await a.publish(grpA, 'normal');
      await c1.waitData(name, d => d.seq === ctrlA.params.seq, { since: m1 });
      await sleep(300);
      const echoes = c1.dataOn(name, m1).filter(d => d.seq === seq);
      assert.equal(echoes.length, 0, `the sending session must not get its own echo with noecho: ${j(echoes)}`);
      // The message is still stored: C1 sees it in history.
      const m3 = c1.mark();
      await grpC1.getMeta(grpC1.startMetaQuery().withData(seq, seq + 1, 10).build());
      const hist = c1.dataOn(name, m3);
      assert.ok(hist.some(d => d.seq === seq && d.content === 'quiet please'), `history: ${j(hist)}`);
    });

    test(`${transport}: concurrent publishers get unique gap-free seqs, delivered to everyone in seq order`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const PER = 25;
        const a = await newUser(t, srv.host, transport, 'ca');
        const grpA = await createGroup(a, 'concurrent');
        const name = grpA.name;
        const others = [];
        for (const p of ['cb', 'cc']) others.push(await newUser(t, srv.host, transport, p));
        const topics = [grpA];
        for (const o of others) topics.push(await joinTopic(o, name));
        const clients = [a, ...others];
        const marks = clients.map(c => c.mark());
        // Everyone fires PER messages at once, without waiting for the replies.
        const sends = [];
        clients.forEach((c, ci) => {
          for (let i = 0; i < PER; i++) {
            const pub = c.tn.createMessage(name, `c${ci}-${i}`, false);
            sends.push(c.tn.publishMessage(pub));
          }
        });
        const ctrls = await Promise.all(sends);
        const seqs = ctrls.map(c => c.params.seq).sort((x, y) => x - y);
        const total = PER * clients.length;
        assert.deepEqual(seqs, Array.from({ length: total }, (_, i) => i + 1), `unique, gap-free seqs: ${j(seqs)}`);
        for (let ci = 0; ci < clients.length; ci++) {
          await clients[ci].waitData(name, d => d.seq === total, { since: marks[ci] });
          await sleep(100);
          const got = clients[ci].dataOn(name, marks[ci]).map(d => d.seq);
          assert.deepEqual(got, seqs, `${clients[ci].name} received all ${total} once, in seq order: ${j(got)}`);
        }
      });
  });
}
