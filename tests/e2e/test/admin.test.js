'use strict';
// Admin commands end to end on two nodes sharing MariaDB, Redis and Kafka: every command type is produced to the
// admin command topic on Kafka by `palaver admin command --wait` (as an Admin Server would produce it), runs on
// whichever node's consumer owns its partition, and real tinode-sdk clients on both nodes see the effect. One
// case goes through the HTTP front instead, and a duplicate command id runs once.
//
// Runs when E2E_ADMIN=1 and PALAVER_URLS names two nodes that load target/plugins/deploy (scripts/test-all.sh
// starts them). The CLI is PALAVER_BIN with `--config $E2E_ADMIN_CONFIG` and this process's environment, which
// must hold the nodes' PALAVER_KAFKA__* settings; PALAVER_ADMIN__TOKEN is the nodes' admin token.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { newUser, secondDevice, createGroup, joinTopic, tick } = require('../lib/fixtures');
const { connectClient } = require('../lib/client');
const { httpRequest } = require('../lib/raw');
const { binPath } = require('../lib/server');
const { API_KEY, TEST_TIMEOUT_MS, rand, sleep, j } = require('../lib/common');

const NODES = (process.env.PALAVER_URLS || '').split(',').map(s => s.trim()).filter(Boolean);
const ADMIN_TOKEN = process.env.PALAVER_ADMIN__TOKEN || '';
const CONFIG = process.env.E2E_ADMIN_CONFIG || '';
const skip = NODES.length < 2 || process.env.E2E_ADMIN !== '1' || !ADMIN_TOKEN || !CONFIG
  ? 'set E2E_ADMIN=1, PALAVER_URLS (two nodes on Kafka), E2E_ADMIN_CONFIG and PALAVER_ADMIN__TOKEN' : false;
// Every command runs over WebSocket clients: the effects are the server's, the transport only carries them.
const transport = 'ws';
// A word the moderation plugin holds for review in this file's groups (set per node, reset at the end).
const HOLD_WORD = `heldword${rand(3)}`;
// Which node ran each command (the consumer group spreads the partitions over both).
const ranOn = new Map();
// The CLI's environment: this one's, less the test suite's own PALAVER_* variables, which the configuration loader
// would refuse as unknown keys (it reads every PALAVER_SECTION__KEY).
const CLI_ENV = Object.fromEntries(Object.entries(process.env)
  .filter(([k]) => !k.startsWith('PALAVER_') || k.includes('__')));

/**
 * Produces one command with the CLI and waits for its result on the result topic. Resolves the result record
 * (the CLI exits 1 when the status is not `succeeded`; the record is printed either way).
 */
function command(type, payload, { commandId } = {}) {
  const args = ['admin', '--config', CONFIG, 'command', '--type', type, '--tenant', 'default',
    '--payload', JSON.stringify(payload), '--wait', '--timeout-ms', '30000'];
  if (commandId) args.push('--command-id', commandId);
  return new Promise((resolve, reject) => {
    execFile(binPath(), args, { timeout: 40000, env: CLI_ENV }, (err, stdout, stderr) => {
      let result;
      try {
        result = JSON.parse(stdout);
      } catch (e) {
        reject(new Error(`palaver admin command --type ${type}: no result (${err && err.message}); ` +
          `stderr: ${stderr}`));
        return;
      }
      if (result.status === 'succeeded' && err) {
        reject(new Error(`the CLI failed although the command succeeded: ${err.message}`));
        return;
      }
      ranOn.set(result.node, (ranOn.get(result.node) || 0) + 1);
      resolve(result);
    });
  });
}

/** Like `command`, and the result must be `succeeded`. */
async function ok(type, payload, opts) {
  const r = await command(type, payload, opts);
  assert.equal(r.status, 'succeeded', `${type}: ${j(r)}`);
  assert.equal(r.type, type);
  assert.equal(r.tenant_id, '1');
  return r;
}

/** An admin API call on `host`; resolves {status, body}. */
async function adminApi(host, method, path, body) {
  const headers = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  let payload;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await httpRequest(host, { method, path: `/v1/admin${path}`, headers, body: payload });
  return { status: res.status, body: res.body ? JSON.parse(res.body) : null };
}

