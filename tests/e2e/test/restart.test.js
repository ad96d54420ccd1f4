'use strict';
// Durability across a restart on the same data dir, and graceful shutdown on SIGTERM.
// Both need to control the server process, so they are skipped when PALAVER_URL points at an external server.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startServer, makeDataDir, isExternal } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { newUser, createGroup, joinTopic } = require('../lib/fixtures');
const { openRaw } = require('../lib/raw');
const { TEST_TIMEOUT_MS, rand, withTimeout, uniqueLogin, uniquePassword, j } = require('../lib/common');

const skip = isExternal() ? 'PALAVER_URL is set: the test server is not ours to restart' : false;

describe('server lifecycle', () => {
  test('users, topics, subscriptions and messages survive a restart on the same data dir',
    { timeout: TEST_TIMEOUT_MS * 2, skip }, async t => {
      const dataDir = makeDataDir();
      let srv = null;
      t.after(async () => {
        if (srv) await srv.stop();
        if (!process.env.E2E_KEEP_DATA) fs.rmSync(dataDir, { recursive: true, force: true });
      });

      // First run.
      srv = await startServer({ dataDir, forceSpawn: true });
      const a = await newUser(t, srv.host, 'ws', 'dura');
      const b = await newUser(t, srv.host, 'ws', 'durb');
      const grp = await createGroup(a, 'durable group', [`dur${rand(4)}`]);
      const name = grp.name;
      await joinTopic(b, name);
      const texts = [`one ${rand(2)}`, `two ${rand(2)}`, `three ${rand(2)}`];
      for (const x of texts) await a.publish(grp, x);
      // A P2P conversation too.
      const p = a.tn.getTopic(b.uid());
      await p.subscribe();
      await a.publish(p, 'p2p before restart');
      const tokenA = a.token;
      const uidA = a.uid();
      const uidB = b.uid();
      const loginB = { login: b.login, password: b.password };
      a.close();
      b.close();

      const stopped = await srv.stop();
      assert.ok(!stopped.killed, `server must exit on SIGTERM within the stop timeout: ${j(stopped)}`);
      srv = null;

      // Second run, same data dir, new port.
      srv = await startServer({ dataDir, forceSpawn: true });

      // A logs in with the token from before the restart.
      const a2 = await connectClient(t, srv.host, { transport: 'ws', name: 'dura#after' });
      const lc = await a2.loginToken(tokenA);
      assert.equal(lc.code, 200, `token login after restart: ${j(lc)}`);
      assert.equal(a2.uid(), uidA);

      // The subscription list still has the group and the P2P topic.
      const m0 = a2.mark();
      await a2.subscribeMe();
      const subs = await a2.waitFor(x => x.meta && x.meta.topic === 'me' && Array.isArray(x.meta.sub),
        { since: m0, what: 'meta sub on me' });
      const gsub = subs.meta.sub.find(s => s.topic === name);
      assert.ok(gsub, `group still subscribed: ${j(subs.meta.sub)}`);
      assert.equal(gsub.seq, 3, `group seq after restart: ${j(gsub)}`);
      assert.ok(subs.meta.sub.some(s => s.topic === uidB), `P2P still subscribed: ${j(subs.meta.sub)}`);

      // History is intact.
      const topic = a2.tn.getTopic(name);
      const m1 = a2.mark();
      await topic.subscribe(topic.startMetaQuery().withDesc().withSub().build());
      await topic.getMeta(topic.startMetaQuery().withData(undefined, undefined, 10).build());
      const hist = a2.dataOn(name, m1).sort((x, y) => x.seq - y.seq);
      assert.deepEqual(hist.map(d => d.seq), [1, 2, 3], `seqs after restart: ${j(hist)}`);
      assert.deepEqual(hist.map(d => d.content), texts);
      const desc = a2.received(x => x.meta && x.meta.topic === name && x.meta.desc, m1)[0];
      assert.ok(desc, 'desc after restart');
      assert.deepEqual(desc.meta.desc.public, { fn: 'durable group' }, j(desc.meta.desc));
      const members = a2.received(x => x.meta && x.meta.topic === name && Array.isArray(x.meta.sub), m1)[0];
      assert.ok(members && members.meta.sub.some(s => s.user === uidB), `B still a member: ${j(members)}`);

      // Seqs continue after the restart.
      const next = await a2.publish(topic, 'four');
      assert.equal(next.params.seq, 4, `seq continues after restart: ${j(next)}`);

      // B can log in with its password and reads everything, P2P included.
      const b2 = await connectClient(t, srv.host, { transport: 'ws', name: 'durb#after' });
      await b2.loginBasic(loginB.login, loginB.password);
      const tb = b2.tn.getTopic(name);
      const m2 = b2.mark();
      await tb.subscribe(tb.startMetaQuery().withLaterData(24).build());
      await b2.waitFor(x => x.ctrl && x.ctrl.topic === name && x.ctrl.code === 208, { since: m2, what: 'ctrl 208' });
      assert.deepEqual(b2.dataOn(name, m2).map(d => d.seq).sort((x, y) => x - y), [1, 2, 3, 4]);
      const pb = b2.tn.getTopic(uidA);
      const m3 = b2.mark();
      await pb.subscribe(pb.startMetaQuery().withLaterData(24).build());
      const pd = await b2.waitData(uidA, d => d.seq === 1, { since: m3 });
      assert.equal(pd.content, 'p2p before restart');

      // The login is still taken.
      const c = await connectClient(t, srv.host, { transport: 'ws', name: 'dup-after' });
      await assert.rejects(c.signUp(loginB.login, uniquePassword()), e => e.code === 409);
      for (const cl of [a2, b2, c]) cl.close();
    });

  test('on SIGTERM a connected client gets {ctrl code:205} before the socket closes',
    { timeout: TEST_TIMEOUT_MS, skip }, async t => {
      const srv = await startServer({ forceSpawn: true });
      t.after(() => srv.stop());
      const r = await openRaw(t, srv.host, { name: 'shutdown' });
      const hi = await r.hi();
      assert.equal(hi.code, 201, j(hi));
      const acc = await r.signUp(uniqueLogin('sd'), uniquePassword());
      assert.equal(acc.code, 200, j(acc));
      const sub = await r.request('sub', { topic: 'me' });
      assert.equal(sub.code, 200, j(sub));
      // A second, not yet authenticated, connection gets it too.
      const r2 = await openRaw(t, srv.host, { name: 'shutdown-anon' });
      await r2.hi();

      const mark = r.mark();
      const mark2 = r2.mark();
      srv.signal('SIGTERM');
      const ctrl = await r.waitFor(x => x.ctrl && x.ctrl.code === 205, { since: mark, timeout: 10000, what: 'ctrl 205' });
      assert.equal(ctrl.ctrl.code, 205, j(ctrl));
      const ctrl2 = await r2.waitFor(x => x.ctrl && x.ctrl.code === 205, { since: mark2, timeout: 10000, what: 'ctrl 205' });
      assert.ok(ctrl2);
      const closed = await withTimeout(r.closed, 10000, 'the server closes the socket after ctrl 205');
      const iCtrl = r.events.findIndex(e => e.kind === 'msg' && e.pkt.ctrl && e.pkt.ctrl.code === 205);
      const iClose = r.events.findIndex(e => e.kind === 'close');
      assert.ok(iCtrl >= 0 && iCtrl < iClose, `ctrl 205 precedes the close: ${j(r.events)}`);
      assert.ok(closed);
      const exit = await srv.waitExit(10000);
      assert.ok(exit, 'server process exits after SIGTERM');
      assert.equal(exit.code, 0, `exit status after SIGTERM: ${j(exit)}\n${srv.log(2000)}`);
    });
});
