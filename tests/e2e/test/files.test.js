'use strict';
// Out-of-band files with the real tinode-sdk: LargeFileHelper uploads a photo (multipart, X-Tinode-Auth), a Drafty
// image message references it (the SDK puts the entity's ref into extra.attachments), the other party downloads
// it with the SDK's authorizeURL form and gets the same bytes (SHA-256), a range reads a slice, a stranger gets
// 404, an avatar set with setMeta is readable by everyone, and a 100 MiB upload and download go through while the
// server's peak resident memory grows by at most 16 MiB (the bytes stream; nothing holds the whole file).
// File security: on a server scanning with ClamAV (clamd at PALAVER_TEST_CLAMD, which scripts/lib/services.sh
// start_clamd runs with the EICAR test signature; in the scale-out run, the nodes under test, scanning through
// Kafka's im.file.security), the EICAR file is blocked (451) and the other party is told `file.unavailable`,
// while a clean file is served once scanned (503 FILE_PENDING with Retry-After until then).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const { startServer, isExternal } = require('../lib/server');
const { newUser } = require('../lib/fixtures');
const { Drafty } = require('tinode-sdk');
const { API_KEY, TEST_TIMEOUT_MS, j } = require('../lib/common');

let srv;

before(async () => {
  srv = await startServer();
});
after(async () => {
  if (srv) await srv.stop();
});

const sha256 = buf => crypto.createHash('sha256').update(buf).digest('hex');

/** GET `path` (an authorizeURL result or a bare path) with optional headers: {status, headers, body: Buffer}. */
async function fetchFile(path, headers = {}) {
  const resp = await fetch(`http://${srv.host}${path}`, { headers });
  return { status: resp.status, headers: resp.headers, body: Buffer.from(await resp.arrayBuffer()) };
}

/** The server's peak resident set (VmHWM) in KiB, from /proc. */
function peakRssKib() {
  const status = fs.readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]);
}

/**
 * Streams a multipart upload of `size` bytes (1 MiB chunks, the same pseudo-random bytes `chunk(i)` gives) as
 * LargeFileHelper would send it, without holding it in this process either. Resolves the parsed reply.
 */
function streamUpload(token, size, chunk) {
  const boundary = '----e2e' + crypto.randomUUID();
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n');
  const tail = Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="id"\r\n\r\nbig\r\n--${boundary}--\r\n`);
  const [hostname, port] = srv.host.split(':');
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname, port: Number(port), path: '/v0/file/u/', method: 'POST',
      headers: {
        'X-Tinode-APIKey': API_KEY, 'X-Tinode-Auth': `Token ${token}`,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        'Content-Length': head.length + size + tail.length,
      },
    }, res => {
      const parts = [];
      res.on('data', c => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }));
    });
    req.on('error', reject);
    let i = 0;
    const pump = () => {
      while (i * (1 << 20) < size) {
        const ok = req.write(chunk(i++));
        if (!ok) return req.once('drain', pump);
      }
      req.end(tail);
      return undefined;
    };
    req.write(head);
    pump();
  });
}

describe('files', { skip: isExternal() && 'reads the server process memory' }, () => {
  test('LargeFileHelper upload, a Drafty image attachment, download by the other party only, avatar',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      const a = await newUser(t, srv.host, 'ws', 'fa');
      const b = await newUser(t, srv.host, 'ws', 'fb');
      const c = await newUser(t, srv.host, 'ws', 'fc');
      assert.equal(a.tn.getServerParam('maxFileUploadSize'), 100 * 1024 * 1024, 'advertised in {hi}');

      const photo = crypto.randomBytes(300 * 1024);
      let progress = 0;
      const url = await a.tn.getLargeFileHelper().upload(new Blob([photo], { type: 'image/jpeg' }), undefined,
        p => { progress = p; });
      assert.match(url, /^\/v0\/file\/s\/[A-Za-z0-9_-]{22}\.jpg$/, j(url));
      assert.ok(progress >= 0, 'the progress callback is callable');

      // A's P2P topic with B; an image message whose entity refers to the upload.
      const pA = a.tn.getTopic(b.uid());
      await pA.subscribe(pA.startMetaQuery().withDesc().build());
      const content = Drafty.insertImage(null, 0, {
        mime: 'image/jpeg', refurl: url, width: 640, height: 480, filename: 'cat.jpg', size: photo.length,
      });
      const since = a.mark();
      await pA.publishMessage(pA.createMessage(content, false));
      const sent = a.received(p => p.ctrl && p.ctrl.topic === b.uid() && p.ctrl.code === 202, since);
      assert.equal(sent.length, 1, `the message is accepted: ${j(a.packets.slice(since))}`);

      // B reads it the way the web app does (authorizeURL puts the credentials in the query).
      const got = await fetchFile(b.tn.authorizeURL(url));
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('content-type'), 'image/jpeg');
      assert.equal(sha256(got.body), sha256(photo), 'the same bytes');
      const part = await fetchFile(b.tn.authorizeURL(url), { Range: 'bytes=1000-1999' });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 1000-1999/${photo.length}`);
      assert.ok(part.body.equals(photo.subarray(1000, 2000)));
      // C is in no topic that references it: 404, as for a file that does not exist.
      const refused = await fetchFile(c.tn.authorizeURL(url));
      assert.equal(refused.status, 404, refused.body.toString());
      assert.equal(JSON.parse(refused.body).ctrl.code, 404);
      assert.equal((await fetchFile(url)).status, 403, 'no API key, no file');

      // An avatar: uploaded for `me`, named by setMeta; every signed-in user may read it.
      const face = crypto.randomBytes(20 * 1024);
      const faceUrl = await a.tn.getLargeFileHelper().upload(new Blob([face], { type: 'image/png' }), 'me');
      const me = await a.subscribeMe();
      await me.setMeta({ desc: { public: { fn: 'A', photo: { ref: faceUrl, type: 'png' } } }, attachments: [faceUrl] });
      const seen = await fetchFile(c.tn.authorizeURL(faceUrl));
      assert.equal(seen.status, 200);
      assert.equal(sha256(seen.body), sha256(face));
    });

  test('a 100 MiB upload and download stream through with bounded server memory', { timeout: TEST_TIMEOUT_MS },
    async t => {
      const a = await newUser(t, srv.host, 'ws', 'fbig');
      const size = 100 * 1024 * 1024;
      const seed = crypto.randomBytes(1 << 20);
      const chunk = i => { const b = Buffer.from(seed); b.writeUInt32LE(i, 0); return b; };
      const want = crypto.createHash('sha256');
      for (let i = 0; i * (1 << 20) < size; i++) want.update(chunk(i));
      const before = peakRssKib();
      const up = await streamUpload(a.token, size, chunk);
      assert.equal(up.status, 200, j(up.body));
      const url = up.body.ctrl.params.url;
      // Download, hashing as it arrives.
      const resp = await fetch(`http://${srv.host}${a.tn.authorizeURL(url)}`);
      assert.equal(resp.status, 200);
      assert.equal(resp.headers.get('content-length'), String(size));
      const got = crypto.createHash('sha256');
      for await (const part of resp.body) got.update(part);
      assert.equal(got.digest('hex'), want.digest('hex'), 'the 100 MiB read back byte for byte');
      const grew = peakRssKib() - before;
      t.diagnostic(`server peak RSS grew by ${grew} KiB over a 100 MiB upload and download`);
      assert.ok(grew <= 16 * 1024, `peak RSS grew by ${grew} KiB (at most 16 MiB)`);
    });
});

