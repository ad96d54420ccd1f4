'use strict';
// Offline push through the webhook provider, with a local receiver that checks every request's HMAC-SHA256
// signature: a user with a token registered by tinode-sdk's setDeviceToken gets exactly one push per message
// while not attached to the topic, none while attached, one per device with two devices, none once
// setDeviceToken(null) sent `␡`, and none in a topic where the user turned P off (muted).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { startServer, isExternal } = require('../lib/server');
const { newUser, secondDevice, createGroup, joinTopic } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, sleep, j } = require('../lib/common');

const SECRET = 'e2e-webhook-secret';
const got = [];
let hook;
let srv;
let configDir;

function startHook() {
  return new Promise(resolve => {
    const s = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', c => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const ts = req.headers['x-palaver-timestamp'];
        const want = 'sha256=' + crypto.createHmac('sha256', SECRET).update(`${ts}.`).update(body).digest('hex');
        if (req.method !== 'POST' || req.url !== '/push' || req.headers['x-palaver-signature'] !== want) {
          res.writeHead(401).end('{}');
          got.push({ bad: true, headers: req.headers });
          return;
        }
        got.push(JSON.parse(body.toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

const pushesTo = token => got.filter(p => p.device && p.device.token === token);

/** Waits until `token` got `n` pushes, then a little longer to see that no more come. */
async function expectPushes(token, n) {
  const deadline = Date.now() + 10000;
  while (pushesTo(token).length < n && Date.now() < deadline) await sleep(25);
  await sleep(400);
  const list = pushesTo(token);
  assert.equal(list.length, n, `pushes to ${token}: ${j(list)}`);
  assert.ok(!got.some(p => p.bad), `every push was signed: ${j(got.filter(p => p.bad))}`);
  return list;
}

before(async () => {
  if (isExternal()) return;
  hook = await startHook();
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-push-'));
  const file = path.join(configDir, 'push.toml');
  fs.writeFileSync(file, [
    '[push]', 'enabled = true', 'retry_backoff_ms = 10',
    '[push.webhook]', `url = "http://127.0.0.1:${hook.address().port}/push"`, `secret = "${SECRET}"`, '',
  ].join('\n'));
  srv = await startServer({ extraArgs: ['--config', file] });
});
after(async () => {
  if (srv) await srv.stop();
  if (hook) hook.close();
  if (configDir) fs.rmSync(configDir, { recursive: true, force: true });
});

for (const transport of TRANSPORTS) {
  describe(`offline push over ${transport}`, { skip: isExternal() && 'needs its own server configuration' }, () => {
    test(`${transport}: one push per message while not attached, one per device, none after ␡ or when muted`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'pa');
        const b = await newUser(t, srv.host, transport, 'pb');
        const tok1 = `tok1-${transport}-${crypto.randomUUID()}`;
        const tok2 = `tok2-${transport}-${crypto.randomUUID()}`;
        assert.ok(b.tn.setDeviceToken(tok1), 'the SDK sends {hi dev} on a logged-in connection');
        const grpA = await createGroup(a, 'push');
        const grpB = await joinTopic(b, grpA.name);
        await grpB.leave(false);
        await sleep(100);

        // Offline for the topic: exactly one push, with the locating fields and Tinode's push fields.
        const seq = (await a.publish(grpA, 'hello')).params.seq;
        const [p] = await expectPushes(tok1, 1);
        assert.equal(p.user, b.uid());
        assert.equal(p.silent, false);
        assert.deepEqual([p.data.what, p.data.topic, p.data.seq, p.data.xfrom, p.data.type, p.data.tenant_id],
          ['msg', grpA.name, String(seq), a.uid(), 'group_message', '1'], j(p));
        assert.equal(p.data.content, undefined, 'no text without push.preview');

        // Attached: none.
        const grpB2 = await joinTopic(b, grpA.name);
        await a.publish(grpA, 'seen live');
        await expectPushes(tok1, 1);

        // Two devices, neither attached: one push each.
        const b2 = await secondDevice(t, srv.host, transport, b);
        assert.ok(b2.tn.setDeviceToken(tok2));
        await grpB2.leave(false);
        await sleep(200);
        await a.publish(grpA, 'two devices');
        await expectPushes(tok1, 2);
        await expectPushes(tok2, 1);

        // setDeviceToken(null) sends `␡`: the second device's token is gone.
        assert.ok(b2.tn.setDeviceToken(null));
        await sleep(200);
        await a.publish(grpA, 'one device');
        await expectPushes(tok1, 3);
        await expectPushes(tok2, 1);

        // B turns P off in the group (muted): nothing.
        const grpB3 = await joinTopic(b, grpA.name);
        await grpB3.setMeta({ sub: { mode: 'JRW' } });
        await grpB3.leave(false);
        await sleep(200);
        await a.publish(grpA, 'muted');
        await expectPushes(tok1, 3);
      });
  });
}