/** A /v1/im/ call as the client's user. */
async function imApi(host, c, method, path, body) {
  const headers = { 'X-Tinode-APIKey': API_KEY, Authorization: `Token ${c.token}` };
  let payload;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await httpRequest(host, { method, path: `/v1/im${path}`, headers, body: payload });
  return { status: res.status, body: res.body ? JSON.parse(res.body) : null };
}

/** Sum of one `palaver_admin_commands_total` outcome over both nodes. */
async function commandsCounted(outcome) {
  let sum = 0;
  for (const host of NODES) {
    const res = await httpRequest(host, { path: '/metrics', headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    const line = res.body.split('\n').find(l => l.startsWith(`palaver_admin_commands_total{outcome="${outcome}"}`));
    sum += line ? Number(line.split(' ').pop()) : 0;
  }
  return sum;
}

const evicted = p => p.ctrl && p.ctrl.code === 205;

/** Resolves true if `c` gets a packet matching `pred` within `ms`, false otherwise. */
async function arrives(c, pred, since, ms = 1500) {
  return c.waitFor(pred, { since, timeout: ms }).then(() => true, () => false);
}

/** A fresh connection that tries a basic login; resolves the ctrl code. */
async function loginCode(t, host, login, password) {
  const c = await connectClient(t, host, { transport, name: `login ${login}` });
  return c.loginBasic(login, password).then(ctrl => ctrl.code, e => e.code);
}

/** Publishes through the SDK; resolves {code, text} of the ctrl or of the rejection. */
async function tryPublish(c, topic, text) {
  return c.tn.publishMessage(topic.createMessage(text, false)).then(
    ctrl => ({ code: ctrl.code, seq: ctrl.params && ctrl.params.seq }),
    e => ({ code: e.code, text: String(e.message) }));
}

describe('admin commands over Kafka on two nodes', { skip }, () => {
  const [n1, n2] = NODES;

  before(async () => {
    if (skip) return;
    // The moderation plugin's settings are node-local: both nodes hold the same word for review.
    for (const host of NODES) {
      const r = await adminApi(host, 'PUT', '/tenants/1/plugins/moderation', { settings: { hold_words: [HOLD_WORD] } });
      assert.equal(r.status, 200, `moderation settings on ${host}: ${j(r)}`);
    }
  });

  after(async () => {
    if (skip) return;
    for (const host of NODES) await adminApi(host, 'PUT', '/tenants/1/plugins/moderation', { settings: null });
    console.log(`admin commands ran on: ${j(Object.fromEntries(ranOn))}`);
  });

  test('user.disable kicks the user on both nodes and refuses logins; user.enable lets them in again',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const alice = await newUser(t, n1, transport, 'ada');
      const alice2 = await secondDevice(t, n2, transport, alice, 'alice@node2');
      const marks = [alice.mark(), alice2.mark()];
      const r = await ok('user.disable', { user: alice.uid(), reason: 'e2e' });
      assert.equal(r.detail.state, 'disabled', j(r));
      await alice.waitFor(evicted, { since: marks[0], what: 'ctrl 205 on node 1' });
      await alice2.waitFor(evicted, { since: marks[1], what: 'ctrl 205 on node 2' });
      for (const host of NODES) {
        assert.notEqual(await loginCode(t, host, alice.login, alice.password), 200, `login refused on ${host}`);
      }
      const c = await connectClient(t, n2, { transport, name: 'old token' });
      await assert.rejects(c.loginToken(alice.token), e => e.code >= 400, 'the old token is refused');

      await ok('user.enable', { user: alice.uid() });
      assert.equal(await loginCode(t, n2, alice.login, alice.password), 200, 'login works again');
    });

  test('user.password.reset closes every session, refuses the old password and token, accepts the new one',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const bob = await newUser(t, n2, transport, 'adb');
      const bob2 = await secondDevice(t, n1, transport, bob, 'bob@node1');
      for (const c of [bob, bob2]) await c.subscribeMe();
      const marks = [bob.mark(), bob2.mark()];
      const fresh = `new-${rand(6)}`;
      const r = await ok('user.password.reset', { user: bob.uid(), password: fresh });
      assert.equal(r.detail.user, bob.uid());
      for (const [c, m] of [[bob, marks[0]], [bob2, marks[1]]]) {
        await c.waitFor(evicted, { since: m, what: `ctrl 205 for ${c.name}` });
      }
      assert.equal(await loginCode(t, n1, bob.login, bob.password), 401, 'the old password is refused');
      const c = await connectClient(t, n1, { transport, name: 'old token' });
      await assert.rejects(c.loginToken(bob.token), e => e.code === 401, 'the old token is refused');
      assert.equal(await loginCode(t, n2, bob.login, fresh), 200, 'the new password works');
      assert.ok(!JSON.stringify(r).includes(fresh), 'the result never carries the password');
    });

  test('user.device.revoke closes only that device\'s session, on whichever node it is',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const phone = `phone-${rand(4)}`;
      const carol = await newUser(t, n1, transport, 'adc');
      const onPhone = await connectClient(t, n2, { transport, name: 'carol phone@node2', device: phone });
      await onPhone.loginToken(carol.token);
      const onLaptop = await connectClient(t, n2, { transport, name: 'carol laptop@node2', device: `laptop-${rand(4)}` });
      await onLaptop.loginToken(carol.token);
      const marks = [onPhone.mark(), onLaptop.mark(), carol.mark()];
      await ok('user.device.revoke', { user: carol.uid(), device: phone });
      const kicked = await onPhone.waitFor(evicted, { since: marks[0], what: 'ctrl 205 on the phone' });
      assert.equal(kicked.ctrl.code, 205, j(kicked));
      assert.equal(await arrives(onLaptop, evicted, marks[1]), false, 'the laptop session stays');
      assert.equal(await arrives(carol, evicted, marks[2], 200), false, 'the device-less session stays');
      const me = await onLaptop.subscribeMe();
      assert.ok(me.isSubscribed(), 'the laptop still works');
    });

  test('group commands: mute and unmute, admin set and remove, member remove, group delete, seen on both nodes',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const owner = await newUser(t, n1, transport, 'ado');
      const m1 = await newUser(t, n1, transport, 'adm');
      const m2 = await newUser(t, n2, transport, 'adn');
      for (const c of [owner, m1, m2]) await c.subscribeMe();
      const grp = await createGroup(owner, `admin ${rand(3)}`);
      const g1 = await joinTopic(m1, grp.name);
      const g2 = await joinTopic(m2, grp.name);

      let mark = m2.mark();
      await ok('group.member.mute', { topic: grp.name, user: m2.uid(), duration_ms: 60000 });
      await m2.waitInfo(grp.name, i => i.event === 'group.mute.updated' && i.payload.user_id === m2.uid(),
        { since: mark });
      const refused = await tryPublish(m2, g2, 'while muted');
      assert.equal(refused.code, 403, j(refused));
      assert.match(refused.text, /GROUP_MUTED/);
      assert.equal((await tryPublish(m1, g1, 'not muted')).code, 202, 'only that member is muted');
      mark = m2.mark();
      await ok('group.member.mute', { topic: grp.name, user: m2.uid(), duration_ms: 0 });
      await m2.waitInfo(grp.name, i => i.event === 'group.mute.updated' && i.payload.muted === false, { since: mark });
      assert.equal((await tryPublish(m2, g2, 'after unmute')).code, 202);

      const marks = [m2.mark(), owner.mark()];
      const set = await ok('group.admin.set', { topic: grp.name, user: m2.uid() });
      assert.equal(set.detail.role, 'admin', j(set));
      for (const [c, m] of [[m2, marks[0]], [owner, marks[1]]]) {
        const ev = await c.waitFor(p => p.info && p.info.event === 'group.role.updated', { since: m,
          what: `group.role.updated for ${c.name}` });
        assert.equal(ev.info.payload.role, 'admin', j(ev));
      }
      mark = m2.mark();
      assert.equal((await ok('group.admin.remove', { topic: grp.name, user: m2.uid() })).detail.role, 'member');
      const down = await m2.waitFor(p => p.info && p.info.event === 'group.role.updated', { since: mark,
        what: 'the role back to member' });
      assert.equal(down.info.payload.role, 'member', j(down));

      const gone = [m1.mark(), m2.mark()];
      await ok('group.member.remove', { topic: grp.name, user: m1.uid() });
      for (const [c, m] of [[m1, gone[0]], [m2, gone[1]]]) {
        const ev = await c.waitFor(p => p.info && p.info.event === 'group.member.removed', { since: m,
          what: `group.member.removed for ${c.name}` });
        assert.equal(ev.info.payload.user_id, m1.uid(), j(ev));
      }
      await m1.waitPres('me', p => p.what === 'gone' && p.src === grp.name, { since: gone[0] });
      const rejoin = await m1.tn.getTopic(grp.name).subscribe().then(c => c.code, e => e.code);
      assert.ok(rejoin >= 400, `a removed member cannot rejoin by itself: ${rejoin}`);

      const del = [owner.mark(), m2.mark()];
      const r = await ok('group.delete', { topic: grp.name });
      assert.equal(r.detail.members, 2, j(r));
      for (const [c, m] of [[owner, del[0]], [m2, del[1]]]) {
        await c.waitPres('me', p => p.what === 'gone' && p.src === grp.name, { since: m });
        await c.waitInfo('me', i => i.event === 'group.deleted' && i.payload.topic === grp.name, { since: m });
      }
      const missing = await command('group.delete', { topic: grp.name });
      assert.deepEqual([missing.status, missing.reason], ['rejected', 'GROUP_NOT_FOUND'], j(missing));
    });

  test('message.moderate releases a held message to both nodes, keeps a rejected one, recalls a delivered one',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const owner = await newUser(t, n1, transport, 'adr');
      const reader = await newUser(t, n2, transport, 'ads');
      const grp = await createGroup(owner, `review ${rand(3)}`);
      const gR = await joinTopic(reader, grp.name);
      const marks = [owner.mark(), reader.mark()];
      const held = await tryPublish(reader, gR, `please ${HOLD_WORD} one`);
      assert.equal(held.code, 202, `a held message is accepted: ${j(held)}`);
      const rejected = await tryPublish(reader, gR, `please ${HOLD_WORD} two`);
      assert.equal(rejected.code, 202, j(rejected));
      assert.equal(await arrives(owner, p => p.data && p.data.topic === grp.name, marks[0]), false,
        'nothing held is delivered');

      await ok('message.moderate', { topic: grp.name, seq: held.seq, action: 'release' });
      const got = await owner.waitData(grp.name, d => d.seq === held.seq, { since: marks[0] });
      assert.equal(got.content, `please ${HOLD_WORD} one`);
      await ok('message.moderate', { topic: grp.name, seq: rejected.seq, action: 'reject' });
      const again = await command('message.moderate', { topic: grp.name, seq: held.seq, action: 'release' });
      assert.deepEqual([again.status, again.reason], ['rejected', 'NOT_HELD'], j(again));
      assert.equal(owner.dataOn(grp.name, marks[0]).filter(d => d.seq === rejected.seq).length, 0,
        'the rejected message never reaches the other member');

      const plain = await tryPublish(owner, grp, 'to be recalled');
      assert.equal(plain.code, 202, j(plain));
      await reader.waitData(grp.name, d => d.seq === plain.seq, { since: marks[1] });
      const mR = reader.mark();
      await ok('message.moderate', { topic: grp.name, seq: plain.seq, action: 'recall' });
      await reader.waitPres(grp.name, p => p.what === 'del', { since: mR });
      const hist = await connectClient(t, n1, { transport, name: 'history' });
      await hist.loginToken(reader.token);
      const m = hist.mark();
      const topic = hist.tn.getTopic(grp.name);
      await topic.subscribe(topic.startMetaQuery().withLaterData(50).build());
      await tick(300);
      const seqs = hist.dataOn(grp.name, m).map(d => d.seq);
      assert.ok(seqs.includes(held.seq), `the released message is in the history: ${j(seqs)}`);
      assert.ok(!seqs.includes(plain.seq), `the recalled message is gone from the history: ${j(seqs)}`);
    });

  test('file.audit.update of an unknown file is rejected with its reason; abuse.report.resolve notifies the reporter once, even twice sent',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const file = await command('file.audit.update', { file: `f${rand(3)}`, status: 'blocked' });
      assert.deepEqual([file.status, file.code, file.reason], ['rejected', 404, 'FILE_NOT_FOUND'], j(file));
      assert.ok(file.message.length > 0, j(file));

      const dave = await newUser(t, n2, transport, 'add');
      const dave2 = await secondDevice(t, n1, transport, dave, 'dave@node1');
      const eve = await newUser(t, n1, transport, 'ade');
      for (const c of [dave, dave2]) await c.subscribeMe();
      const filed = await imApi(n2, dave, 'POST', '/reports',
        { target_type: 'user', target: eve.uid(), reason: 'spam', note: 'from e2e' });
      assert.equal(filed.status, 200, j(filed));
      const report = filed.body.report.id;
      const open = await adminApi(n1, 'GET', '/tenants/1/reports?open=true');
      assert.ok(open.body.reports.some(r => r.id === report), j(open.body));

      const marks = [dave.mark(), dave2.mark()];
      const repeatsBefore = await commandsCounted('repeat');
      const id = `e2e-res-${rand(6)}`;
      const payload = { report, resolution: 'actioned', note: 'thanks' };
      const first = await ok('abuse.report.resolve', payload, { commandId: id });
      const second = await command('abuse.report.resolve', payload, { commandId: id });
      assert.deepEqual(second, first, 'the same command id answers the same result');
      for (const [c, m] of [[dave, marks[0]], [dave2, marks[1]]]) {
        const n = await c.waitInfo('me', i => i.event === 'system_notification.created', { since: m });
        assert.equal(n.what, 'im', j(n));
      }
      // The repeat was settled as a repeat, not run again: one notification, the report resolved once.
      const deadline = Date.now() + 10000;
      while (await commandsCounted('repeat') < repeatsBefore + 1 && Date.now() < deadline) await sleep(200);
      assert.equal(await commandsCounted('repeat'), repeatsBefore + 1, 'the duplicate is counted as a repeat');
      await sleep(300);
      assert.equal(dave.received(p => p.info && p.info.event === 'system_notification.created', marks[0]).length, 1,
        'exactly one notification');
      const notices = await imApi(n1, dave, 'GET', '/notifications');
      assert.equal(notices.body.notifications.filter(n => n.kind === 'report_resolved').length, 1, j(notices.body));
      const closed = await adminApi(n2, 'GET', '/tenants/1/reports?open=true');
      assert.ok(!closed.body.reports.some(r => r.id === report), 'the report is closed');
      // The stored result reads back the same on either node.
      const stored = await adminApi(n2, 'GET', `/tenants/1/commands/${id}`);
      assert.deepEqual([stored.status, stored.body], [200, first]);
    });

  test('the HTTP front runs the same command path: a disable on node 2 kicks the user on node 1, a retry changes nothing',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const fay = await newUser(t, n1, transport, 'adf');
      const mark = fay.mark();
      const id = `e2e-http-${rand(6)}`;
      const body = { type: 'user.disable', command_id: id, payload: { user: fay.uid() } };
      const r = await adminApi(n2, 'POST', '/tenants/1/commands', body);
      assert.equal(r.status, 200, j(r));
      assert.deepEqual([r.body.command_id, r.body.status, r.body.node.length > 0], [id, 'succeeded', true]);
      await fay.waitFor(evicted, { since: mark, what: 'ctrl 205 on node 1' });
      const retry = await adminApi(n1, 'POST', '/tenants/1/commands', body);
      assert.deepEqual(retry.body, r.body, 'a retry answers the stored result');
      // The CLI with the same id over Kafka finds the command done too.
      const viaKafka = await command('user.disable', { user: fay.uid() }, { commandId: id });
      assert.deepEqual(viaKafka, r.body);
      await ok('user.enable', { user: fay.uid() });
      assert.equal(await loginCode(t, n1, fay.login, fay.password), 200);
    });
});
