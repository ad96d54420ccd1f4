'use strict';
// Serves the stock Tinode web app (npm tinode-webapp) and forwards /v0/ (HTTP and WebSocket upgrades) to a
// Palaver server, all on one origin: the app talks to the host it was loaded from (unless that is `localhost`,
// where it assumes localhost:6060), and Palaver serves no static files of its own.
//
// The app's index.html loads React, ReactDOM, react-intl and qrcodejs from a CDN, and fonts and a polyfill from
// other hosts; none is reachable from a test machine, so the page is rewritten to load the npm copies of the
// libraries (pinned in package.json) from /vendor/ and to drop the rest. A rewrite that no longer matches the
// app's page fails loudly rather than serving a page that cannot start.

const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');

const MODULES = path.resolve(__dirname, '..', 'node_modules');
const APP_DIR = path.join(MODULES, 'tinode-webapp');

// /vendor/<name> → the npm file that replaces the CDN's.
const VENDOR = {
  'react.js': path.join(MODULES, 'react/umd/react.production.min.js'),
  'react-dom.js': path.join(MODULES, 'react-dom/umd/react-dom.production.min.js'),
  'react-intl.js': path.join(MODULES, 'react-intl/react-intl.iife.js'),
  'qrcode.js': path.join(MODULES, 'qrcodejs/qrcode.min.js'),
};

/** A `<script>` tag loading `pkg` from the CDN the app's page names. */
function cdnScript(pkg) {
  return new RegExp(`<script[^>]*src="https://cdn\\.jsdelivr\\.net/npm/${pkg}@[^"]*"></script>`);
}

// Each pattern must match exactly once in index.html.
const REWRITES = [
  [cdnScript('react'), '<script src="vendor/react.js"></script>'],
  [cdnScript('react-dom'), '<script src="vendor/react-dom.js"></script>'],
  [cdnScript('react-intl'), '<script src="vendor/react-intl.js"></script>'],
  [cdnScript('qrcodejs'), '<script src="vendor/qrcode.js"></script>'],
  [/<script[^>]*src="https:\/\/polyfill[^"]*"><\/script>/, ''],
  [/<link rel="stylesheet" href="https:\/\/fonts\.googleapis\.com\/css\?[^"]*" \/>/, ''],
  [/<link rel="stylesheet" href="https:\/\/fonts\.googleapis\.com\/icon\?[^"]*" \/>/, ''],
  // Firebase (push) is configured by a file the app does not ship; without it desktop alerts stay off.
  [/<script src="firebase-init\.js"><\/script>/, ''],
];

function indexHtml() {
  let html = fs.readFileSync(path.join(APP_DIR, 'index.html'), 'utf8');
  for (const [re, to] of REWRITES) {
    const n = (html.match(new RegExp(re.source, 'g')) || []).length;
    if (n !== 1) throw new Error(`tinode-webapp index.html: expected one match of ${re}, found ${n}`);
    html = html.replace(re, to);
  }
  const left = html.match(/(src|href)="https?:\/\/[^"]*"/g);
  if (left && left.some(s => s.startsWith('src'))) {
    throw new Error(`tinode-webapp index.html still loads remote scripts: ${left.join(', ')}`);
  }
  return html;
}

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css',
  '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml', '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg', '.mp3': 'audio/mpeg', '.m4a': 'audio/mp4', '.map': 'application/json',
  '.woff2': 'font/woff2', '.ico': 'image/x-icon', '.webp': 'image/webp',
};

function sendFile(res, file) {
  fs.readFile(file, (err, body) => {
    if (err) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
    res.end(body);
  });
}

/** Forwards one HTTP request to the backend as it is, and its answer back. */
function proxyHttp(req, res, backend) {
  const [hostname, port] = backend.split(':');
  const up = http.request({ hostname, port: Number(port), method: req.method, path: req.url, headers: req.headers },
    upRes => {
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    });
  up.on('error', e => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`proxy error: ${e.message}`);
  });
  req.pipe(up);
}

/** Forwards a WebSocket upgrade as raw bytes: the request head as received, then both directions piped. */
function proxyUpgrade(req, socket, head, backend) {
  const [hostname, port] = backend.split(':');
  const up = net.connect(Number(port), hostname, () => {
    const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    up.write(lines.join('\r\n') + '\r\n\r\n');
    if (head && head.length) up.write(head);
    up.pipe(socket);
    socket.pipe(up);
  });
  const close = () => { up.destroy(); socket.destroy(); };
  up.on('error', close);
  socket.on('error', close);
  up.on('close', close);
  socket.on('close', close);
}

/**
 * Starts the app server on 127.0.0.1 (a free port) in front of `backend` ("host:port"). Resolves
 * {origin, host, close()}.
 */
async function startWebServer(backend) {
  const html = indexHtml();
  for (const f of Object.values(VENDOR)) {
    if (!fs.existsSync(f)) throw new Error(`missing ${f}: run npm ci in tests/e2e/webapp`);
  }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname.startsWith('/v0/')) {
      proxyHttp(req, res, backend);
      return;
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      res.writeHead(200, { 'content-type': TYPES['.html'], 'cache-control': 'no-store' });
      res.end(html);
      return;
    }
    if (url.pathname.startsWith('/vendor/')) {
      const f = VENDOR[url.pathname.slice('/vendor/'.length)];
      if (f) {
        sendFile(res, f);
        return;
      }
    }
    // Anything else is a file of the app; normalised so that `..` cannot leave its folder.
    const file = path.join(APP_DIR, path.normalize(decodeURIComponent(url.pathname)).replace(/^([/\\]|\.\.)+/, ''));
    if (!file.startsWith(APP_DIR + path.sep)) {
      res.writeHead(403);
      res.end();
      return;
    }
    sendFile(res, file);
  });
  server.on('upgrade', (req, socket, head) => {
    if (req.url.startsWith('/v0/')) {
      proxyUpgrade(req, socket, head, backend);
    } else {
      socket.destroy();
    }
  });
  const sockets = new Set();
  server.on('connection', s => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    host: `127.0.0.1:${port}`,
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise(resolve => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

module.exports = { startWebServer };
