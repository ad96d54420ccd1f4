'use strict';
// Credentials (Tinode's `cred`) as tinode-sdk and the stock web app use them, with the codes read back from a real
// SMTP server (Mailpit):
// - sign-up with a required email: 300 "validate credentials" carrying params.cred and a token; the code arrives
//   by mail; {login scheme:"token" cred:[{meth, resp}]} with a wrong code is 300 again, with the right one 200;
//   {hi} says reqCred {auth:["email"]};
// - the hourly send limit of an address: adding it again and again on `me` ends in 429 (a reset request too);
// - the password reset: requestResetAuthSecret (301), the reset code by mail, updateAccountBasic with
//   {scheme:"code"} (200), the user's open session closed (205), the old password refused (401), the new one in;
// - credentials on `me`: listed with withCred(), confirmed with setMeta({cred:{meth, resp}}) (a wrong code 406),
//   a second address deleted, the only confirmed required one kept (422);
// - on two nodes sharing MariaDB and Redis: a code sent through one node is accepted by a login on the other, and
//   a reset finished on one node closes the session on the other.
//
// Spawns its own servers (with [accounts.credentials] in their environment or configuration file), so it is
// skipped against an external server (PALAVER_URL). Needs Mailpit: start_mailpit (scripts/lib/services.sh) exports
// PALAVER_TEST_SMTP_ADDR and PALAVER_TEST_MAILPIT_API; without them the defaults 127.0.0.1:1025 and
// http://127.0.0.1:8025 are tried, and the tests skip themselves if no Mailpit answers there. The two-node part
// also needs MariaDB (PALAVER_TEST_MYSQL_ADDR, default 127.0.0.1:3306, user palaver/palaver) and Redis
// (PALAVER_TEST_REDIS_ADDR, default 127.0.0.1:6379), and skips itself when either does not answer.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { startServer, isExternal } = require('../lib/server');
const { CONFIRM_SUBJECT, RESET_SUBJECT, smtpTable, smtpLines, mailpitProblem, uniqueAddr, wrongCode, mailbox } =
  require('../lib/mailpit');
const { connectClient, Tinode } = require('../lib/client');
const { USER_RE } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, WAIT_MS, rand, sleep, uniqueLogin, uniquePassword, b64, j } =
  require('../lib/common');

const skip = isExternal() ? 'PALAVER_URL is set: these tests configure their own servers' : false;

const MYSQL_ADDR = process.env.PALAVER_TEST_MYSQL_ADDR || '127.0.0.1:3306';
const REDIS_ADDR = process.env.PALAVER_TEST_REDIS_ADDR || '127.0.0.1:6379';
const SENDS_PER_HOUR = 3;

/** Resolves the code of a request: the ctrl's when the SDK resolves, the CommError's when it rejects. */
const codeOf = p => p.then(ctrl => ctrl && ctrl.code, e => e.code);

/** Resolves {code, text, params} of a request, resolved or rejected. */
const outcome = p => p.then(
  ctrl => ({ code: ctrl && ctrl.code, text: ctrl && ctrl.text, params: ctrl && ctrl.params }),
  e => ({ code: e.code, text: String(e.message) }));

/** The session-wide {ctrl 205} that closes a connection. */
const closedCtrl = p => p.ctrl && p.ctrl.code === 205 && !p.ctrl.topic;

