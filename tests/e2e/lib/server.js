'use strict';
// Starting and stopping the Palaver server under test.
//
//   PALAVER_BIN  the binary (default ../../target/release/palaver relative to tests/e2e)
//   PALAVER_URL  host:port of an already running server: nothing is spawned, and tests that need to
//                restart or stop the server are skipped.
//   E2E_SERVER_LOG=1   copy the server's stdout/stderr to this process's stderr.
//   E2E_KEEP_DATA=1    keep the temporary data directories.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const E2E_DIR = path.resolve(__dirname, '..');
const DEFAULT_BIN = path.resolve(E2E_DIR, '../../target/release/palaver');
const READY_TIMEOUT_MS = Number(process.env.E2E_READY_TIMEOUT_MS || 30000);
const STOP_TIMEOUT_MS = Number(process.env.E2E_STOP_TIMEOUT_MS || 10000);
const LOG_CAP = 256 * 1024;

function binPath() {
  return process.env.PALAVER_BIN ? path.resolve(E2E_DIR, process.env.PALAVER_BIN) : DEFAULT_BIN;
}

function externalUrl() {
  return process.env.PALAVER_URL ? process.env.PALAVER_URL.replace(/^[a-z]+:\/\//, '').replace(/\/+$/, '') : null;
}

/** True when tests run against an external server (PALAVER_URL): no restart/stop tests. */
function isExternal() {
  return !!externalUrl();
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function makeDataDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-e2e-'));
}

/** One HTTP GET with a timeout; resolves {status, body} or rejects. */
function httpGet(host, urlPath, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const [hostname, port] = host.split(':');
    const req = http.get({ hostname, port: Number(port), path: urlPath, timeout: timeoutMs, agent: false }, res => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', c => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timeout')));
    req.on('error', reject);
  });
}

class ServerProcess {
  constructor({ bin, port, dataDir, extraArgs, env }) {
    this.bin = bin;
    this.port = port;
    this.host = `127.0.0.1:${port}`;
    this.dataDir = dataDir;
    this.extraArgs = extraArgs || [];
    this.env = env || {};
    this.output = '';
    this.exited = null; // {code, signal} once the process is gone
    this.proc = null;
    this._exitPromise = null;
  }

  /** The last part of the server's stdout+stderr, for error messages. */
  log(max = 8000) {
    return this.output.length > max ? '…' + this.output.slice(-max) : this.output;
  }

  _append(chunk) {
    const s = chunk.toString('utf8');
    if (process.env.E2E_SERVER_LOG) process.stderr.write(`[palaver:${this.port}] ${s}`);
    this.output += s;
    if (this.output.length > LOG_CAP) this.output = this.output.slice(-LOG_CAP);
  }

  async start() {
    if (!fs.existsSync(this.bin)) {
      throw new Error(`server binary not found: ${this.bin} (build it with ` +
        '`cargo build --release -p palaver-server`, or set PALAVER_BIN or PALAVER_URL)');
    }
    const args = ['serve', '--listen', this.host, '--data-dir', this.dataDir, ...this.extraArgs];
    this.output = '';
    this.exited = null;
    // The server reads PALAVER_SECTION__KEY variables as configuration and rejects other PALAVER_* names, so the
    // harness's own variables must not reach it.
    const env = { ...process.env };
    for (const k of ['PALAVER_BIN', 'PALAVER_URL', 'PALAVER_API_KEY']) delete env[k];
    Object.assign(env, this.env);
    const proc = spawn(this.bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.proc = proc;
    proc.stdout.on('data', c => this._append(c));
    proc.stderr.on('data', c => this._append(c));
    this._exitPromise = new Promise(resolve => {
      proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      });
      proc.on('error', err => {
        this._append(`spawn error: ${err.message}\n`);
        this.exited = { code: null, signal: null, error: err };
        resolve(this.exited);
      });
    });
    await this._waitReady(args);
    return this;
  }

  async _waitReady(args) {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      if (this.exited) {
        throw new Error(`server exited before becoming ready (code=${this.exited.code}, ` +
          `signal=${this.exited.signal}); command: ${this.bin} ${args.join(' ')}\n--- server output ---\n${this.log()}`);
      }
      try {
        const res = await httpGet(this.host, '/readyz', 1000);
        if (res.status === 200) return;
        last = `HTTP ${res.status} ${res.body.slice(0, 200)}`;
      } catch (e) {
        last = e.message;
      }
      await new Promise(r => setTimeout(r, 100));
    }
    const out = this.log();
    await this.stop();
    throw new Error(`server not ready after ${READY_TIMEOUT_MS} ms (GET /readyz: ${last}); command: ` +
      `${this.bin} ${args.join(' ')}\n--- server output ---\n${out}`);
  }

  /** Sends a signal without waiting. */
  signal(sig) {
    if (this.proc && !this.exited) this.proc.kill(sig);
  }

  /** Resolves {code, signal} when the process exits, or null after `ms`. */
  waitExit(ms) {
    if (this.exited) return Promise.resolve(this.exited);
    if (!this._exitPromise) return Promise.resolve(null);
    let timer;
    return Promise.race([
      this._exitPromise,
      new Promise(r => { timer = setTimeout(() => r(null), ms); }),
    ]).finally(() => clearTimeout(timer));
  }

  /**
   * SIGTERM, then SIGKILL after STOP_TIMEOUT_MS. Resolves {code, signal, killed} where `killed` says SIGKILL
   * was needed.
   */
  async stop() {
    if (!this.proc || this.exited) return { ...(this.exited || {}), killed: false };
    this.proc.kill('SIGTERM');
    let res = await this.waitExit(STOP_TIMEOUT_MS);
    if (res) return { ...res, killed: false };
    this.proc.kill('SIGKILL');
    res = await this.waitExit(5000);
    return { ...(res || {}), killed: true };
  }

  removeData() {
    if (!process.env.E2E_KEEP_DATA && this.dataDir) {
      fs.rmSync(this.dataDir, { recursive: true, force: true });
    }
  }
}

/**
 * Spawns a fresh server (fresh data dir unless given), or wraps PALAVER_URL. The result has `host`
 * ("127.0.0.1:port") and `stop()`; `stop()` also deletes a data dir this function created.
 */
async function startServer(opts = {}) {
  const ext = externalUrl();
  if (ext && !opts.forceSpawn) {
    return { host: ext, external: true, stop: async () => ({}), log: () => '(external server)' };
  }
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir || makeDataDir();
  const port = opts.port || await freePort();
  const srv = new ServerProcess({ bin: binPath(), port, dataDir, extraArgs: opts.extraArgs, env: opts.env });
  try {
    await srv.start();
  } catch (e) {
    if (ownDir) srv.removeData();
    throw e;
  }
  const origStop = srv.stop.bind(srv);
  srv.stop = async () => {
    const r = await origStop();
    if (ownDir && opts.keepData !== true) srv.removeData();
    return r;
  };
  return srv;
}

module.exports = { startServer, ServerProcess, freePort, makeDataDir, httpGet, isExternal, binPath };
