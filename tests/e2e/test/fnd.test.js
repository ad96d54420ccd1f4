'use strict';
// Tag search through the `fnd` topic, the way tinode-sdk / the web app do it:
// subscribe fnd, set desc.public to the query string, then {get what:"sub"}.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, createGroup } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, rand, j } = require('../lib/common');

let srv;
before(async () => { srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

/** Runs one fnd search and resolves the array of sub entries found (empty on ctrl 204). */
async function search(c, query) {
  const fnd = c.tn.getFndTopic();
  if (!fnd.isSubscribed()) {
    const ctrl = await fnd.subscribe();
    assert.ok(ctrl && ctrl.code >= 200 && ctrl.code < 300, `sub fnd: ${j(ctrl)}`);
  }
  await fnd.setMeta({ desc: { public: query } });
  const mark = c.mark();
  const res = await fnd.getMeta(fnd.startMetaQuery().withSub().build());
  // res is the {meta} (with sub) or the ctrl 204 {what:"sub"} when nothing matched.
  if (res && Array.isArray(res.sub)) return { subs: res.sub, fnd, raw: res };
  assert.ok(res && res.code === 204, `empty search must be ctrl 204: ${j(res)}`);
  assert.equal(res.params && res.params.what, 'sub', `ctrl 204 params.what: ${j(res)}`);
  assert.equal(c.received(p => p.meta && p.meta.topic === 'fnd', mark).length, 0);
  return { subs: [], fnd, raw: res };
}

for (const transport of TRANSPORTS) {
  describe(`fnd over ${transport}`, () => {
    test(`${transport}: a user with a tag is found by another user`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const tag = `findme${rand(4)}`;
      const a = await newUser(t, srv.host, transport, 'fa', { public: { fn: 'Findable A' }, tags: [tag] });
      const b = await newUser(t, srv.host, transport, 'fb');

      const { subs, fnd } = await search(b, tag);
      // Tinode sets both `user` and `topic` (the usr… id) on a found user; accept either.
      const hit = subs.find(s => s.user === a.uid() || s.topic === a.uid());
      assert.ok(hit, `search for ${tag} must return A (${a.uid()}): ${j(subs)}`);
      assert.deepEqual(hit.public, { fn: 'Findable A' }, `result public: ${j(hit)}`);
      assert.equal(subs.length, 1, `only A has this tag: ${j(subs)}`);
      // The SDK indexes the results by user id.
      const seen = [];
      fnd.contacts(s => seen.push(s.topic || s.user));
      assert.ok(seen.includes(a.uid()), `fnd.contacts(): ${j(seen)}`);

      // An unknown tag finds nothing.
      const none = await search(b, `nosuchtag${rand(4)}`);
      assert.equal(none.subs.length, 0, `unknown tag: ${j(none.subs)}`);
    });

    test(`${transport}: a group with a tag is found`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const tag = `grpfind${rand(4)}`;
      const a = await newUser(t, srv.host, transport, 'ga');
      const grp = await createGroup(a, 'Findable group', [tag]);
      const b = await newUser(t, srv.host, transport, 'gb');
      const { subs } = await search(b, tag);
      const hit = subs.find(s => s.topic === grp.name);
      assert.ok(hit, `search for ${tag} must return ${grp.name}: ${j(subs)}`);
      assert.deepEqual(hit.public, { fn: 'Findable group' }, j(hit));
    });
  });
}
