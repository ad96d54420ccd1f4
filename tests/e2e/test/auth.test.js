'use strict';
// Accounts and logins through the real tinode-sdk, over WebSocket and long polling; API key checks.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { Client, connectClient } = require('../lib/client');
const { newUser, USER_RE } = require('../lib/fixtures');
const { RawWs, httpRequest } = require('../lib/raw');
const { BAD_API_KEY, TEST_TIMEOUT_MS, TRANSPORTS, uniqueLogin, uniquePassword, withTimeout, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

for (const transport of TRANSPORTS) {
  describe(`accounts over ${transport}`, () => {
    test(`${transport}: sign-up with createAccountBasic(login:true), then token login on a second client`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await connectClient(t, srv.host, { transport, name: 'signup' });
        const login = uniqueLogin('sign');
        const password = uniquePassword();
        const ctrl = await a.signUp(login, password, { public: { fn: 'Sign Up' }, tags: [`t${login}`] });
        assert.equal(ctrl.code, 200, `acc with login:true answers ctrl 200: ${j(ctrl)}`);
        assert.match(String(ctrl.params.user), USER_RE, `params.user: ${j(ctrl)}`);
        assert.equal(ctrl.params.authlvl, 'auth', `params.authlvl: ${j(ctrl)}`);
        assert.ok(ctrl.params.expires instanceof Date,
          `params.expires must be an RFC 3339 timestamp of 20–24 chars the SDK turns into a Date: ${j(ctrl.params)}`);
        assert.ok(ctrl.params.expires.getTime() > Date.now(), 'token expires in the future');
        assert.equal(a.uid(), ctrl.params.user);
        assert.ok(a.tn.isAuthenticated(), 'SDK considers itself authenticated');

        const tok = a.tn.getAuthToken();
        assert.ok(tok && typeof tok.token === 'string' && tok.token.length > 0, `getAuthToken(): ${j(tok)}`);

        const b = await connectClient(t, srv.host, { transport, name: 'token-login' });
        const ctrl2 = await b.loginToken(tok.token);
        assert.equal(ctrl2.code, 200, `token login ctrl: ${j(ctrl2)}`);
        assert.equal(ctrl2.params.user, ctrl.params.user, 'token login is the same user');
        assert.equal(b.uid(), a.uid());

        // The same user can also log in with the password on a third connection.
        const c = await connectClient(t, srv.host, { transport, name: 'basic-login' });
        const ctrl3 = await c.loginBasic(login, password);
        assert.equal(ctrl3.code, 200, `basic login ctrl: ${j(ctrl3)}`);
        assert.equal(ctrl3.params.user, ctrl.params.user);
        assert.ok(ctrl3.params.token, `basic login returns a token: ${j(ctrl3)}`);

        // And `me` works for the token-login session: desc comes back.
        const me = b.tn.getMeTopic();
        const meta = b.mark();
        await me.subscribe(me.startMetaQuery().withDesc().build());
        assert.ok(me.isSubscribed(), 'attached to me');
        const desc = await b.waitFor(p => p.meta && p.meta.topic === 'me' && p.meta.desc,
          { since: meta, what: 'meta desc on me' });
        assert.deepEqual(desc.meta.desc.public, { fn: 'Sign Up' }, `me desc public: ${j(desc.meta.desc)}`);
      });

    test(`${transport}: wrong password is rejected with 401`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'pw');
      const b = await connectClient(t, srv.host, { transport, name: 'wrong-pw' });
      await assert.rejects(b.loginBasic(a.login, a.password + 'x'), err => {
        assert.equal(err.code, 401, `expected CommError code 401, got ${err.code}: ${err.message}`);
        return true;
      });
      assert.ok(!b.tn.isAuthenticated(), 'not authenticated after a failed login');
      // Unknown user: also 401.
      await assert.rejects(b.loginBasic(uniqueLogin('nobody'), 'whatever1'), err => {
        assert.equal(err.code, 401, `unknown login: expected 401, got ${err.code}: ${err.message}`);
        return true;
      });
      // The connection is still usable: the right password now works.
      const ok = await b.loginBasic(a.login, a.password);
      assert.equal(ok.code, 200);
      assert.equal(b.uid(), a.uid());
    });

    test(`${transport}: a taken login on sign-up is rejected with 409`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'dup');
      const b = await connectClient(t, srv.host, { transport, name: 'dup-signup' });
      await assert.rejects(b.signUp(a.login, uniquePassword()), err => {
        assert.equal(err.code, 409, `expected CommError code 409, got ${err.code}: ${err.message}`);
        return true;
      });
      assert.ok(!b.tn.isAuthenticated());
    });

    test(`${transport}: changing the password with updateAccountBasic()`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, transport, 'chpw');
      const newPassword = uniquePassword();
      // {acc user:<own uid> scheme:"basic" secret:base64("login:newpass")}, proving the current password with
      // Tinode's one-off credential: the SDK sends params.scheme/secret as tmpscheme/tmpsecret.
      const current = { scheme: 'basic', secret: Buffer.from(`${a.login}:${a.password}`).toString('base64') };
      const ctrl = await a.tn.updateAccountBasic(a.uid(), a.login, newPassword, current);
      assert.ok(ctrl.code >= 200 && ctrl.code < 300, `password change: ${j(ctrl)}`);
      const b = await connectClient(t, srv.host, { transport, name: 'chpw-new' });
      const ok = await b.loginBasic(a.login, newPassword);
      assert.equal(ok.code, 200, `login with the new password: ${j(ok)}`);
      const c = await connectClient(t, srv.host, { transport, name: 'chpw-old' });
      await assert.rejects(c.loginBasic(a.login, a.password), e => e.code === 401);
    });

    test(`${transport}: a password change without the current password is refused with 403`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'chpw-stolen');
        // What a stolen session would send (and what the web app sends): no proof of the current password.
        await assert.rejects(a.tn.updateAccountBasic(a.uid(), a.login, uniquePassword()), err => {
          assert.equal(err.code, 403, `expected 403, got ${err.code}: ${err.message}`);
          return true;
        });
        const b = await connectClient(t, srv.host, { transport, name: 'chpw-stolen-check' });
        const ok = await b.loginBasic(a.login, a.password);
        assert.equal(ok.code, 200, `the owner still logs in: ${j(ok)}`);
      });

    test(`${transport}: a bad token is rejected with 401`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const b = await connectClient(t, srv.host, { transport, name: 'bad-token' });
      const bogus = Buffer.from('this is not a valid palaver token at all, no sir').toString('base64');
      await assert.rejects(b.loginToken(bogus), err => {
        assert.equal(err.code, 401, `expected 401, got ${err.code}: ${err.message}`);
        return true;
      });
    });
  });
}

