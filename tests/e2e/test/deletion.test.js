'use strict';
// Account deletion: {del what:"user"} through tinode-sdk's delCurrentUser(hard) and the admin command user.delete.
// The account's sessions close (the asking one after its 200), its owned groups go (members told "gone"), it leaves
// the groups it joined, its P2P peers are told, its password and tokens stop working, its login is free again;
// hard erases the profile, soft keeps it (the admin view shows both); nobody deletes another's account (403).
//
// Spawns its own server with an admin token; skipped with PALAVER_URL.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { startServer, isExternal } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { newUser, secondDevice, createGroup, joinTopic, USER_RE } = require('../lib/fixtures');
const { openRaw, adminRequest } = require('../lib/raw');
const { TEST_TIMEOUT_MS, TRANSPORTS, WAIT_MS, rand, sleep, uniquePassword, j } = require('../lib/common');

const skip = isExternal() ? 'PALAVER_URL is set: the server under test is not ours to configure' : false;
const ADMIN_TOKEN = `e2e-deletion-admin-${rand(8)}`;

/** The session-wide {ctrl 205} that closes a connection (a topic eviction names its topic). */
const closedCtrl = p => p.ctrl && p.ctrl.code === 205 && !p.ctrl.topic;
const gonePres = src => p => p.pres && p.pres.topic === 'me' && p.pres.what === 'gone' && p.pres.src === src;