/** The EICAR anti-virus test file, put together at run time so that this source is not itself a match. */
const EICAR = Buffer.from(['X5O!P%@AP[4\\PZX54(P^)7CC)7}$', 'EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*'].join(''));

describe('file security', () => {
  let scanning;
  before(async () => {
    // The scale-out run's nodes scan already; on the embedded run, a server of this suite's own does.
    const clamd = process.env.PALAVER_TEST_CLAMD || 'tcp://127.0.0.1:13310';
    scanning = isExternal() ? srv : await startServer({ env: { PALAVER_FILES__SCAN__CLAMD: clamd } });
  });
  after(async () => {
    if (scanning && scanning !== srv) await scanning.stop();
  });

  test('ClamAV blocks the EICAR file, the reader hears file.unavailable, a clean file is served once scanned',
    { timeout: TEST_TIMEOUT_MS }, async t => {
      assert.equal(EICAR.length, 68);
      const a = await newUser(t, scanning.host, 'ws', 'sa');
      const b = await newUser(t, scanning.host, 'ws', 'sb');
      const pA = a.tn.getTopic(b.uid());
      await pA.subscribe(pA.startMetaQuery().withDesc().build());
      const pB = b.tn.getTopic(a.uid());
      await pB.subscribe(pB.startMetaQuery().withDesc().build());

      const helper = a.tn.getLargeFileHelper();
      const bad = await helper.upload(new Blob([EICAR], { type: 'application/octet-stream' }));
      const clean = crypto.randomBytes(2 * 1024 * 1024);
      const good = await helper.upload(new Blob([clean], { type: 'application/pdf' }));
      let content = Drafty.attachFile(null, { mime: 'application/octet-stream', filename: 'eicar.com', refurl: bad,
        size: EICAR.length });
      content = Drafty.attachFile(content, { mime: 'application/pdf', filename: 'report.pdf', refurl: good,
        size: clean.length });
      const since = b.mark();
      await pA.publishMessage(pA.createMessage(content, false));

      const told = await b.waitInfo(a.uid(), i => i.event === 'file.unavailable', { since });
      assert.equal(told.payload.url, bad, j(told));
      assert.equal(told.payload.status, 'blocked', j(told));
      for (const c of [a, b]) {
        const resp = await fetch(`http://${scanning.host}${c.tn.authorizeURL(bad)}`);
        assert.equal(resp.status, 451, 'blocked for everyone, its uploader too');
        assert.equal((await resp.json()).ctrl.code, 451);
      }

      // The clean file: 503 with a retry hint while pending, then the same bytes.
      const deadline = Date.now() + 20000;
      for (;;) {
        const resp = await fetch(`http://${scanning.host}${b.tn.authorizeURL(good)}`);
        if (resp.status === 200) {
          assert.equal(sha256(Buffer.from(await resp.arrayBuffer())), sha256(clean));
          break;
        }
        assert.equal(resp.status, 503, `pending or served, not ${resp.status}`);
        assert.equal(resp.headers.get('retry-after'), '2');
        assert.ok(Date.now() < deadline, 'the clean file was never served');
        await new Promise(r => setTimeout(r, 200));
      }
    });
});
