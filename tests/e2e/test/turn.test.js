'use strict';
// The TURN REST credentials in the {hi} reply's iceServers, checked by a real coturn: a server whose
// [[calls.ice_servers]] entry carries coturn's static-auth-secret hands each session a username and credential
// that `turnutils_uclient` can allocate a relay with; a tampered credential, a username whose expiry was moved,
// and a credential past its expiry are refused by coturn.
//
// Needs a coturn started by scripts/lib/services.sh's start_coturn, which exports PALAVER_TEST_TURN_PORT and
// PALAVER_TEST_TURN_SECRET, and coturn's `turnutils_uclient`. The servers are spawned here with their own
// configuration file, so the file is skipped against an external server (PALAVER_URL).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, isExternal } = require('../lib/server');
const { newUser } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, sleep, j } = require('../lib/common');

const TURN_PORT = process.env.PALAVER_TEST_TURN_PORT;
const TURN_SECRET = process.env.PALAVER_TEST_TURN_SECRET;
const UCLIENT = 'turnutils_uclient';
// uclient sends its packets for about 6 s after the allocation; a hung one must not hold the test.
const UCLIENT_TIMEOUT_MS = 30000;

function hasUclient() {
  return (process.env.PATH || '').split(path.delimiter).some(d => {
    try {
      fs.accessSync(path.join(d, UCLIENT), fs.constants.X_OK);
      return true;
    } catch (e) {
      return false;
    }
  });
}

function skipReason() {
  if (isExternal()) return 'PALAVER_URL is set: these tests configure their own servers';
  if (!TURN_PORT || !TURN_SECRET) {
    return 'PALAVER_TEST_TURN_PORT / PALAVER_TEST_TURN_SECRET are not set: run start_coturn ' +
      '(scripts/lib/services.sh) first';
  }
  if (!hasUclient()) return `${UCLIENT} is not on PATH (Debian package coturn)`;
  return false;
}
const skip = skipReason();

const TURN_URL = `turn:127.0.0.1:${TURN_PORT}?transport=udp`;

/** A configuration file with one TURN server on coturn's secret, and the given credential lifetime. */
function writeConfig(dir, ttlSeconds) {
  const file = path.join(dir, `turn-${ttlSeconds}.toml`);
  fs.writeFileSync(file, [
    '# Written by tests/e2e/test/turn.test.js.',
    '[calls]',
    `turn_credential_ttl_seconds = ${ttlSeconds}`,
    '',
    '[[calls.ice_servers]]',
    `urls = [${JSON.stringify(TURN_URL)}]`,
    `secret = ${JSON.stringify(TURN_SECRET)}`,
    '',
  ].join('\n'));
  return file;
}

/**
 * Runs turnutils_uclient against the local coturn with a client-to-client relay. Resolves {code, out}; never
 * rejects on a non-zero exit (that is what some tests expect).
 */
function uclient(username, credential) {
  return new Promise((resolve, reject) => {
    execFile(UCLIENT, ['-p', String(TURN_PORT), '-u', username, '-w', credential, '-y', '127.0.0.1'],
      { timeout: UCLIENT_TIMEOUT_MS }, (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number' && !err.killed) {
          reject(new Error(`cannot run ${UCLIENT}: ${err.message}`));
          return;
        }
        const code = err ? (err.killed ? `killed after ${UCLIENT_TIMEOUT_MS} ms` : err.code) : 0;
        resolve({ code, out: `${stdout}${stderr}` });
      });
  });
}

/** The relay counters of a uclient report: the last "tot_send_msgs=N, tot_recv_msgs=M" line. */
function relayed(out) {
  const all = [...out.matchAll(/tot_send_msgs=(\d+), tot_recv_msgs=(\d+)/g)];
  if (!all.length) return null;
  const last = all[all.length - 1];
  return { sent: Number(last[1]), received: Number(last[2]) };
}

