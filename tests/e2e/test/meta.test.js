'use strict';
// Topic management through tinode-sdk: deleting messages (hard and soft), leaving, unsubscribing, renaming,
// deleting a topic, typing notifications, and P2P presence.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { newUser, secondDevice, createGroup, joinTopic, tick } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, sleep, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

/** All messages of an attached topic, via one {get what:"data"}, oldest first. */
async function history(c, topic) {
  const mark = c.mark();
  await topic.getMeta(topic.startMetaQuery().withData(undefined, undefined, 100).build());
  return c.dataOn(topic.name, mark).sort((x, y) => x.seq - y.seq);
}

for (const transport of TRANSPORTS) {
  describe(`topic management over ${transport}`, () => {
    test(`${transport}: the owner hard-deletes messages for everyone; attached members get {pres what:"del"}`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'da');
        const b = await newUser(t, srv.host, transport, 'db');
        const grpA = await createGroup(a, 'hard delete');
        const grpB = await joinTopic(b, grpA.name);
        for (let i = 1; i <= 5; i++) await a.publish(grpA, `d${i}`);
        await b.waitData(grpA.name, d => d.seq === 5);
        await a.waitData(grpA.name, d => d.seq === 5); // own echo, so it cannot be mistaken for history below
        await tick();

        const mB = b.mark();
        const ctrl = await grpA.delMessages([{ low: 1, hi: 3 }], true);
        assert.equal(ctrl.code, 200, j(ctrl));
        assert.ok(Number.isInteger(ctrl.params && ctrl.params.del) && ctrl.params.del >= 1, `params.del: ${j(ctrl)}`);
        const pres = await b.waitPres(grpA.name, p => p.what === 'del', { since: mB });
        assert.equal(pres.clear, ctrl.params.del, `pres del clear = the new del id: ${j(pres)}`);
        assert.deepEqual(pres.delseq, [{ low: 1, hi: 3 }], `pres del delseq: ${j(pres)}`);

        // Neither the owner nor the member gets seq 1 and 2 back.
        assert.deepEqual((await history(a, grpA)).map(d => d.seq), [3, 4, 5], 'owner history after hard delete');
        assert.deepEqual((await history(b, grpB)).map(d => d.seq), [3, 4, 5], 'member history after hard delete');

        // {get what:"del"} reports the deletion.
        const mk = b.mark();
        await grpB.getMeta(grpB.startMetaQuery().withDel(1, 10).build());
        const del = await b.waitFor(p => p.meta && p.meta.topic === grpA.name && p.meta.del,
          { since: mk, what: 'meta del' });
        assert.equal(del.meta.del.clear, ctrl.params.del, j(del.meta));
        assert.deepEqual(del.meta.del.delseq, [{ low: 1, hi: 3 }], j(del.meta));
      });

    test(`${transport}: a member's soft delete hides messages only for that member`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'sa');
        const b = await newUser(t, srv.host, transport, 'sb');
        const b2 = await secondDevice(t, srv.host, transport, b);
        const grpA = await createGroup(a, 'soft delete');
        const grpB = await joinTopic(b, grpA.name);
        await joinTopic(b2, grpA.name);
        for (let i = 1; i <= 3; i++) await a.publish(grpA, `s${i}`);
        await b.waitData(grpA.name, d => d.seq === 3);
        await a.waitData(grpA.name, d => d.seq === 3);
        await tick();

        const mA = a.mark();
        const mB2 = b2.mark();
        const ctrl = await grpB.delMessages([{ low: 2 }], false);
        assert.equal(ctrl.code, 200, j(ctrl));
        // B's other device is told; A is not.
        const pres = await b2.waitPres(grpA.name, p => p.what === 'del', { since: mB2 });
        assert.deepEqual(pres.delseq, [{ low: 2 }], j(pres));
        assert.deepEqual((await history(b, grpB)).map(d => d.seq), [1, 3], 'B no longer sees seq 2');
        assert.deepEqual((await history(a, grpA)).map(d => d.seq), [1, 2, 3], 'A still sees seq 2');
        await sleep(200);
        assert.equal(a.received(p => p.pres && p.pres.what === 'del', mA).length, 0, 'A got no pres del');
      });

    test(`${transport}: leave keeps the subscription; leave(unsub) drops it`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'la');
      const b = await newUser(t, srv.host, transport, 'lb');
      const grpA = await createGroup(a, 'leave');
      const name = grpA.name;
      const grpB = await joinTopic(b, name);

      // Plain leave: detached, still subscribed; a pub from B is refused until it attaches again.
      const l1 = await grpB.leave(false);
      assert.equal(l1.code, 200, j(l1));
      assert.ok(!grpB.isSubscribed());
      await assert.rejects(b.tn.publish(name, 'while detached', false), e => e.code === 409);
      const mB = b.mark();
      await b.subscribeMe();
      const subs = await b.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub),
        { since: mB, what: 'meta sub on me' });
      assert.ok(subs.meta.sub.some(s => s.topic === name), `still subscribed after leave: ${j(subs.meta.sub)}`);

      // While B is detached but on `me`, A's message reaches B as {pres what:"msg"} on me.
      const mB2 = b.mark();
      const c = await a.publish(grpA, 'to the absent');
      const pm = await b.waitPres('me', p => p.src === name && p.what === 'msg', { since: mB2 });
      assert.equal(pm.seq, c.params.seq, j(pm));
      assert.equal(b.received(p => p.data && p.data.topic === name, mB2).length, 0, 'no data while detached');

      // Re-attach, then unsubscribe.
      await joinTopic(b, name);
      const l2 = await grpB.leave(true);
      assert.equal(l2.code, 200, j(l2));
      const b2 = await connectClient(t, srv.host, { transport, name: 'lb#2' });
      await b2.loginToken(b.token);
      const mB3 = b2.mark();
      await b2.subscribeMe();
      const subs2 = await b2.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub) ||
        p.ctrl && p.ctrl.code === 204 && p.ctrl.params && p.ctrl.params.what === 'sub', { since: mB3, what: 'me subs' });
      const list = subs2.meta ? subs2.meta.sub.filter(s => !s.deleted) : [];
      assert.ok(!list.some(s => s.topic === name), `gone from me after leave(unsub): ${j(list)}`);
      // The owner sees B gone from the member list.
      const mA = a.mark();
      await grpA.getMeta(grpA.startMetaQuery().withSub().build());
      const members = await a.waitFor(p => p.meta && p.meta.topic === name && Array.isArray(p.meta.sub),
        { since: mA, what: 'meta sub' });
      assert.ok(!members.meta.sub.some(s => s.user === b.uid() && !s.deleted), `members: ${j(members.meta.sub)}`);
    });

    test(`${transport}: renaming a group tells members on me ({pres what:"upd"}) and the new desc is served`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ua');
        const b = await newUser(t, srv.host, transport, 'ub');
        const grpA = await createGroup(a, 'before');
        const name = grpA.name;
        const grpB = await joinTopic(b, name);
        await grpB.leave(false);
        await b.subscribeMe();
        const mB = b.mark();
        const fn = `after ${rand(3)}`;
        const ctrl = await grpA.setMeta({ desc: { public: { fn } } });
        assert.equal(ctrl.code, 200, j(ctrl));
        await b.waitPres('me', p => p.src === name && p.what === 'upd', { since: mB });
        const mUpd = b.mark();
        // The SDK reacts to pres upd with {get what:"sub" topic:"me" sub:{topic:name}}; the answer has the new name.
        // An answer to the earlier {sub me} may still be on its way with the old name (the subscribe resolves on
        // its ctrl, before its meta), so wait for the one that carries the new name rather than the next one.
        const upd = await b.waitFor(p => p.meta && p.meta.topic === 'me' && Array.isArray(p.meta.sub) &&
          p.meta.sub.some(s => s.topic === name && s.public && s.public.fn === fn),
        { since: mUpd, what: 'meta sub on me with the renamed group' });
        const s = upd.meta.sub.find(x => x.topic === name);
        assert.deepEqual(s.public, { fn }, j(s));
        const mB2 = b.mark();
        const topic = b.tn.getTopic(name);
        await topic.subscribe(topic.startMetaQuery().withDesc().build());
        const desc = await b.waitFor(p => p.meta && p.meta.topic === name && p.meta.desc, { since: mB2, what: 'desc' });
        assert.deepEqual(desc.meta.desc.public, { fn }, j(desc.meta.desc));
      });

    test(`${transport}: typing notifications reach the other members as {info what:"kp"}`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ka');
        const b = await newUser(t, srv.host, transport, 'kb');
        const grpA = await createGroup(a, 'typing');
        const grpB = await joinTopic(b, grpA.name);
        const mA = a.mark();
        const mB = b.mark();
        grpB.noteKeyPress();
        const info = await a.waitInfo(grpA.name, i => i.what === 'kp', { since: mA });
        assert.equal(info.from, b.uid(), j(info));
        await sleep(200);
        assert.equal(b.received(p => p.info && p.info.what === 'kp', mB).length, 0, 'the typist does not get it back');
      });

    test(`${transport}: the owner deletes the group; members get {pres what:"gone"} and it is 404 afterwards`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'xa');
        const b = await newUser(t, srv.host, transport, 'xb');
        const grpA = await createGroup(a, 'doomed');
        const name = grpA.name;
        const grpB = await joinTopic(b, name);
        await a.publish(grpA, 'last words');
        await grpB.leave(false);
        await b.subscribeMe();
        const mB = b.mark();
        const ctrl = await grpA.delTopic(true);
        assert.equal(ctrl.code, 200, j(ctrl));
        await b.waitPres('me', p => p.src === name && p.what === 'gone', { since: mB });
        const c = await connectClient(t, srv.host, { transport, name: 'xb#2' });
        await c.loginToken(b.token);
        await assert.rejects(c.tn.subscribe(name), e => {
          assert.equal(e.code, 404, `sub to a deleted topic: ${e.code} ${e.message}`);
          return true;
        });
      });

    test(`${transport}: a P2P contact coming online and going offline is announced on me`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'oa');
        const b = await newUser(t, srv.host, transport, 'ob');
        const uidA = a.uid();
        const p = a.tn.getTopic(b.uid());
        await p.subscribe();
        await a.publish(p, 'hello');
        a.close();
        await b.subscribeMe();
        await sleep(300);
        const mB = b.mark();
        const a2 = await connectClient(t, srv.host, { transport, name: 'oa#2' });
        await a2.loginToken(a.token);
        await a2.subscribeMe();
        const on = await b.waitPres('me', x => x.src === uidA && x.what === 'on', { since: mB });
        assert.ok(on);
        // Over long polling the server only notices a vanished client when its LP session times out.
        if (transport !== 'ws') return;
        const mB2 = b.mark();
        a2.close();
        const off = await b.waitPres('me', x => x.src === uidA && x.what === 'off', { since: mB2, timeout: 15000 });
        assert.ok(off);
      });

    test(`${transport}: the owner invites a user; the invitee hears of it on me and can then join`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ia');
        const b = await newUser(t, srv.host, transport, 'ib');
        const grpA = await createGroup(a, 'invitation');
        const name = grpA.name;
        await b.subscribeMe();
        const mB = b.mark();
        const ctrl = await grpA.invite(b.uid(), 'JRWP');
        assert.equal(ctrl.code, 200, j(ctrl));
        const pres = await b.waitPres('me', p => p.src === name && p.what === 'acs', { since: mB });
        assert.ok(pres.dacs && /J/.test(pres.dacs.given || ''), `pres acs dacs.given has J: ${j(pres)}`);
        // The owner sees the invitee in the member list.
        const mA = a.mark();
        await grpA.getMeta(grpA.startMetaQuery().withSub().build());
        const members = await a.waitFor(p => p.meta && p.meta.topic === name && Array.isArray(p.meta.sub),
          { since: mA, what: 'meta sub' });
        assert.ok(members.meta.sub.some(s => s.user === b.uid()), `invitee listed: ${j(members.meta.sub)}`);
        // The invitee joins and talks.
        const grpB = await joinTopic(b, name);
        const mA2 = a.mark();
        const c = await b.publish(grpB, 'thanks for the invite');
        const d = await a.waitData(name, x => x.seq === c.params.seq, { since: mA2 });
        assert.equal(d.from, b.uid());
      });

    test(`${transport}: a profile change is announced to P2P contacts ({pres what:"upd"} on me)`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'pa', { public: { fn: 'Old A' } });
        const b = await newUser(t, srv.host, transport, 'pb');
        const uidA = a.uid();
        const p = a.tn.getTopic(b.uid());
        await p.subscribe();
        await a.publish(p, 'hi');
        await b.subscribeMe();
        await tick(50);
        const mB = b.mark();
        const me = await a.subscribeMe();
        const ctrl = await me.setMeta({ desc: { public: { fn: 'New A' } } });
        assert.equal(ctrl.code, 200, j(ctrl));
        await b.waitPres('me', x => x.src === uidA && x.what === 'upd', { since: mB });
        const mUpd = b.mark();
        const upd = await b.waitFor(x => x.meta && x.meta.topic === 'me' && Array.isArray(x.meta.sub) &&
          x.meta.sub.some(s => s.topic === uidA), { since: mUpd, what: 'meta sub on me (the SDK fetches it after pres upd)' });
        const entry = upd.meta.sub.find(s => s.topic === uidA);
        assert.deepEqual(entry.public, { fn: 'New A' }, `the contact's new public: ${j(entry)}`);
        assert.ok(upd);
      });

    test(`${transport}: tags set on me are stored and searchable`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'ta');
      const me = await a.subscribeMe();
      const tag = `metag${rand(4)}`;
      const ctrl = await me.setMeta({ tags: [tag] });
      assert.equal(ctrl.code, 200, j(ctrl));
      const mA = a.mark();
      await me.getMeta(me.startMetaQuery().withTags().build());
      const tags = await a.waitFor(x => x.meta && x.meta.topic === 'me' && x.meta.tags, { since: mA, what: 'meta tags' });
      assert.ok(tags.meta.tags.includes(tag), j(tags.meta));
      const b = await newUser(t, srv.host, transport, 'tb');
      const fnd = b.tn.getFndTopic();
      await fnd.subscribe();
      await fnd.setMeta({ desc: { public: tag } });
      const res = await fnd.getMeta(fnd.startMetaQuery().withSub().build());
      const subs = (res && res.sub) || [];
      assert.ok(subs.some(s => s.user === a.uid() || s.topic === a.uid()), `found by the new tag: ${j(res)}`);
    });

    test(`${transport}: the owner removes a member: the member is evicted (ctrl 205) and told on me`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ea');
        const b = await newUser(t, srv.host, transport, 'eb');
        const grpA = await createGroup(a, 'eviction');
        const name = grpA.name;
        await joinTopic(a, name).catch(() => {}); // already attached; loads the member list
        const grpB = await joinTopic(b, name);
        await b.subscribeMe();
        await tick(50);
        const mB = b.mark();
        const ctrl = await grpA.delSubscription(b.uid());
        assert.equal(ctrl.code, 200, j(ctrl));
        await b.waitPres('me', p => p.src === name && p.what === 'gone', { since: mB });
        // The removed member must not receive the group's messages any more.
        const after = await a.publish(grpA, 'after the removal');
        await sleep(500);
        const leaked = b.received(p => p.data && p.data.topic === name && p.data.seq === after.params.seq, mB);
        assert.equal(leaked.length, 0, `a removed member still receives {data}: ${j(leaked)}`);
        const ev = await b.waitFor(p => p.ctrl && p.ctrl.code === 205 && p.ctrl.topic === name,
          { since: mB, timeout: 2000, what: `ctrl 205 "evicted" on ${name}` });
        assert.equal(ev.ctrl.text, 'evicted', `the SDK only reacts to text "evicted": ${j(ev)}`);
        assert.ok(ev.ctrl.params && ev.ctrl.params.unsub === true, `params.unsub: ${j(ev)}`);
        await tick();
        assert.ok(!grpB.isSubscribed(), 'the SDK marks the topic detached');
        await assert.rejects(b.tn.publish(name, 'still here?', false), e => e.code === 409 || e.code === 403);
      });

    test(`${transport}: a stranger gets a limited desc; unknown topics and users are 404`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'na');
        const grpA = await createGroup(a, 'public face');
        await a.publish(grpA, 'members only');
        const c = await newUser(t, srv.host, transport, 'nc');
        // A non-member cannot read the messages without joining.
        const mk = c.mark();
        const dataRes = await c.tn.getMeta(grpA.name, { what: 'data' }).catch(e => e);
        await sleep(200);
        assert.equal(c.dataOn(grpA.name, mk).length, 0, `no data for a non-member: ${j(dataRes)}`);
        // 404s.
        await assert.rejects(c.tn.subscribe('grpAAAAAAAAAAA'), e => {
          assert.equal(e.code, 404, `sub to an unknown group: ${e.message}`);
          return true;
        });
        await assert.rejects(c.tn.subscribe('usrAAAAAAAAAAA'), e => {
          assert.equal(e.code, 404, `sub to an unknown user: ${e.message}`);
          return true;
        });
        // Tinode gives a stranger created/updated/public/trusted only: no acs, seq, touched or defacs.
        const meta = await c.tn.getMeta(grpA.name, { what: 'desc' });
        assert.ok(meta && meta.desc, `get desc from a non-member: ${j(meta)}`);
        assert.deepEqual(meta.desc.public, { fn: 'public face' }, j(meta));
        for (const k of ['seq', 'read', 'recv', 'acs', 'defacs', 'touched']) {
          assert.equal(meta.desc[k], undefined, `desc.${k} must not be shown to a non-member: ${j(meta.desc)}`);
        }
      });
  });
}
