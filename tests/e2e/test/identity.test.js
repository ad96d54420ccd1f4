'use strict';
// Identity for app backends: accounts created, found, given tokens and revoked through the admin API, and logins
// with tokens a backend signs itself ({login scheme:"jwt"}, HS256 / RS256 / EdDSA keys from [auth.jwt]), with
// auto-provisioning of unknown subjects; a server without keys answers the jwt scheme as unknown.
//
// Spawns its own servers (one configured with a TOML file passed as `--config`, one plain); skipped with PALAVER_URL.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, isExternal } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { USER_RE } = require('../lib/fixtures');
const { adminRequest } = require('../lib/raw');
const { TEST_TIMEOUT_MS, TRANSPORTS, WAIT_MS, rand, sleep, uniquePassword, j } = require('../lib/common');

const skip = isExternal() ? 'PALAVER_URL is set: the server under test is not ours to configure' : false;
const ADMIN_TOKEN = `e2e-identity-admin-${rand(8)}`;
const MAX_LIFE = 600; // auth.jwt.max_lifetime_seconds of the configured server
const LEEWAY = 5;
const transport = 'ws';

const now = () => Math.floor(Date.now() / 1000);
const evicted = p => p.ctrl && p.ctrl.code === 205;

/** A compact JWS: base64url (no padding) header and claims, signed by `signer(Buffer) -> Buffer`. */
function signJwt(alg, claims, signer, header = {}) {
  const enc = v => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${enc({ alg, typ: 'JWT', ...header })}.${enc(claims)}`;
  return `${input}.${signer(Buffer.from(input)).toString('base64url')}`;
}

/** Logs in on `c` with any scheme; resolves {code, user} or, refused, {code, text}. */
function tryLogin(c, scheme, secret) {
  return c.tn.login(scheme, secret).then(
    ctrl => ({ code: ctrl.code, user: ctrl.params && ctrl.params.user }),
    e => ({ code: e.code, text: String(e.message) }));
}

/** Polls `pred` until it holds or `ms` pass. */
async function waitUntil(pred, what, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timeout after ${ms} ms: ${what}`);
    await sleep(50);
  }
}

