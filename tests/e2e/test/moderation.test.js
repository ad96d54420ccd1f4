'use strict';
// Content moderation through the WebAssembly moderation plugin, with the real tinode-sdk. Runs when the suite
// is started with E2E_MODERATION=1 and PALAVER_PLUGINS__DIR pointing at a directory holding the built
// moderation plugin (scripts/test-all.sh does both; its default settings refuse the word "forbidden").

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, createGroup, joinTopic } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, sleep, j } = require('../lib/common');

const enabled = process.env.E2E_MODERATION === '1';

let srv;
before(async () => { if (enabled) srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

for (const transport of TRANSPORTS) {
  describe(`moderation plugin over ${transport}`, { skip: !enabled && 'E2E_MODERATION is not 1' }, () => {
    test(`${transport}: a message with a forbidden word is refused before it takes a seq`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ma');
        const b = await newUser(t, srv.host, transport, 'mb');
        const grp = await createGroup(a, 'moderated');
        await joinTopic(b, grp.name);
        const mB = b.mark();

        const ok = await a.tn.publishMessage(grp.createMessage('hello there', false));
        assert.equal(ok.code, 202, j(ok));

        const refused = await a.tn.publishMessage(grp.createMessage('this is forbidden', false)).then(
          c => ({ resolved: c }), e => ({ rejected: e }));
        assert.ok(refused.rejected, `the SDK rejects the publish: ${j(refused)}`);
        assert.equal(refused.rejected.code, 422, j(refused.rejected));

        const next = await a.tn.publishMessage(grp.createMessage('and again fine', false));
        assert.equal(next.params.seq, ok.params.seq + 1, 'a refused message takes no seq');

        await b.waitData(grp.name, d => d.seq === next.params.seq, { since: mB });
        await sleep(200);
        const seen = b.dataOn(grp.name, mB).map(d => d.content);
        assert.ok(!seen.some(c => JSON.stringify(c).includes('forbidden')), `never delivered: ${j(seen)}`);
      });
  });
}
