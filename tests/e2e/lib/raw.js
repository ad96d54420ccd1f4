'use strict';
// A raw WebSocket client speaking Tinode's JSON protocol directly (no SDK), and raw long-poll helpers.

const http = require('node:http');
const WebSocket = require('ws');
const { API_KEY, WAIT_MS, b64, j } = require('./common');

class RawWs {
  constructor(ws, name) {
    this.ws = ws;
    this.name = name || 'raw';
    this.msgs = []; // {pkt, text, at}
    this.events = []; // ordered log of 'msg' and 'close' events, for ordering checks
    this.waiters = [];
    this.closeInfo = null;
    this._nextId = 1;
    this.closed = new Promise(resolve => {
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: reason ? reason.toString() : '' };
        this.events.push({ kind: 'close', ...this.closeInfo });
        resolve(this.closeInfo);
        for (const w of this.waiters.slice()) w.onClose(this.closeInfo);
      });
    });
    ws.on('error', err => {
      this.lastError = err;
    });
    ws.on('message', (data, isBinary) => {
      const text = data.toString('utf8');
      let pkt = null;
      try {
        pkt = JSON.parse(text);
      } catch (e) {
        pkt = null;
      }
      if (pkt === null || typeof pkt !== 'object') pkt = { _unparsed: text };
      const rec = { pkt, text, binary: isBinary, at: Date.now() };
      this.msgs.push(rec);
      this.events.push({ kind: 'msg', pkt });
      for (const w of this.waiters.slice()) {
        let ok = false;
        try { ok = w.pred(pkt); } catch (e) { ok = false; }
        if (ok) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(pkt);
        }
      }
    });
  }

  /**
   * Opens a WebSocket to ws://host/v0/channels. Resolves a RawWs on open; rejects on error, with `statusCode`
   * set on the error when the server answered the upgrade with a plain HTTP response.
   */
  static open(host, { apiKey = API_KEY, path = '/v0/channels', name, timeout = WAIT_MS, headers } = {}) {
    const q = apiKey === null ? '' : `?apikey=${encodeURIComponent(apiKey)}`;
    const url = `ws://${host}${path}${q}`;
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers, handshakeTimeout: timeout });
      let done = false;
      const fail = err => {
        if (done) return;
        done = true;
        try { ws.terminate(); } catch (e) { /* ignore */ }
        reject(err);
      };
      ws.on('unexpected-response', (req, res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', c => { body += c; });
        res.on('end', () => {
          const err = new Error(`WebSocket upgrade refused: HTTP ${res.statusCode} ${body}`);
          err.statusCode = res.statusCode;
          err.body = body;
          fail(err);
        });
        res.on('error', () => fail(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode })));
      });
      ws.once('error', err => fail(err));
      const raw = new RawWs(ws, name);
      ws.once('open', () => {
        if (done) return;
        done = true;
        resolve(raw);
      });
    });
  }

  nextId() {
    return String(this._nextId++);
  }

  /** Sends an object as JSON, or a string verbatim. */
  send(msg) {
    this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  mark() {
    return this.msgs.length;
  }

  received(pred, since = 0) {
    return this.msgs.slice(since).map(m => m.pkt).filter(p => {
      try { return pred(p); } catch (e) { return false; }
    });
  }

  /** Waits for a packet matching `pred` (already received since `since`, or arriving within `timeout`). */
  waitFor(pred, { since = 0, timeout = WAIT_MS, what = 'a matching packet' } = {}) {
    const existing = this.received(pred, since);
    if (existing.length > 0) return Promise.resolve(existing[0]);
    return new Promise((resolve, reject) => {
      const w = {};
      const recent = () => this.msgs.slice(since).slice(-10).map(m => m.text.slice(0, 500)).join('\n  ') || '(none)';
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`${this.name}: timeout after ${timeout} ms waiting for ${what}; received since mark:\n  ${recent()}`));
      }, timeout);
      w.pred = pred;
      w.resolve = p => { clearTimeout(timer); resolve(p); };
      w.onClose = info => {
        clearTimeout(timer);
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new Error(`${this.name}: socket closed (code ${info.code} ${info.reason}) while waiting for ${what}; ` +
          `received since mark:\n  ${recent()}`));
      };
      if (this.closeInfo) {
        w.onClose(this.closeInfo);
        return;
      }
      this.waiters.push(w);
    });
  }

  /** Waits for the ctrl whose id is `id`. */
  waitCtrl(id, opts = {}) {
    return this.waitFor(p => p.ctrl && p.ctrl.id === id, { what: `ctrl id=${id}`, ...opts }).then(p => p.ctrl);
  }

  /** Sends `{kind: body}` with a fresh id and resolves the ctrl answering it. */
  async request(kind, body = {}, opts = {}) {
    const id = body.id || this.nextId();
    const since = this.mark();
    this.send({ [kind]: { id, ...body } });
    return this.waitCtrl(id, { since, ...opts });
  }

  hi(extra = {}) {
    return this.request('hi', { ver: '0.25.3', ua: 'palaver-e2e-raw/1.0', ...extra });
  }

  /** {acc user:"new" scheme:"basic" login:true}. */
  signUp(login, password, extra = {}) {
    return this.request('acc', {
      user: 'new', scheme: 'basic', secret: b64(`${login}:${password}`), login: true,
      desc: { public: { fn: `raw ${login}` } }, ...extra,
    });
  }

  loginBasic(login, password) {
    return this.request('login', { scheme: 'basic', secret: b64(`${login}:${password}`) });
  }

  loginToken(token) {
    return this.request('login', { scheme: 'token', secret: token });
  }

  close() {
    try {
      if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    } catch (e) { /* ignore */ }
    setTimeout(() => { try { this.ws.terminate(); } catch (e) { /* ignore */ } }, 1000).unref();
  }
}

/** Opens a raw WS client that is closed when test `t` ends. */
async function openRaw(t, host, opts) {
  const r = await RawWs.open(host, opts);
  if (t && typeof t.after === 'function') t.after(() => r.close());
  return r;
}

/**
 * One raw HTTP request. Resolves {status, headers, body}. `body` may be a string.
 */
function httpRequest(host, { method = 'GET', path = '/', body, headers = {}, timeout = WAIT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const [hostname, port] = host.split(':');
    const req = http.request({ hostname, port: Number(port), method, path, headers, timeout, agent: false }, res => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', c => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`HTTP ${method} ${path}: timeout after ${timeout} ms`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** An admin API call with the bearer `token`; resolves {status, body} with the body parsed when it is JSON. */
async function adminRequest(host, token, method, urlPath, body) {
  const headers = { Authorization: `Bearer ${token}` };
  let payload;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await httpRequest(host, { method, path: urlPath, headers, body: payload });
  let parsed = res.body;
  try { parsed = res.body ? JSON.parse(res.body) : null; } catch (e) { /* keep the text */ }
  return { status: res.status, body: parsed };
}

module.exports = { RawWs, openRaw, httpRequest, adminRequest, j };