describe('identity for app backends', { skip }, () => {
  let srv;
  let dir;
  let hsSecret;
  let ed;
  let rsa;
  const hs256 = (claims, secret = hsSecret) =>
    signJwt('HS256', claims, d => crypto.createHmac('sha256', secret).update(d).digest());
  const eddsa = (claims, kid = 'ed1') => signJwt('EdDSA', claims, d => crypto.sign(null, d, ed.privateKey), { kid });
  const rs256 = claims => signJwt('RS256', claims, d => crypto.sign('sha256', d, rsa.privateKey));

  before(async () => {
    if (skip) return;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-identity-'));
    hsSecret = crypto.randomBytes(32);
    ed = crypto.generateKeyPairSync('ed25519');
    rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const edPem = path.join(dir, 'ed25519.pub.pem');
    const rsPem = path.join(dir, 'rsa.pub.pem');
    fs.writeFileSync(edPem, ed.publicKey.export({ type: 'spki', format: 'pem' }));
    fs.writeFileSync(rsPem, rsa.publicKey.export({ type: 'spki', format: 'pem' }));
    const file = path.join(dir, 'identity.toml');
    fs.writeFileSync(file, [
      '[auth.jwt]', `max_lifetime_seconds = ${MAX_LIFE}`, `leeway_seconds = ${LEEWAY}`, '',
      '[[auth.jwt.keys]]', 'tenant = 1', 'algorithm = "HS256"', `secret = "${hsSecret.toString('base64')}"`, '',
      '[[auth.jwt.keys]]', 'tenant = 1', 'algorithm = "EdDSA"', `public_key_file = ${JSON.stringify(edPem)}`,
      'kid = "ed1"', 'auto_provision = true', '',
      '[[auth.jwt.keys]]', 'tenant = 1', 'algorithm = "RS256"', `public_key_file = ${JSON.stringify(rsPem)}`,
      'issuer = "crm"', 'audience = "palaver"', '',
    ].join('\n'));
    // The token also goes in the environment, so that an inherited PALAVER_ADMIN__TOKEN cannot replace it.
    srv = await startServer({ extraArgs: ['--config', file], env: { PALAVER_ADMIN__TOKEN: ADMIN_TOKEN } });
  });
  after(async () => {
    if (srv) await srv.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** An admin API call under /v1/admin/tenants/1; resolves {status, body}. */
  const admin = (method, p, body) => adminRequest(srv.host, ADMIN_TOKEN, method, `/v1/admin/tenants/1${p}`, body);

  async function createUser(fields) {
    const r = await admin('POST', '/users', fields);
    assert.equal(r.status, 200, `create user ${j(fields)}: ${j(r)}`);
    assert.match(String(r.body.user), USER_RE, j(r.body));
    return r.body;
  }

  async function mint(user, body = {}) {
    const r = await admin('POST', `/users/${user}/tokens`, body);
    assert.equal(r.status, 200, `mint a token for ${user}: ${j(r)}`);
    assert.equal(r.body.user, user, j(r.body));
    assert.ok(typeof r.body.token === 'string' && r.body.token.length > 0, j(r.body));
    return r.body;
  }

  /** A fresh connection that logs in; resolves {c, res}. */
  async function freshLogin(t, scheme, secret, name = scheme) {
    const c = await connectClient(t, srv.host, { transport, name });
    return { c, res: await tryLogin(c, scheme, secret) };
  }

  test('a backend creates an account, finds it, mints a token the SDK logs in with; duplicates are 409',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const r = rand();
      const ext = `crm-bob-${r}`;
      const login = `bk${r}`;
      const password = uniquePassword();
      const bob = await createUser({
        login, password, external_id: ext, public: { fn: 'Backend Bob' }, tags: [`bktag${r}`],
      });
      assert.deepEqual([bob.state, bob.login, bob.external_id, bob.public, bob.tags],
        ['active', login, ext, { fn: 'Backend Bob' }, [`bktag${r}`]], j(bob));
      assert.ok(!Number.isNaN(Date.parse(bob.created)) && !Number.isNaN(Date.parse(bob.updated)), j(bob));

      for (const q of [`?external_id=${encodeURIComponent(ext)}`, `?login=${login}`, `/${bob.user}`]) {
        const found = await admin('GET', `/users${q}`);
        assert.equal(found.status, 200, `GET users${q}: ${j(found)}`);
        assert.deepEqual(found.body, bob, `GET users${q} answers the created account`);
      }
      const unknown = await admin('GET', `/users?external_id=nobody-${r}`);
      assert.deepEqual([unknown.status, unknown.body.reason], [404, 'USER_NOT_FOUND'], j(unknown));
      const ghost = `usr${crypto.randomBytes(8).toString('base64url')}`;
      assert.equal((await admin('GET', `/users/${ghost}`)).status, 404);
      assert.equal((await admin('POST', `/users/${ghost}/tokens`, {})).status, 404);
      const neither = await admin('GET', '/users');
      assert.equal(neither.status, 400, `a look-up needs login or external_id: ${j(neither)}`);

      for (const dup of [{ external_id: ext }, { login, password: uniquePassword(), external_id: `other-${r}` }]) {
        const again = await admin('POST', '/users', dup);
        assert.deepEqual([again.status, again.body.reason, again.body.code], [409, 'DUPLICATE_CREDENTIAL', 409],
          `a taken credential ${j(dup)}: ${j(again)}`);
      }
      assert.equal((await admin('GET', `/users?external_id=other-${r}`)).status, 404,
        'a refused create leaves nothing');
      assert.equal((await admin('POST', '/users', { public: { fn: 'No Id' } })).status, 400, 'an account needs an id');

      const short = await admin('POST', `/users/${bob.user}/tokens`, { ttl_seconds: 10 });
      assert.equal(short.status, 400, `ttl_seconds below 60: ${j(short)}`);
      const minted = await mint(bob.user, { ttl_seconds: 600 });
      const expires = Date.parse(minted.expires);
      assert.ok(Math.abs(expires - (Date.now() + 600000)) < 60000, `expires about 600 s ahead: ${j(minted)}`);

      for (const tr of TRANSPORTS) {
        const c = await connectClient(t, srv.host, { transport: tr, name: `minted(${tr})` });
        const ctrl = await c.loginToken(minted.token);
        assert.deepEqual([ctrl.code, ctrl.params.user, c.uid()], [200, bob.user, bob.user], `${tr}: ${j(ctrl)}`);
      }
      const c = await connectClient(t, srv.host, { transport, name: 'minted-me' });
      await c.loginToken(minted.token);
      const mark = c.mark();
      const me = c.tn.getMeTopic();
      await me.subscribe(me.startMetaQuery().withDesc().build());
      const desc = await c.waitFor(p => p.meta && p.meta.topic === 'me' && p.meta.desc,
        { since: mark, what: 'me desc' });
      assert.deepEqual(desc.meta.desc.public, { fn: 'Backend Bob' }, j(desc.meta.desc));
      const basic = await connectClient(t, srv.host, { transport, name: 'bob-basic' });
      assert.equal((await basic.loginBasic(login, password)).params.user, bob.user, 'the password logs in too');
    });

  test('DELETE …/tokens closes every session of the user and voids its tokens; a new mint works',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const r = rand();
      const carol = await createUser({ external_id: `crm-carol-${r}`, public: { fn: 'Carol' } });
      const { token } = await mint(carol.user);
      const sessions = [];
      for (const name of ['carol-1', 'carol-2']) {
        const { c, res } = await freshLogin(t, 'token', token, name);
        assert.equal(res.user, carol.user, j(res));
        await c.subscribeMe();
        sessions.push({ c, mark: c.mark(), disc: c.disconnects.length });
      }
      const revoked = await admin('DELETE', `/users/${carol.user}/tokens`);
      assert.equal(revoked.status, 200, j(revoked));
      assert.equal(revoked.body.user, carol.user, j(revoked.body));
      assert.ok(Number.isInteger(revoked.body.auth_version), j(revoked.body));
      for (const s of sessions) {
        await s.c.waitFor(evicted, { since: s.mark, what: `ctrl 205 for ${s.c.name}` });
        await waitUntil(() => s.c.disconnects.length > s.disc, `${s.c.name}: the server closes the connection`);
      }
      const old = await freshLogin(t, 'token', token, 'carol-old-token');
      assert.equal(old.res.code, 401, `the old token is refused: ${j(old.res)}`);
      const fresh = await mint(carol.user);
      const again = await freshLogin(t, 'token', fresh.token, 'carol-new-token');
      assert.deepEqual([again.res.code, again.res.user], [200, carol.user], `a token minted after: ${j(again.res)}`);
      const ghost = `usr${crypto.randomBytes(8).toString('base64url')}`;
      assert.equal((await admin('DELETE', `/users/${ghost}/tokens`)).status, 404, 'an unknown user');
    });

  test('jwt: HS256 and RS256 tokens log in as the account of their sub; forged, expired, too long, wrong issuer: 401',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const r = rand();
      const ext = `crm-dave-${r}`;
      const dave = await createUser({ external_id: ext, public: { fn: 'Dave' } });
      const ok = await freshLogin(t, 'jwt', hs256({ sub: ext, exp: now() + 300, name: 'Ignored' }), 'hs256');
      assert.deepEqual([ok.res.code, ok.res.user, ok.c.uid()], [200, dave.user, dave.user], j(ok.res));
      assert.ok(ok.c.tn.getAuthToken() && ok.c.tn.getAuthToken().token, 'the login returns a Palaver token');
      const rs = await freshLogin(t, 'jwt', rs256({ sub: ext, exp: now() + 300, iss: 'crm', aud: 'palaver' }), 'rs256');
      assert.deepEqual([rs.res.code, rs.res.user], [200, dave.user],
        `RS256 with its issuer and audience: ${j(rs.res)}`);
      const info = await admin('GET', `/users/${dave.user}`);
      assert.deepEqual(info.body.public, { fn: 'Dave' }, 'a login of a known account changes no profile');

      const c = await connectClient(t, srv.host, { transport, name: 'jwt-refused' });
      const refused = {
        forged: hs256({ sub: ext, exp: now() + 300 }, crypto.randomBytes(32)),
        expired: hs256({ sub: ext, exp: now() - 120 }),
        'too long': hs256({ sub: ext, exp: now() + MAX_LIFE + LEEWAY + 120 }),
        'no exp': hs256({ sub: ext }),
        'wrong issuer': rs256({ sub: ext, exp: now() + 300, iss: 'evil', aud: 'palaver' }),
        'unknown kid': eddsa({ sub: ext, exp: now() + 300 }, 'other'),
        garbage: 'not.a.jwt',
      };
      for (const [why, token] of Object.entries(refused)) {
        const res = await tryLogin(c, 'jwt', token);
        assert.equal(res.code, 401, `${why}: ${j(res)}`);
        assert.match(res.text, /authentication failed/, `${why}: the jwt scheme is known here: ${j(res)}`);
      }
      assert.ok(!c.tn.isAuthenticated(), 'no refused token logs in');
      const last = await tryLogin(c, 'jwt', hs256({ sub: ext, exp: now() + MAX_LIFE - 60 }));
      assert.deepEqual([last.code, last.user], [200, dave.user], `within the lifetime, after refusals: ${j(last)}`);
    });

  test('jwt: an auto-provisioning key creates the account of a new sub once; a key without it refuses',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const r = rand();
      const sub = `crm-new-${r}`;
      const first = await freshLogin(t, 'jwt', eddsa({ sub, exp: now() + 300, name: 'Provisioned' }), 'eddsa-1');
      assert.equal(first.res.code, 200, `EdDSA, new sub: ${j(first.res)}`);
      assert.match(String(first.res.user), USER_RE);
      const found = await admin('GET', `/users?external_id=${encodeURIComponent(sub)}`);
      assert.equal(found.status, 200, j(found));
      assert.deepEqual([found.body.user, found.body.external_id, found.body.state, found.body.public],
        [first.res.user, sub, 'active', { fn: 'Provisioned' }], j(found.body));
      assert.ok(found.body.login === null || found.body.login === undefined, `no login: ${j(found.body)}`);
      const second = await freshLogin(t, 'jwt', eddsa({ sub, exp: now() + 300, name: 'Renamed' }), 'eddsa-2');
      assert.deepEqual([second.res.code, second.res.user], [200, first.res.user], `the same sub: ${j(second.res)}`);
      assert.deepEqual((await admin('GET', `/users/${first.res.user}`)).body.public, { fn: 'Provisioned' },
        'a later name claim does not rename the account');
      const minted = await mint(first.res.user);
      const viaToken = await freshLogin(t, 'token', minted.token, 'provisioned-token');
      assert.equal(viaToken.res.user, first.res.user, 'a provisioned account takes minted tokens like any other');

      const ghost = `crm-ghost-${r}`;
      const c = await connectClient(t, srv.host, { transport, name: 'hs256-unknown-sub' });
      const res = await tryLogin(c, 'jwt', hs256({ sub: ghost, exp: now() + 300, name: 'Ghost' }));
      assert.equal(res.code, 401, `HS256 key without auto_provision, unknown sub: ${j(res)}`);
      const none = await admin('GET', `/users?external_id=${ghost}`);
      assert.equal(none.status, 404, `nothing was created: ${j(none)}`);
    });
});

describe('jwt scheme on a server without [auth.jwt] keys', { skip }, () => {
  let plain;
  before(async () => {
    if (!skip) plain = await startServer();
  });
  after(async () => {
    if (plain) await plain.stop();
  });

  test('{login scheme:"jwt"} is answered 401 unknown authentication scheme', { timeout: TEST_TIMEOUT_MS }, async t => {
    const c = await connectClient(t, plain.host, { transport, name: 'jwt-off' });
    const token = signJwt('HS256', { sub: 'anyone', exp: now() + 300 },
      d => crypto.createHmac('sha256', crypto.randomBytes(32)).update(d).digest());
    const res = await tryLogin(c, 'jwt', token);
    assert.equal(res.code, 401, j(res));
    assert.match(res.text, /unknown authentication scheme/, j(res));
    assert.ok(!c.tn.isAuthenticated());
  });
});
