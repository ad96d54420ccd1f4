'use strict';
// The JSON protocol spoken directly over a raw WebSocket (the `ws` package), no SDK.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { openRaw } = require('../lib/raw');
const { TEST_TIMEOUT_MS, b64, sleep, uniqueLogin, uniquePassword, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/;

describe('raw protocol', () => {
  test('{hi} is answered with ctrl 201 and server params', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    const ctrl = await r.request('hi', { id: 'h1', ver: '0.25.3', ua: 'raw/1.0', lang: 'en', platf: 'web' });
    assert.equal(ctrl.id, 'h1');
    assert.equal(ctrl.code, 201, j(ctrl));
    assert.ok(ctrl.params && typeof ctrl.params.ver === 'string', `params.ver: ${j(ctrl)}`);
    assert.ok(Number.isInteger(ctrl.params.maxMessageSize) && ctrl.params.maxMessageSize > 0,
      `params.maxMessageSize: ${j(ctrl)}`);
    assert.match(String(ctrl.ts), RFC3339_MS, `ctrl.ts must be RFC 3339 UTC with ≤ ms precision (20–24 chars): ${j(ctrl)}`);
  });

  test('a first message other than {hi} gets ctrl 409 with the id echoed', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    const ctrl = await r.request('login', { id: '7', scheme: 'basic', secret: b64('someone:secret') });
    assert.equal(ctrl.id, '7', j(ctrl));
    assert.equal(ctrl.code, 409, `first message not hi: ${j(ctrl)}`);
    // Another connection, {sub} first.
    const r2 = await openRaw(t, srv.host);
    const ctrl2 = await r2.request('sub', { id: 'abc', topic: 'me' });
    assert.equal(ctrl2.id, 'abc');
    assert.equal(ctrl2.code, 409, j(ctrl2));
    // After the 409 the handshake still works.
    const hi = await r2.hi();
    assert.equal(hi.code, 201, j(hi));
  });

  test('{pub} and {sub} before login get ctrl 401', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    const c1 = await r.request('pub', { id: '3', topic: 'grpAAAAAAAAAAA', content: 'x' });
    assert.equal(c1.id, '3');
    assert.equal(c1.code, 401, `pub before login: ${j(c1)}`);
    const c2 = await r.request('sub', { id: '4', topic: 'me' });
    assert.equal(c2.code, 401, `sub before login: ${j(c2)}`);
    const c3 = await r.request('get', { id: '5', topic: 'me', what: 'desc' });
    assert.equal(c3.code, 401, `get before login: ${j(c3)}`);
  });

  test('malformed JSON gets ctrl 400 and the connection stays usable', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    let m = r.mark();
    r.send('{not json');
    const c1 = await r.waitFor(p => p.ctrl, { since: m, what: 'ctrl for malformed JSON' });
    assert.equal(c1.ctrl.code, 400, j(c1));
    m = r.mark();
    r.send('{"bogus":{"id":"b1"}}');
    const c2 = await r.waitFor(p => p.ctrl, { since: m, what: 'ctrl for an unknown message kind' });
    assert.equal(c2.ctrl.code, 400, j(c2));
    m = r.mark();
    r.send('{"pub":{"id":"42","topic":"grpX","noecho":"yes"}}');
    const c3 = await r.waitFor(p => p.ctrl, { since: m, what: 'ctrl for a wrongly typed field' });
    assert.equal(c3.ctrl.code, 400, j(c3));
    // Still alive.
    const acc = await r.signUp(uniqueLogin('mal'), uniquePassword());
    assert.equal(acc.code, 200, `the connection works after malformed frames: ${j(acc)}`);
    assert.equal(r.closeInfo, null);
  });

  test('a frame larger than maxMessageSize gets ctrl 413', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    const hi = await r.hi();
    const max = hi.params && hi.params.maxMessageSize;
    assert.ok(Number.isInteger(max) && max > 0, `hi params.maxMessageSize: ${j(hi)}`);
    const acc = await r.signUp(uniqueLogin('big'), uniquePassword());
    assert.equal(acc.code, 200);
    const sub = await r.request('sub', { topic: 'new' });
    const topic = sub.topic;
    const m = r.mark();
    const big = JSON.stringify({ pub: { id: 'big1', topic, content: 'x'.repeat(max + 1024) } });
    assert.ok(Buffer.byteLength(big) > max);
    r.send(big);
    let got;
    try {
      got = await r.waitFor(p => p.ctrl && p.ctrl.code === 413, { since: m, timeout: 10000, what: 'ctrl 413' });
    } catch (e) {
      assert.fail(`oversized frame (${big.length} bytes > maxMessageSize ${max}) must get ctrl 413; ` +
        `close: ${j(r.closeInfo)}; ${e.message}`);
    }
    assert.equal(got.ctrl.code, 413, j(got));
    // The oversized message was not stored.
    if (!r.closeInfo) {
      const ok = await r.request('pub', { topic, content: 'small' });
      assert.equal(ok.code, 202, j(ok));
      assert.equal(ok.params.seq, 1, `the oversized pub must not have been stored: ${j(ok)}`);
    }
  });

  test('second login on the same session gets 409', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    const login = uniqueLogin('twice');
    const password = uniquePassword();
    const acc = await r.signUp(login, password);
    assert.equal(acc.code, 200);
    const again = await r.loginBasic(login, password);
    assert.equal(again.code, 409, `already authenticated: ${j(again)}`);
  });

  test('{pub} to a topic the session is not attached to gets 409', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    await r.signUp(uniqueLogin('att'), uniquePassword());
    const sub = await r.request('sub', { topic: 'new' });
    assert.equal(sub.code, 200);
    const topic = sub.topic;
    const leave = await r.request('leave', { topic });
    assert.equal(leave.code, 200, j(leave));
    const p = await r.request('pub', { topic, content: 'x' });
    assert.equal(p.code, 409, `pub after leave: ${j(p)}`);
    // Subscribing twice is 304 (already subscribed) - re-attach first.
    const s1 = await r.request('sub', { topic });
    assert.equal(s1.code, 200, j(s1));
    const s2 = await r.request('sub', { topic });
    assert.equal(s2.code, 304, `second sub while attached: ${j(s2)}`);
  });

  test('{hi} with an unsupported old version gets 505', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    const ctrl = await r.request('hi', { ver: '0.10' });
    assert.equal(ctrl.code, 505, `hi ver 0.10: ${j(ctrl)}`);
  });

  test('network probe: text frame "1" is answered with "0"', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    const m = r.mark();
    r.send('1');
    await r.waitFor(p => p._unparsed === '0', { since: m, what: 'probe answer "0"' });
    await sleep(10);
  });

  test('the data of a {pub} carries topic, from, ts, seq and content', { timeout: TEST_TIMEOUT_MS }, async t => {
    const r = await openRaw(t, srv.host);
    await r.hi();
    const acc = await r.signUp(uniqueLogin('fmt'), uniquePassword());
    const uid = acc.params.user;
    const sub = await r.request('sub', { topic: 'new', set: { desc: { public: { fn: 'fmt' } } } });
    assert.equal(sub.params && sub.params.tmpname, 'new', `params.tmpname: ${j(sub)}`);
    assert.ok(sub.params.acs && sub.params.acs.mode && sub.params.acs.mode.includes('O'), `acs: ${j(sub.params)}`);
    const topic = sub.topic;
    const m = r.mark();
    const head = { mime: 'text/x-drafty' };
    const content = { txt: 'hello world', fmt: [{ at: 6, len: 5, tp: 'ST' }] };
    const p = await r.request('pub', { topic, head, content });
    assert.equal(p.code, 202);
    assert.equal(p.text, 'accepted', j(p));
    const d = await r.waitFor(x => x.data && x.data.seq === p.params.seq, { since: m, what: 'data' });
    assert.equal(d.data.topic, topic);
    assert.equal(d.data.from, uid);
    assert.match(String(d.data.ts), RFC3339_MS, j(d));
    assert.deepEqual(d.data.content, content);
    assert.equal(d.data.head && d.data.head.mime, 'text/x-drafty', j(d));
    // A client-supplied head.sender is stripped.
    const m2 = r.mark();
    const p2 = await r.request('pub', { topic, head: { sender: 'usrFAKEFAKEFAK' }, content: 'spoof' });
    const d2 = await r.waitFor(x => x.data && x.data.seq === p2.params.seq, { since: m2, what: 'data 2' });
    assert.ok(!d2.data.head || d2.data.head.sender === undefined || d2.data.head.sender !== 'usrFAKEFAKEFAK',
      `client-supplied head.sender must be stripped: ${j(d2)}`);
  });
});