async function waitUntil(pred, what, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timeout after ${ms} ms: ${what}`);
    await sleep(50);
  }
}

/** Resolves the code of a login (or sign-up) attempt: the ctrl's on success, the CommError's on refusal. */
const codeOf = p => p.then(ctrl => ctrl.code, e => e.code);

/** Waits for `c`'s {ctrl 205} since `since` and for the server to drop the connection. Resolves the ctrl. */
async function closedBy(c, since, disc) {
  const pkt = await c.waitFor(closedCtrl, { since, what: `session-wide ctrl 205 for ${c.name}` });
  assert.equal(pkt.ctrl.text, 'evicted', j(pkt));
  assert.match(String(pkt.ctrl.params && pkt.ctrl.params.reason), /deleted/, `params.reason: ${j(pkt)}`);
  await waitUntil(() => c.disconnects.length > disc, `${c.name}: the server closes the connection`);
  return pkt.ctrl;
}

describe('account deletion', { skip }, () => {
  let srv;
  before(async () => {
    if (!skip) srv = await startServer({ env: { PALAVER_ADMIN__TOKEN: ADMIN_TOKEN } });
  });
  after(async () => { if (srv) await srv.stop(); });

  /** An admin API call under /v1/admin/tenants/1; resolves {status, body}. */
  const admin = (method, p, body) => adminRequest(srv.host, ADMIN_TOKEN, method, `/v1/admin/tenants/1${p}`, body);

  async function account(user) {
    const r = await admin('GET', `/users/${user}`);
    assert.equal(r.status, 200, `the admin view still shows ${user}: ${j(r)}`);
    return r.body;
  }

  /** Old password and old token are refused with 401 on fresh connections. */
  async function locksOut(t, transport, who) {
    const byPassword = await connectClient(t, srv.host, { transport, name: `${who.name}-old-password` });
    assert.equal(await codeOf(byPassword.loginBasic(who.login, who.password)), 401, 'the password is refused');
    const byToken = await connectClient(t, srv.host, { transport, name: `${who.name}-old-token` });
    assert.equal(await codeOf(byToken.loginToken(who.token)), 401, 'the token is refused');
  }

  for (const transport of TRANSPORTS) {
    test(`${transport}: delCurrentUser(true) closes both devices, deletes the owned group, leaves the joined one, ` +
      'tells the P2P peer, locks the account out, frees the login and erases the profile',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const dora = await newUser(t, srv.host, transport, 'dora', { public: { fn: 'Dora' }, tags: [`dora${rand(4)}`] });
      const uid = dora.uid();
      const tablet = await secondDevice(t, srv.host, transport, dora, `dora-tablet(${transport})`);
      const ann = await newUser(t, srv.host, transport, 'ann');
      const ben = await newUser(t, srv.host, transport, 'ben');
      const carl = await newUser(t, srv.host, transport, 'carl');
      // Dora owns a group Ann joined, joined Ben's group, and talks to Carl.
      const doraGrp = (await createGroup(dora, 'Dora owns')).name;
      await joinTopic(ann, doraGrp);
      const benGrp = await createGroup(ben, 'Ben owns');
      await joinTopic(dora, benGrp.name);
      const p2p = dora.tn.getTopic(carl.uid());
      const sub = await p2p.subscribe(p2p.startMetaQuery().withDesc().build());
      assert.equal(sub.code, 200, j(sub));
      await dora.publish(p2p, 'hi carl');
      for (const c of [ann, ben, carl]) await c.subscribeMe();

      const marks = new Map([dora, tablet, ann, ben, carl].map(c => [c, c.mark()]));
      const disc = [dora.disconnects.length, tablet.disconnects.length];
      const res = await dora.tn.delCurrentUser(true).then(() => null, e => e);
      assert.equal(res, null, `{del what:"user" hard:true} must answer 2xx: ${res && `${res.code} ${res.message}`}`);

      const since = marks.get(dora);
      const reply = dora.packets.findIndex((p, i) => i >= since && p.ctrl && p.ctrl.code === 200 && !p.ctrl.topic);
      assert.ok(reply >= 0, `the asking session gets ctrl 200: ${j(dora.packets.slice(since))}`);
      await closedBy(dora, since, disc[0]);
      const kick = dora.packets.findIndex((p, i) => i >= since && closedCtrl(p));
      assert.ok(reply < kick, `the 200 comes before the 205: ${j(dora.packets.slice(since))}`);
      await closedBy(tablet, marks.get(tablet), disc[1]);

      await ann.waitFor(gonePres(doraGrp), { since: marks.get(ann), what: `{pres me gone ${doraGrp}} for the member` });
      await carl.waitFor(gonePres(uid), { since: marks.get(carl), what: `{pres me gone ${uid}} for the P2P peer` });
      assert.equal(await codeOf(ann.tn.subscribe(doraGrp)), 404, 'the owned group is deleted');
      const mBen = ben.mark();
      await benGrp.getMeta(benGrp.startMetaQuery().withSub().build());
      const subs = await ben.waitFor(p => p.meta && p.meta.topic === benGrp.name && Array.isArray(p.meta.sub),
        { since: mBen, what: `meta sub of ${benGrp.name}` });
      assert.ok(!subs.meta.sub.some(s => s.user === uid && !s.deleted), `Ben's group lost Dora: ${j(subs.meta.sub)}`);
      assert.equal(ben.received(gonePres(benGrp.name), marks.get(ben)).length, 0, "Ben's own group is not gone");

      await locksOut(t, transport, dora);
      const newcomer = await connectClient(t, srv.host, { transport, name: `newcomer(${transport})` });
      const again = await newcomer.signUp(dora.login, uniquePassword());
      assert.equal(again.code, 200, `the login is free for someone new: ${j(again)}`);
      assert.match(String(newcomer.uid()), USER_RE);
      assert.notEqual(newcomer.uid(), uid, 'a new account, not the deleted one back');

      const info = await account(uid);
      assert.deepEqual([info.state, info.public ?? null, info.tags, info.login ?? null], ['deleted', null, [], null],
        `hard erases the profile and forgets the login: ${j(info)}`);
    });
  }

  test('a soft delete keeps the profile; nobody deletes another account over the socket (403)',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const tag = `keep${rand(4)}`;
      const sam = await newUser(t, srv.host, 'ws', 'sam', { public: { fn: 'Soft Sam' }, tags: [tag] });
      const uid = sam.uid();
      const stranger = await newUser(t, srv.host, 'ws', 'mallory');
      const raw = await openRaw(t, srv.host, { name: 'mallory-raw' });
      assert.equal((await raw.hi()).code, 201, 'hi');
      assert.equal((await raw.loginToken(stranger.token)).code, 200, 'the stranger logs in');
      const refused = await raw.request('del', { what: 'user', user: uid });
      assert.equal(refused.code, 403, `{del what:"user" user:<someone else>}: ${j(refused)}`);
      assert.equal((await account(uid)).state, 'active', 'the refused request changed nothing');
      const check = await connectClient(t, srv.host, { transport: 'ws', name: 'sam-still' });
      assert.equal(await codeOf(check.loginBasic(sam.login, sam.password)), 200, 'Sam still logs in');

      await sam.subscribeMe();
      const [mark, disc, checkMark, checkDisc] = [sam.mark(), sam.disconnects.length, check.mark(),
        check.disconnects.length];
      const res = await sam.tn.delCurrentUser(false).then(() => null, e => e);
      assert.equal(res, null, `{del what:"user"} (soft) must answer 2xx: ${res && `${res.code} ${res.message}`}`);
      await closedBy(sam, mark, disc);
      await closedBy(check, checkMark, checkDisc);
      await locksOut(t, 'ws', sam);
      const info = await account(uid);
      assert.equal(info.state, 'deleted', j(info));
      assert.deepEqual(info.public, { fn: 'Soft Sam' }, `a soft delete keeps public: ${j(info)}`);
      assert.ok(info.tags.includes(tag), `a soft delete keeps the tags: ${j(info)}`);
      assert.equal(info.login ?? null, null, `the login is forgotten either way: ${j(info)}`);
      assert.equal((await admin('POST', `/users/${uid}/tokens`, {})).status, 404, 'no token for a deleted account');
    });

  test('the admin command user.delete closes the sessions and answers a succeeded result',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const fay = await newUser(t, srv.host, 'ws', 'fay', { public: { fn: 'Fay' } });
      const uid = fay.uid();
      await fay.subscribeMe();
      const mark = fay.mark();
      const disc = fay.disconnects.length;
      const id = `e2e-delete-${rand(6)}`;
      const r = await admin('POST', '/commands',
        { type: 'user.delete', command_id: id, payload: { user: uid, hard: false } });
      assert.equal(r.status, 200, j(r));
      assert.deepEqual([r.body.command_id, r.body.type, r.body.status, r.body.code],
        [id, 'user.delete', 'succeeded', 200], j(r.body));
      assert.deepEqual([r.body.detail.user, r.body.detail.state, r.body.detail.erased, r.body.detail.closed_here],
        [uid, 'deleted', false, 1], `detail: ${j(r.body.detail)}`);
      await closedBy(fay, mark, disc);
      await locksOut(t, 'ws', fay);
      const info = await account(uid);
      assert.deepEqual([info.state, info.public], ['deleted', { fn: 'Fay' }], j(info));
      const disable = await admin('POST', '/commands', { type: 'user.disable', payload: { user: uid } });
      assert.equal(disable.status, 404, `a deleted account cannot be disabled: ${j(disable)}`);
      const nobody = `usr${crypto.randomBytes(8).toString('base64url')}`;
      const ghost = await admin('POST', '/commands', { type: 'user.delete', payload: { user: nobody } });
      assert.equal(ghost.status, 404, `an unknown user: ${j(ghost)}`);
    });
});
