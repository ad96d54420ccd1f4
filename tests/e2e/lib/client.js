'use strict';
// A thin wrapper around the real tinode-sdk `Tinode` client: it records every packet that arrives from the wire
// (via `onMessage`, which the SDK calls synchronously before it resolves promises or routes to topics) and lets
// tests wait for a packet that matches a predicate, with a timeout.
//
// Note: topic-level callbacks (`topic.onData`, `topic.onInfo`) also fire for *local* events (the SDK routes the
// sender's own copy of a published message through onData, and synthesises {info what:"read"} for every received
// message), so tests that check what the server sent look at the recorded wire packets instead.

const { Tinode } = require('tinode-sdk');
const WebSocket = require('ws');
const XMLHttpRequest = require('xhr2');
const { indexedDB } = require('fake-indexeddb');
const { API_KEY, WAIT_MS, withTimeout, j } = require('./common');

// tinode-sdk 0.25.3 long polling never really stops: each completed poll starts the next one in a closure-local
// variable, so Connection.disconnect() aborts a stale poller while the live one keeps running, and when it completes
// the SDK opens the next poll with the URL it has just nulled: xhr2 throws ERR_INVALID_ARG_TYPE inside an HTTP
// callback (an uncaught exception that fails whatever test is running). GuardedXHR turns open(null) into a no-op and
// keeps track of in-flight requests, so Client.close() can abort the live poll of its own connection. Each LP client
// tags its URLs with an extra query parameter (`e2ec=<n>`, which the server must ignore) to find them.
const inflight = new Set();
class GuardedXHR extends XMLHttpRequest {
  open(method, url, ...rest) {
    if (url === null || url === undefined) {
      this._e2eDead = true;
      return undefined;
    }
    this._e2eUrl = String(url);
    return super.open(method, url, ...rest);
  }

  send(body) {
    if (this._e2eDead) return undefined;
    inflight.add(this);
    this.addEventListener('loadend', () => inflight.delete(this));
    if (typeof FormData !== 'undefined' && body instanceof FormData) {
      // xhr2 sends strings and buffers only; a browser encodes a FormData (LargeFileHelper's upload) itself.
      // Node's Response encodes it the same way, boundary and all, before the request goes out.
      const encoded = new Response(body);
      encoded.arrayBuffer().then(buf => {
        super.setRequestHeader('Content-Type', encoded.headers.get('content-type'));
        super.send(Buffer.from(buf));
      }, err => this.dispatchEvent({ type: 'error', error: err }));
      return undefined;
    }
    return super.send(body);
  }
}

function abortTagged(tag) {
  const re = new RegExp(`[?&]e2ec=${tag}(&|$)`);
  for (const x of [...inflight]) {
    if (x._e2eUrl && re.test(x._e2eUrl)) {
      inflight.delete(x);
      x.onreadystatechange = undefined;
      try { x.abort(); } catch (e) { /* ignore */ }
    }
  }
}

Tinode.setNetworkProviders(WebSocket, GuardedXHR);
// Required under Node: without an IndexedDB provider the constructor's deleteDatabase() throws and Node exits.
Tinode.setDatabaseProvider(indexedDB);

let clientSeq = 0;

// Note: the SDK fires some requests of its own without a .catch() (me._routePres() calls getMeta() on
// {pres what:"msg"|"acs"|"upd"|"tags"}, topic._routePres() on "upd"/"aux"/"acs", leaveDelayed()). If the server
// answers one of those with an error code, or not within 5 s (the SDK then rejects it with 504), the rejection is
// unhandled and node:test fails the running test with failureType 'unhandledRejection': that is a server bug.

class Client {
  /**
   * @param {string} host "host:port"
   * @param {object} [opts] {transport:'ws'|'lp', apiKey, name, device}
   */
  constructor(host, opts = {}) {
    this.host = host;
    this.transport = opts.transport || 'ws';
    this.seqNo = ++clientSeq;
    this.name = opts.name || `client${this.seqNo}`;
    this.packets = []; // every parsed packet received from the server, in arrival order
    this.waiters = [];
    this.disconnects = [];
    this.closed = false;
    this.tn = new Tinode({
      appName: 'palaver-e2e/1.0',
      host,
      // LP URLs are `…/lp?apikey=<key>&sid=…`: the tag rides after the key (see GuardedXHR).
      apiKey: (opts.apiKey || API_KEY) + (this.transport === 'lp' ? `&e2ec=${this.seqNo}` : ''),
      transport: this.transport,
      secure: false,
      platform: 'web',
      persist: false,
    });
    if (process.env.E2E_DEBUG) {
      this.tn.enableLogging(true, true);
    }
    // A device id rides in {hi dev} (set before connecting, so the first {hi} carries it): session control can
    // then close this device's sessions alone.
    if (opts.device) this.tn.setDeviceToken(opts.device);
    this.tn.onMessage = pkt => this._onPacket(pkt);
    this.tn.onDisconnect = err => {
      this.disconnects.push(err || new Error('disconnected'));
      for (const w of this.waiters.slice()) {
        if (w.onDisconnect) w.onDisconnect(err);
      }
    };
  }