async function waitUntil(pred, what, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timeout after ${ms} ms: ${what}`);
    await sleep(100);
  }
}

/** True if a TCP connection to "host:port" opens within a second. */
function reachable(addr) {
  const [host, port] = addr.split(':');
  return new Promise(resolve => {
    const s = net.connect({ host, port: Number(port) });
    const done = ok => { s.destroy(); resolve(ok); };
    s.setTimeout(1000, () => done(false));
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
  });
}

// ---- Steps shared by the tests ----

/**
 * Signs up on `c` with a required email, as the web app does (createAccountBasic with cred, login:true): 300
 * "validate credentials", not logged in, a token. Resolves {login, password, addr, user, token}.
 */
async function signUpPending(c, addr, prefix = 'cred') {
  const login = uniqueLogin(prefix);
  const password = uniquePassword();
  const ctrl = await c.tn.createAccountBasic(login, password,
    { public: { fn: `E2E ${login}` }, cred: Tinode.credential('email', addr) });
  assert.equal(ctrl.code, 300, `sign-up with an unconfirmed required email: ${j(ctrl)}`);
  assert.equal(ctrl.text, 'validate credentials', `the web app matches the exact text: ${j(ctrl)}`);
  const p = ctrl.params || {};
  assert.deepEqual(p.cred, ['email'], `params.cred lists the missing methods: ${j(ctrl)}`);
  assert.match(String(p.user), USER_RE, j(ctrl));
  assert.equal(p.authlvl, 'auth', j(ctrl));
  assert.ok(typeof p.token === 'string' && p.token.length > 0, `params.token: ${j(ctrl)}`);
  assert.ok(p.expires instanceof Date && p.expires.getTime() > Date.now(), `params.expires: ${j(ctrl)}`);
  assert.ok(p.desc && p.desc.created, `the sign-up 300 carries desc: ${j(ctrl)}`);
  assert.equal(c.tn.isAuthenticated(), false, 'a 300 does not log in');
  assert.equal(c.tn.getAuthToken().token, p.token, 'the SDK keeps the token of the 300');
  c.login = login;
  c.password = password;
  return { login, password, addr, user: p.user, token: p.token };
}

/** The web app's validation screen: {login scheme:"token" secret:<token> cred:[{meth:"email", resp}]}. */
function loginWithCode(c, token, code) {
  return c.tn.loginToken(token, Tinode.credential({ meth: 'email', resp: code }));
}

/** Signs up with `addr` and confirms it at login. Resolves {login, password, addr, user, token} (the new token). */
async function confirmedUser(t, host, mail, addr, prefix, transport = 'ws') {
  const c = await connectClient(t, host, { transport, name: `${prefix}(${transport})` });
  const who = await signUpPending(c, addr, prefix);
  const code = await mail.next(addr, CONFIRM_SUBJECT);
  const ctrl = await loginWithCode(c, who.token, code);
  assert.equal(ctrl.code, 200, `the right code logs in: ${j(ctrl)}`);
  assert.equal(c.uid(), who.user);
  c.token = c.tn.getAuthToken().token;
  return { ...who, c, token: c.token };
}

/** Subscribes `c` to `me` (as the web app does after login). */
async function attachMe(c) {
  const me = c.tn.getMeTopic();
  const ctrl = await me.subscribe(me.startMetaQuery().withDesc().build());
  assert.ok(ctrl.code >= 200 && ctrl.code < 300, `subscribe me: ${j(ctrl)}`);
  return me;
}

/** {get what:"cred"} on me through the SDK's query builder; resolves the {meta cred} list from the wire. */
async function listCreds(c) {
  const me = c.tn.getMeTopic();
  const mark = c.mark();
  const ctrlOrMeta = await me.getMeta(me.startMetaQuery().withCred().build());
  const got = c.received(p => (p.meta && p.meta.topic === 'me' && p.meta.cred) ||
    (p.ctrl && p.ctrl.topic === 'me' && p.ctrl.code === 204), mark);
  assert.equal(got.length, 1, `one answer to get cred: ${j(ctrlOrMeta)} ${j(c.packets.slice(mark))}`);
  if (got[0].ctrl) {
    assert.deepEqual(got[0].ctrl.params, { what: 'creds' }, j(got[0]));
    return [];
  }
  return got[0].meta.cred.map(cr => ({ meth: cr.meth, val: cr.val, done: !!cr.done }))
    .sort((a, b) => a.val.localeCompare(b.val));
}

/** Waits for `c`'s session-wide ctrl 205 since `since` and for the server to drop the connection. */
async function closedBy(c, since, disc) {
  const pkt = await c.waitFor(closedCtrl, { since, what: `session-wide ctrl 205 for ${c.name}` });
  await waitUntil(() => c.disconnects.length > disc, `${c.name}: the server closes the connection`);
  return pkt.ctrl;
}

/**
 * The whole reset, asked on `asker` and finished on `finisher` (each a fresh, logged-out client): 301, the code by
 * mail, a wrong code 401, the right one 200, the code single-use.
 */
async function resetPassword(asker, finisher, mail, who) {
  const req = await outcome(asker.tn.requestResetAuthSecret('basic', 'email', who.addr));
  assert.deepEqual([req.code, req.text], [301, 'auth reset'], `{login scheme:"reset"}: ${j(req)}`);
  assert.equal(asker.tn.isAuthenticated(), false, 'asking for a reset logs nobody in');
  const code = await mail.next(who.addr, RESET_SUBJECT);
  const secret = c => b64(`${c}:email:${who.addr}`);
  const newPassword = uniquePassword();
  const wrong = await outcome(finisher.tn.updateAccountBasic(null, null, newPassword,
    { scheme: 'code', secret: secret(wrongCode(code)) }));
  assert.equal(wrong.code, 401, `a wrong reset code: ${j(wrong)}`);
  const ok = await outcome(finisher.tn.updateAccountBasic(null, null, newPassword,
    { scheme: 'code', secret: secret(code) }));
  assert.equal(ok.code, 200, `{acc tmpscheme:"code"} with the mailed code: ${j(ok)}`);
  assert.equal(finisher.tn.isAuthenticated(), false, 'the reset leaves the session logged out');
  const again = await outcome(finisher.tn.updateAccountBasic(null, null, uniquePassword(),
    { scheme: 'code', secret: secret(code) }));
  assert.equal(again.code, 401, `a reset code works once: ${j(again)}`);
  return newPassword;
}

/** After a reset: the old password and the old token are refused with 401, the new password logs in with 200. */
async function afterReset(t, host, who, newPassword, transport = 'ws') {
  const c = await connectClient(t, host, { transport, name: `${who.login}-after-reset` });
  assert.equal(await codeOf(c.loginBasic(who.login, who.password)), 401, 'the old password is refused');
  assert.equal(await codeOf(c.loginToken(who.token)), 401, 'a token from before the reset is refused');
  const ok = await outcome(c.loginBasic(who.login, newPassword));
  assert.equal(ok.code, 200, `the new password logs in (the email stays confirmed): ${j(ok)}`);
  assert.equal(c.uid(), who.user);
}

// ---- One node, embedded store ----

describe('credentials on one node', { skip }, () => {
  let srv;
  let noMail = null;
  const mail = mailbox();

  before(async () => {
    if (skip) return;
    noMail = await mailpitProblem();
    if (noMail) return;
    srv = await startServer({
      env: {
        PALAVER_ACCOUNTS__CREDENTIALS__REQUIRED: '["email"]',
        PALAVER_ACCOUNTS__CREDENTIALS__EMAIL: smtpTable(),
        PALAVER_ACCOUNTS__CREDENTIALS__SENDS_PER_HOUR: String(SENDS_PER_HOUR),
      },
    });
  });
  after(async () => { if (srv) await srv.stop(); });

  for (const transport of TRANSPORTS) {
    test(`${transport}: sign-up with a required email is 300 until the mailed code comes back at login`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        if (noMail) return t.skip(noMail);
        const c = await connectClient(t, srv.host, { transport, name: `signup(${transport})` });
        assert.deepEqual(c.tn.getServerParam(Tinode.REQ_CRED_VALIDATORS), { auth: ['email'] },
          `{hi} params.reqCred: ${j(c.tn.getServerParam(Tinode.REQ_CRED_VALIDATORS))}`);

        // Without the required credential: 422 naming it, as Tinode does (params.creds).
        const bare = await outcome(c.tn.createAccountBasic(uniqueLogin('bare'), uniquePassword(),
          { public: { fn: 'No email' } }));
        assert.equal(bare.code, 422, `sign-up without the required email: ${j(bare)}`);
        const raw = c.received(p => p.ctrl && p.ctrl.code === 422);
        assert.deepEqual(raw.length && raw[raw.length - 1].ctrl.params, { creds: ['email'] }, j(raw));

        const addr = uniqueAddr(`signup-${transport}`);
        const who = await signUpPending(c, addr, 'signup');
        const code = await mail.next(addr, CONFIRM_SUBJECT);

        // A login with the password alone, and one with a wrong code, are 300 again, logged out.
        const other = await connectClient(t, srv.host, { transport, name: `signup-password(${transport})` });
        const pw = await outcome(other.loginBasic(who.login, who.password));
        assert.deepEqual([pw.code, pw.text, pw.params && pw.params.cred], [300, 'validate credentials', ['email']],
          `password login before confirming: ${j(pw)}`);
        assert.ok(pw.params.token, `the login 300 carries a token: ${j(pw)}`);
        assert.equal(other.tn.isAuthenticated(), false);
        const wrong = await outcome(loginWithCode(c, who.token, wrongCode(code)));
        assert.deepEqual([wrong.code, wrong.text, wrong.params && wrong.params.cred],
          [300, 'validate credentials', ['email']], `a wrong code: ${j(wrong)}`);
        assert.equal(c.tn.isAuthenticated(), false, 'a wrong code does not log in');

        // The web app's validation screen: the sign-up token and the mailed code.
        const ok = await outcome(loginWithCode(c, who.token, code));
        assert.equal(ok.code, 200, `the right code: ${j(ok)}`);
        assert.equal(ok.params.user, who.user, j(ok));
        assert.equal(c.tn.isAuthenticated(), true, 'the right code logs in');
        assert.notEqual(c.tn.getAuthToken().token, who.token, 'a new token comes with the 200');
        await attachMe(c);

        // Confirmed once: the password alone logs in now, and so does the new token.
        const later = await connectClient(t, srv.host, { transport, name: `signup-later(${transport})` });
        assert.equal(await codeOf(later.loginBasic(who.login, who.password)), 200, 'password after confirming');
        const tok = await connectClient(t, srv.host, { transport, name: `signup-token(${transport})` });
        assert.equal(await codeOf(tok.loginToken(c.tn.getAuthToken().token)), 200, 'the 200 token logs in');
        // The confirmed address is the account's: nobody else signs up with it.
        const thief = await connectClient(t, srv.host, { transport, name: `signup-thief(${transport})` });
        const dup = await outcome(thief.tn.createAccountBasic(uniqueLogin('thief'), uniquePassword(),
          { cred: Tinode.credential('email', addr.toUpperCase()) }));
        assert.equal(dup.code, 409, `sign-up with someone's confirmed address: ${j(dup)}`);
      });
  }

  test('the hourly send limit of an address: adding it again and again on me ends in 429',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      if (noMail) return t.skip(noMail);
      const who = await confirmedUser(t, srv.host, mail, uniqueAddr('limit'), 'limit');
      const me = await attachMe(who.c);
      const second = uniqueAddr('limit-second');
      for (let i = 1; i <= SENDS_PER_HOUR; i++) {
        const res = await outcome(me.setMeta({ cred: { meth: 'email', val: second } }));
        assert.equal(res.code, 200, `add #${i} (within ${SENDS_PER_HOUR} an hour): ${j(res)}`);
        await mail.next(second, CONFIRM_SUBJECT);
      }
      const mark = who.c.mark();
      const limited = await outcome(me.setMeta({ cred: { meth: 'email', val: second } }));
      assert.equal(limited.code, 429, `add #${SENDS_PER_HOUR + 1}: the SDK rejects with 429: ${j(limited)}`);
      const wire = who.c.received(p => p.ctrl && p.ctrl.code === 429, mark);
      assert.equal(wire.length, 1, j(who.c.packets.slice(mark)));
      assert.ok(wire[0].ctrl.params && wire[0].ctrl.params.retry_after_ms > 0, `a retry hint: ${j(wire[0])}`);
      // The limit is the address's, whoever asks: a reset request for it is refused too, and nothing more is sent.
      const anon = await connectClient(t, srv.host, { transport: 'ws', name: 'limit-reset' });
      assert.equal(await codeOf(anon.tn.requestResetAuthSecret('basic', 'email', second)), 429, 'reset at the limit');
      await sleep(500);
      assert.equal(await mail.count(second), SENDS_PER_HOUR, `exactly ${SENDS_PER_HOUR} codes went to ${second}`);
      // Other addresses are not affected.
      const third = uniqueAddr('limit-third');
      assert.equal(await codeOf(me.setMeta({ cred: { meth: 'email', val: third } })), 200, 'another address');
      await mail.next(third, CONFIRM_SUBJECT);
    });

  test('password reset by a mailed code: 301, 200, the open session closed, old password 401, new one 200',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      if (noMail) return t.skip(noMail);
      const who = await confirmedUser(t, srv.host, mail, uniqueAddr('reset'), 'reset');
      await attachMe(who.c);
      const [mark, disc] = [who.c.mark(), who.c.disconnects.length];

      // An address nobody confirmed gets the same 301 and no mail.
      const nobody = uniqueAddr('reset-nobody');
      const probe = await connectClient(t, srv.host, { transport: 'ws', name: 'reset-probe' });
      const unknown = await outcome(probe.tn.requestResetAuthSecret('basic', 'email', nobody));
      assert.equal(unknown.code, 301, `reset for an unknown address: ${j(unknown)}`);

      const asker = await connectClient(t, srv.host, { transport: 'ws', name: 'reset-asker' });
      const newPassword = await resetPassword(asker, asker, mail, who);
      const ctrl = await closedBy(who.c, mark, disc);
      assert.equal(ctrl.code, 205, j(ctrl));
      await afterReset(t, srv.host, who, newPassword);
      assert.equal(await mail.count(nobody), 0, 'no reset code goes to an address nobody confirmed');
    });

  test('credentials on me: listed, added, confirmed (wrong code 406), deleted; the only required one stays (422)',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      if (noMail) return t.skip(noMail);
      const first = uniqueAddr('me-first');
      const who = await confirmedUser(t, srv.host, mail, first, 'mecred');
      const c = who.c;
      const me = await attachMe(c);
      assert.deepEqual(await listCreds(c), [{ meth: 'email', val: first, done: true }], 'the confirmed address');

      const second = uniqueAddr('me-second');
      assert.equal(await codeOf(me.setMeta({ cred: { meth: 'email', val: second } })), 200, 'add a second address');
      const code = await mail.next(second, CONFIRM_SUBJECT);
      assert.deepEqual(await listCreds(c),
        [{ meth: 'email', val: first, done: true }, { meth: 'email', val: second, done: false }].sort(
          (a, b) => a.val.localeCompare(b.val)), 'the second address, unconfirmed');

      const wrong = await outcome(me.setMeta({ cred: { meth: 'email', resp: wrongCode(code) } }));
      assert.equal(wrong.code, 406, `a wrong code on me: ${j(wrong)}`);
      const mark = c.mark();
      const ok = await outcome(me.setMeta({ cred: { meth: 'email', resp: code } }));
      assert.equal(ok.code, 200, `the mailed code on me: ${j(ok)}`);
      await c.waitPres('me', p => p.what === 'tags', { since: mark, what: '{pres me tags} after confirming' });
      assert.deepEqual(await listCreds(c),
        [{ meth: 'email', val: first, done: true }, { meth: 'email', val: second, done: true }].sort(
          (a, b) => a.val.localeCompare(b.val)), 'both confirmed');
      const meta = await me.getMeta(me.startMetaQuery().withTags().build()).then(() => c.received(
        p => p.meta && p.meta.topic === 'me' && p.meta.tags, mark));
      const tags = meta.length ? meta[meta.length - 1].meta.tags : [];
      assert.ok(tags.includes(`email:${first}`) && tags.includes(`email:${second}`), `credential tags: ${j(tags)}`);

      // The second one goes; the first, now the only confirmed email, stays.
      const del = await outcome(me.delCredential('email', second));
      assert.equal(del.code, 200, `delete the second address: ${j(del)}`);
      assert.deepEqual(await listCreds(c), [{ meth: 'email', val: first, done: true }], 'only the first is left');
      assert.deepEqual(me.getCredentials().map(cr => cr.val), [first], 'the SDK forgot the deleted one too');
      const last = await outcome(me.delCredential('email', first));
      assert.equal(last.code, 422, `delete the only confirmed required address: ${j(last)}`);
      // A pending third address does not make the first one deletable.
      const third = uniqueAddr('me-third');
      assert.equal(await codeOf(me.setMeta({ cred: { meth: 'email', val: third } })), 200, 'add a third address');
      await mail.next(third, CONFIRM_SUBJECT);
      assert.equal(await codeOf(me.delCredential('email', first)), 422, 'still the only confirmed one');
      assert.equal(await codeOf(me.delCredential('email', third)), 200, 'an unconfirmed one goes');
      assert.deepEqual(await listCreds(c), [{ meth: 'email', val: first, done: true }], 'the first stays');
    });
});

