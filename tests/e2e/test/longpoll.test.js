'use strict';
// Long polling specifics: an idle poll ends empty after the server's poll timeout and the session carries on.
// Slow (about half a minute); skip with E2E_SKIP_SLOW=1.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, createGroup, joinTopic } = require('../lib/fixtures');
const { TRANSPORTS, sleep, j } = require('../lib/common');

const IDLE_MS = Number(process.env.E2E_LP_IDLE_MS || 30000);
const skip = process.env.E2E_SKIP_SLOW ? 'E2E_SKIP_SLOW is set' : !TRANSPORTS.includes('lp') ? 'lp not selected' : false;

let srv;
before(async () => { if (!skip) srv = await startServer(); });
after(async () => { if (srv) await srv.stop(); });

test(`lp: a session idle for ${IDLE_MS / 1000} s (longer than one poll) still receives messages`,
  { timeout: IDLE_MS + 60000, skip }, async t => {
    const a = await newUser(t, srv.host, 'ws', 'ia');
    const b = await newUser(t, srv.host, 'lp', 'ib');
    const grp = await createGroup(a, 'idle lp');
    await joinTopic(b, grp.name);
    let disconnected = null;
    const prev = b.tn.onDisconnect;
    b.tn.onDisconnect = err => { disconnected = err; if (prev) prev(err); };
    await sleep(IDLE_MS);
    assert.equal(disconnected, null, `the LP session dropped while idle: ${disconnected && disconnected.message}`);
    const mark = b.mark();
    const ctrl = await a.publish(grp, 'wake up');
    const d = await b.waitData(grp.name, x => x.seq === ctrl.params.seq, { since: mark });
    assert.equal(d.content, 'wake up', j(d));
    // And the idle session can still send.
    const topic = b.tn.getTopic(grp.name);
    const c2 = await b.publish(topic, 'awake');
    assert.equal(c2.code, 202, j(c2));
  });
