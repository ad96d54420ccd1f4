'use strict';
// Tinode's `anonymous` scheme through tinode-sdk: refused while the tenant has not enabled it, then an account with
// no login that the SDK creates with `createAccount('anonymous', …)`, logs in again only with its token, and joins
// topics with their `anon` default access (a group open to guests, not one that is not).
//
// Spawns its own server (it changes a tenant setting through the admin API); skipped with PALAVER_URL.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, isExternal } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { USER_RE } = require('../lib/fixtures');
const { adminRequest } = require('../lib/raw');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, uniquePassword, j } = require('../lib/common');

const skip = isExternal() ? 'PALAVER_URL is set: the server under test is not ours to configure' : false;
const ADMIN_TOKEN = `e2e-anonymous-admin-${rand(8)}`;

/** Resolves {code, params} of a request, or {code, text} of its refusal. */
const outcome = p => p.then(ctrl => ({ code: ctrl.code, params: ctrl.params || {} }),
  e => ({ code: e.code, text: String(e.message) }));

describe('anonymous accounts', { skip }, () => {
  let srv;
  before(async () => {
    if (skip) return;
    srv = await startServer({ env: { PALAVER_ADMIN__TOKEN: ADMIN_TOKEN } });
  });
  after(async () => {
    if (srv) await srv.stop();
  });
  const admin = (method, body) => adminRequest(srv.host, ADMIN_TOKEN, method, '/v1/admin/tenants/1/accounts', body);

  for (const transport of TRANSPORTS) {
    test(`off until the tenant enables it, then a token-only account at the anon level (${transport})`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        assert.equal((await admin('PUT', { anonymous: null })).status, 200, 'starts off');
        const guest = await connectClient(t, srv.host, { transport, name: 'guest' });
        const off = await outcome(guest.tn.createAccount('anonymous', null, true, { public: { fn: 'Guest' } }));
        assert.equal(off.code, 401, j(off));
        assert.match(off.text, /unknown authentication scheme/);

        let r = await admin('PUT', { anonymous: true });
        assert.equal(r.status, 200, j(r));
        assert.equal(r.body.anonymous, true, j(r.body));
        const made = await outcome(guest.tn.createAccount('anonymous', null, true, { public: { fn: 'Guest' } }));
        assert.equal(made.code, 200, j(made));
        assert.equal(made.params.authlvl, 'anon', j(made));
        assert.match(String(made.params.user), USER_RE);
        const token = made.params.token;
        assert.ok(typeof token === 'string' && token.length > 0, j(made));

        // The token is the way back in; there is no anonymous login.
        const back = await connectClient(t, srv.host, { transport, name: 'guest-again' });
        const again = await outcome(back.tn.loginToken(token));
        assert.equal(again.code, 200, j(again));
        assert.equal(again.params.authlvl, 'anon', j(again));
        assert.equal(again.params.user, made.params.user);
        const other = await connectClient(t, srv.host, { transport, name: 'guest-login' });
        const none = await outcome(other.tn.login('anonymous', ''));
        assert.equal(none.code, 501, j(none));

        // A member's groups: one open to guests (anon JR), one not (anon N by default).
        const owner = await connectClient(t, srv.host, { transport, name: 'owner' });
        await owner.tn.createAccountBasic(`an${rand()}`, uniquePassword(), { public: { fn: 'Owner' } });
        const closed = owner.tn.getTopic('new');
        await closed.subscribe(null, { desc: { public: { fn: 'members only' } } });
        const open = owner.tn.getTopic('new');
        await open.subscribe(null, { desc: { public: { fn: 'lobby' }, defacs: { auth: 'JRWPS', anon: 'JR' } } });

        const refused = await outcome(back.tn.getTopic(closed.name).subscribe());
        assert.equal(refused.code, 403, j(refused));
        const lobby = back.tn.getTopic(open.name);
        const joined = await outcome(lobby.subscribe());
        assert.equal(joined.code, 200, j(joined));
        const write = await outcome(back.tn.publishMessage(lobby.createMessage('hello', false)));
        assert.equal(write.code, 403, `J and R only: ${j(write)}`);

        r = await admin('PUT', { anonymous: null });
        assert.equal(r.status, 200, j(r));
        assert.equal(r.body.anonymous, false, j(r.body));
        const late = await connectClient(t, srv.host, { transport, name: 'late' });
        const offAgain = await outcome(late.tn.createAccount('anonymous', null, true, {}));
        assert.equal(offAgain.code, 401, j(offAgain));
      });
  }
});