// ---- Two nodes sharing MariaDB and Redis ----

/** Runs a command, resolving its stdout, or '' if it fails (cleanup is best effort). */
function run(cmd, args) {
  return new Promise(resolve => execFile(cmd, args, { timeout: 20000 }, (err, stdout) => resolve(err ? '' : stdout)));
}

describe('credentials across two nodes sharing MariaDB and Redis', { skip }, () => {
  const tag = `e2e_cred_${rand(4)}`;
  const mail = mailbox();
  let unavailable = null;
  let dir;
  const nodes = [];

  before(async () => {
    if (skip) return;
    unavailable = await mailpitProblem();
    if (unavailable) return;
    for (const [what, addr] of [['MariaDB', MYSQL_ADDR], ['Redis', REDIS_ADDR]]) {
      if (!(await reachable(addr))) {
        unavailable = `${what} does not answer on ${addr} (start_mariadb / start_redis in scripts/lib/services.sh)`;
        return;
      }
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-cred-'));
    const file = path.join(dir, 'cluster.toml');
    fs.writeFileSync(file, [
      '[server]', 'heartbeat_ms = 1000', '',
      '[store]', 'kind = "mysql"', `url = "mysql://palaver:palaver@${MYSQL_ADDR}/${tag}_ctl"`,
      `tenant_database_prefix = "${tag}_t_"`, '',
      '[store_config.redis]', `addr = "${REDIS_ADDR}"`, `key_prefix = "${tag}"`, '',
      '[auth]', `token_key = "${crypto.randomBytes(32).toString('base64')}"`, '',
      '[accounts.credentials]', 'required = ["email"]', `sends_per_hour = ${SENDS_PER_HOUR}`, '',
      '[accounts.credentials.email]', ...smtpLines(), '',
    ].join('\n'));
    // The first node creates the control database; the second starts once it is ready. --dev: the demo API key.
    for (const id of ['a', 'b']) {
      const extraArgs = ['--config', file, '--node-id', `${tag}-${id}`, '--dev'];
      nodes.push(await startServer({ forceSpawn: true, extraArgs }));
    }
  });

  after(async () => {
    for (const n of nodes) await n.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (unavailable || skip || process.env.E2E_KEEP_DATA) return;
    const [host, port] = MYSQL_ADDR.split(':');
    const mysql = ['-h', host, '-P', port, '-upalaver', '-ppalaver', '-N', '-e'];
    const dbs = (await run('mysql', [...mysql, `SHOW DATABASES LIKE '${tag}\\_%'`])).split('\n').filter(Boolean);
    if (dbs.length) await run('mysql', [...mysql, dbs.map(d => `DROP DATABASE IF EXISTS \`${d}\`;`).join(' ')]);
    const [rhost, rport] = REDIS_ADDR.split(':');
    const keys = (await run('redis-cli', ['-h', rhost, '-p', rport, '--scan', '--pattern', `${tag}:*`]))
      .split('\n').filter(Boolean);
    for (let i = 0; i < keys.length; i += 200) {
      await run('redis-cli', ['-h', rhost, '-p', rport, 'DEL', ...keys.slice(i, i + 200)]);
    }
  });

  test('a code sent through node A logs in on node B; a wrong one is 300 there', { timeout: TEST_TIMEOUT_MS },
    async t => {
      if (unavailable) return t.skip(unavailable);
      const [a, b] = nodes;
      const onA = await connectClient(t, a.host, { transport: 'ws', name: 'signup-on-A' });
      assert.deepEqual(onA.tn.getServerParam(Tinode.REQ_CRED_VALIDATORS), { auth: ['email'] }, 'reqCred on A');
      const addr = uniqueAddr('cluster-signup');
      const who = await signUpPending(onA, addr, 'cluster');
      const code = await mail.next(addr, CONFIRM_SUBJECT);
      onA.close();

      const onB = await connectClient(t, b.host, { transport: 'ws', name: 'validate-on-B' });
      const wrong = await outcome(loginWithCode(onB, who.token, wrongCode(code)));
      assert.deepEqual([wrong.code, wrong.params && wrong.params.cred], [300, ['email']],
        `wrong code on B: ${j(wrong)}`);
      const ok = await outcome(loginWithCode(onB, who.token, code));
      assert.equal(ok.code, 200, `the code node A sent, on node B: ${j(ok)}`);
      assert.equal(onB.uid(), who.user);
      const back = await connectClient(t, a.host, { transport: 'ws', name: 'password-on-A' });
      assert.equal(await codeOf(back.loginBasic(who.login, who.password)), 200, 'confirmed for node A too');
    });

  test('a reset asked on node A and finished on node B closes the session on node A', { timeout: TEST_TIMEOUT_MS },
    async t => {
      if (unavailable) return t.skip(unavailable);
      const [a, b] = nodes;
      const who = await confirmedUser(t, a.host, mail, uniqueAddr('cluster-reset'), 'clreset');
      await attachMe(who.c);
      const [mark, disc] = [who.c.mark(), who.c.disconnects.length];
      const asker = await connectClient(t, a.host, { transport: 'ws', name: 'reset-ask-on-A' });
      const finisher = await connectClient(t, b.host, { transport: 'ws', name: 'reset-finish-on-B' });
      const newPassword = await resetPassword(asker, finisher, mail, who);
      await closedBy(who.c, mark, disc);
      await afterReset(t, a.host, who, newPassword);
      await afterReset(t, b.host, who, newPassword);
    });
});