describe('API key', () => {
  test('long poll with a bad API key gets HTTP 403 (JSON body)', { timeout: TEST_TIMEOUT_MS }, async () => {
    const res = await httpRequest(srv.host, { method: 'POST', path: `/v0/channels/lp?apikey=${BAD_API_KEY}` });
    assert.equal(res.status, 403, `status: ${res.status} body: ${res.body}`);
    // The SDK's long poller JSON.parse()s the body of any failed poll it gets; a non-JSON body crashes it.
    if (res.body.length > 0) {
      let pkt;
      assert.doesNotThrow(() => { pkt = JSON.parse(res.body); }, `403 body must be JSON (or empty): ${res.body}`);
      assert.equal(pkt.ctrl && pkt.ctrl.code, 403, `Tinode answers {"ctrl":{"code":403,...}}: ${res.body}`);
    }
    // GET as well, and no key at all.
    const res2 = await httpRequest(srv.host, { method: 'GET', path: `/v0/channels/lp?apikey=${BAD_API_KEY}` });
    assert.equal(res2.status, 403, `GET status: ${res2.status}`);
    const res3 = await httpRequest(srv.host, { method: 'POST', path: '/v0/channels/lp' });
    assert.equal(res3.status, 403, `no key: status ${res3.status}`);
  });

  test('long poll with the demo API key gets 201 and a sid', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { API_KEY } = require('../lib/common');
    const res = await httpRequest(srv.host, { method: 'POST', path: `/v0/channels/lp?apikey=${API_KEY}` });
    assert.equal(res.status, 201, `the SDK requires HTTP 201 on the first poll: ${res.status} ${res.body}`);
    const pkt = JSON.parse(res.body);
    assert.equal(pkt.ctrl.code, 201, res.body);
    assert.ok(typeof pkt.ctrl.params.sid === 'string' && pkt.ctrl.params.sid.length > 0, res.body);
    // The key may also be given as a header.
    const res2 = await httpRequest(srv.host,
      { method: 'POST', path: '/v0/channels/lp', headers: { 'X-Tinode-APIKey': API_KEY } });
    assert.equal(res2.status, 201, `X-Tinode-APIKey header: ${res2.status} ${res2.body}`);
    // An unknown sid is refused with 403.
    const res3 = await httpRequest(srv.host,
      { method: 'POST', path: `/v0/channels/lp?apikey=${API_KEY}&sid=nosuchsession` });
    assert.equal(res3.status, 403, `unknown sid: ${res3.status} ${res3.body}`);
  });

  test('WebSocket upgrade with a bad API key fails with 403', { timeout: TEST_TIMEOUT_MS }, async () => {
    await assert.rejects(RawWs.open(srv.host, { apiKey: BAD_API_KEY }), err => {
      assert.equal(err.statusCode, 403, `expected HTTP 403 on upgrade, got: ${err.message}`);
      return true;
    });
    await assert.rejects(RawWs.open(srv.host, { apiKey: null }), err => {
      assert.equal(err.statusCode, 403, `no key: expected HTTP 403 on upgrade, got: ${err.message}`);
      return true;
    });
    // With the key the upgrade works.
    const ok = await RawWs.open(srv.host);
    ok.close();
  });

  test('tinode-sdk with a bad API key cannot connect (ws and lp)', { timeout: TEST_TIMEOUT_MS }, async () => {
    // WS: connect() rejects.
    const ws = new Client(srv.host, { transport: 'ws', apiKey: BAD_API_KEY, name: 'badkey-ws' });
    try {
      await assert.rejects(withTimeout(ws.tn.connect(), 10000, 'ws connect with a bad key'));
      assert.ok(!ws.tn.isConnected());
    } finally {
      ws.close();
    }
    // LP: the SDK swallows the connect() failure and reports it through onDisconnect with the HTTP status.
    const lp = new Client(srv.host, { transport: 'lp', apiKey: BAD_API_KEY, name: 'badkey-lp' });
    try {
      const disc = new Promise(resolve => {
        lp.tn.onDisconnect = err => resolve(err);
      });
      let connected = false;
      lp.tn.onConnect = () => { connected = true; };
      await lp.tn.connect();
      const err = await withTimeout(disc, 10000, 'LP onDisconnect with a bad key');
      assert.equal(err && err.code, 403, `LP onDisconnect code: ${err && err.code} ${err && err.message}`);
      assert.ok(!connected, 'onConnect must not fire');
    } finally {
      lp.close();
    }
  });
});

test('GET /livez and /readyz answer 200', { timeout: TEST_TIMEOUT_MS }, async () => {
  const live = await httpRequest(srv.host, { path: '/livez' });
  assert.equal(live.status, 200, `livez: ${live.status} ${live.body}`);
  const ready = await httpRequest(srv.host, { path: '/readyz' });
  assert.equal(ready.status, 200, `readyz: ${ready.status} ${ready.body}`);
});