  _onPacket(pkt) {
    this.packets.push(pkt);
    for (const w of this.waiters.slice()) {
      let ok = false;
      try {
        ok = w.pred(pkt);
      } catch (e) {
        ok = false;
      }
      if (ok) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(pkt);
      }
    }
  }

  /** Connects and waits for the {hi} reply (the SDK's onConnect). */
  async connect(timeoutMs = WAIT_MS) {
    const ready = new Promise((resolve, reject) => {
      this.tn.onConnect = () => resolve();
      this._connectReject = reject;
    });
    const disc = new Promise((_, reject) => {
      this.waiters.push({
        pred: () => false,
        resolve: () => {},
        onDisconnect: err => reject(new Error(`${this.name}: disconnected while connecting over ` +
          `${this.transport}: ${err && err.message} (code ${err && err.code})`)),
      });
    });
    disc.catch(() => {});
    try {
      await withTimeout(Promise.race([
        (async () => { await this.tn.connect(); await ready; })(),
        disc,
      ]), timeoutMs, `${this.name}: connect over ${this.transport} to ${this.host} and get the {hi} reply`);
    } finally {
      this.waiters = this.waiters.filter(w => !w.onDisconnect);
    }
    return this;
  }

  /** Index to pass as `since` so a wait only looks at packets that arrive from now on. */
  mark() {
    return this.packets.length;
  }

  /** Packets received so far (from index `since`) that match `pred`. */
  received(pred, since = 0) {
    return this.packets.slice(since).filter(p => {
      try { return pred(p); } catch (e) { return false; }
    });
  }

  /**
   * Waits for a packet matching `pred`, looking first at packets already received since `since`.
   * Rejects after `timeout` ms with a message listing what did arrive.
   */
  waitFor(pred, { since = 0, timeout = WAIT_MS, what = 'a matching packet' } = {}) {
    const existing = this.received(pred, since);
    if (existing.length > 0) return Promise.resolve(existing[0]);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: null };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        const recent = this.packets.slice(since).slice(-15).map(p => j(p)).join('\n  ');
        reject(new Error(`${this.name} (${this.transport}): timeout after ${timeout} ms waiting for ${what}; ` +
          `packets received since mark:\n  ${recent || '(none)'}`));
      }, timeout);
      w.resolve = pkt => { clearTimeout(timer); resolve(pkt); };
      this.waiters.push(w);
    });
  }

  /** Waits for a {data} packet on `topic` matching `pred(data)`. Resolves the data object. */
  async waitData(topic, pred = () => true, opts = {}) {
    const pkt = await this.waitFor(p => p.data && p.data.topic === topic && pred(p.data),
      { what: `{data} on ${topic}`, ...opts });
    return pkt.data;
  }

  /** Waits for an {info} packet on `topic` matching `pred(info)`. */
  async waitInfo(topic, pred = () => true, opts = {}) {
    const pkt = await this.waitFor(p => p.info && p.info.topic === topic && pred(p.info),
      { what: `{info} on ${topic}`, ...opts });
    return pkt.info;
  }

  /** Waits for a {pres} packet on `topic` matching `pred(pres)`. */
  async waitPres(topic, pred = () => true, opts = {}) {
    const pkt = await this.waitFor(p => p.pres && p.pres.topic === topic && pred(p.pres),
      { what: `{pres} on ${topic}`, ...opts });
    return pkt.pres;
  }

  /** {data} packets on `topic` received since `since`. */
  dataOn(topic, since = 0) {
    return this.received(p => p.data && p.data.topic === topic, since).map(p => p.data);
  }

  uid() {
    return this.tn.getCurrentUserID();
  }

  /** Signs up with the basic scheme and logs in (acc login:true). Resolves the ctrl. */
  async signUp(login, password, params = {}) {
    const ctrl = await this.tn.createAccountBasic(login, password, {
      public: params.public || { fn: `E2E ${login}` },
      tags: params.tags,
    });
    this.login = login;
    this.password = password;
    return ctrl;
  }

  async loginBasic(login, password) {
    return this.tn.loginBasic(login, password);
  }

  async loginToken(token) {
    return this.tn.loginToken(token);
  }

  /** Subscribes to `me`, asking for desc and the subscription list. */
  async subscribeMe() {
    const me = this.tn.getMeTopic();
    await me.subscribe(me.startMetaQuery().withLaterSub().withDesc().build());
    return me;
  }

  /** Publishes a plain text message on an attached topic via the SDK; resolves the ctrl (fails on rejection). */
  async publish(topic, text, noEcho = false) {
    const ctrl = await topic.publish(text, noEcho);
    if (!ctrl) {
      // topic.publishMessage() swallows rejections and resolves undefined.
      throw new Error(`${this.name}: publish on ${topic.name} was rejected (see the SDK log with E2E_DEBUG=1); ` +
        `last packets: ${j(this.packets.slice(-3))}`);
    }
    return ctrl;
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    // Stop the SDK's own timers first: a {note recv} due 100 ms after the last {data} (or a delayed leave) would
    // otherwise be sent on the closed socket and throw "Websocket is not connected" from a timer.
    try {
      this.tn.mapTopics(topic => {
        clearTimeout(topic._recvNotificationTimer);
        clearTimeout(topic._delayedLeaveTimer);
        topic._attached = false;
      });
    } catch (e) { /* ignore */ }
    // Forget pending requests first: disconnect() would reject them with 418, and a rejected SDK-internal
    // request nobody awaits would fail the test as an unhandled rejection.
    this.tn._pendingPromises = {};
    try {
      this.tn.disconnect();
    } catch (e) {
      // ignore
    }
    if (this.transport === 'lp') abortTagged(this.seqNo);
    this.tn.onMessage = undefined;
    this.waiters = [];
  }
}

/**
 * Creates a client whose connection is closed when test `t` ends. `host` is "host:port".
 */
async function connectClient(t, host, opts = {}) {
  const c = new Client(host, opts);
  if (t && typeof t.after === 'function') t.after(() => c.close());
  await c.connect();
  return c;
}

module.exports = { Client, connectClient, Tinode };