/** The one TURN entry of the {hi} reply's iceServers, checked for shape. */
function turnEntry(client) {
  const ice = client.tn.getServerParam('iceServers');
  assert.ok(Array.isArray(ice) && ice.length === 1, `{hi} params.iceServers: one entry expected: ${j(ice)}`);
  const entry = ice[0];
  assert.deepEqual(entry.urls, [TURN_URL], `iceServers[0].urls: ${j(entry)}`);
  assert.equal(typeof entry.username, 'string', `iceServers[0].username: ${j(entry)}`);
  assert.equal(typeof entry.credential, 'string', `iceServers[0].credential: ${j(entry)}`);
  assert.ok(!('secret' in entry), `the secret must not reach clients: ${j(entry)}`);
  return entry;
}

function hmac(username) {
  return crypto.createHmac('sha1', TURN_SECRET).update(username).digest('base64');
}

function assertRelays(res, what) {
  assert.equal(res.code, 0, `${what}: ${UCLIENT} must succeed; output:\n${res.out}`);
  const r = relayed(res.out);
  assert.ok(r && r.received > 0 && r.received === r.sent,
    `${what}: every packet must come back through the relay (${j(r)}); output:\n${res.out}`);
  assert.match(res.out, /Total lost packets 0 /, `${what}: no loss expected; output:\n${res.out}`);
}

function assertRefused(res, what) {
  assert.notEqual(res.code, 0, `${what}: coturn must refuse the allocation; output:\n${res.out}`);
  assert.match(res.out, /Cannot complete Allocation/,
    `${what}: the allocation must be what fails; output:\n${res.out}`);
}

describe('TURN REST credentials against coturn', { skip }, () => {
  let dir;
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-e2e-turn-')); });
  after(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

  test('the {hi} credentials allocate a relay; tampered ones do not', { timeout: TEST_TIMEOUT_MS }, async t => {
    const ttl = 3600;
    const srv = await startServer({ forceSpawn: true, extraArgs: ['--config', writeConfig(dir, ttl)] });
    t.after(() => srv.stop());
    const c = await newUser(t, srv.host, 'ws', 'turn');
    const entry = turnEntry(c);

    const m = /^(\d+):(.+)$/.exec(entry.username);
    assert.ok(m, `username must be <unix expiry>:<session>: ${j(entry)}`);
    const expiry = Number(m[1]);
    const now = Math.floor(Date.now() / 1000);
    assert.ok(expiry > now + ttl - 60 && expiry <= now + ttl + 1,
      `expiry ${expiry} must be about now (${now}) + ${ttl} s: ${j(entry)}`);
    assert.equal(entry.credential, hmac(entry.username), `credential must be base64(HMAC-SHA1(secret, username))`);

    assertRelays(await uclient(entry.username, entry.credential), 'the credentials from {hi}');

    // One character of the credential changed.
    const flipped = (entry.credential[0] === 'A' ? 'B' : 'A') + entry.credential.slice(1);
    assertRefused(await uclient(entry.username, flipped), 'a tampered credential');
    // The expiry moved later with the credential kept: the expiry is part of what is signed.
    assertRefused(await uclient(`${expiry + 3600}:${m[2]}`, entry.credential), 'a username with a later expiry');
  });

  test('credentials past their expiry are refused', { timeout: TEST_TIMEOUT_MS }, async t => {
    const srv = await startServer({ forceSpawn: true, extraArgs: ['--config', writeConfig(dir, 1)] });
    t.after(() => srv.stop());
    const c = await newUser(t, srv.host, 'ws', 'turnexp');
    const entry = turnEntry(c);
    // Correctly signed, so the only thing wrong with it after the wait is its age.
    assert.equal(entry.credential, hmac(entry.username), `credential must be base64(HMAC-SHA1(secret, username))`);
    const expiry = Number(entry.username.split(':')[0]);
    const wait = Math.max(0, (expiry + 2) * 1000 - Date.now());
    await sleep(wait);
    assertRefused(await uclient(entry.username, entry.credential), 'an expired credential');
  });
});
