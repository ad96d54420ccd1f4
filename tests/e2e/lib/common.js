'use strict';
// Small shared helpers: constants, unique names, timeouts.

const crypto = require('node:crypto');

// The Tinode demo API key (valid for the default salt). Palaver must accept it.
const API_KEY = process.env.PALAVER_API_KEY || 'AQEAAAABAAD_rAp4DJh05a1HAwFT3A6K';
// A syntactically valid but wrong key (bad HMAC) and an obviously bad one.
const BAD_API_KEY = 'bad';

// Default wait for a single expected server message.
const WAIT_MS = Number(process.env.E2E_WAIT_MS || 10000);
// Per-test timeout.
const TEST_TIMEOUT_MS = Number(process.env.E2E_TEST_TIMEOUT_MS || 90000);

const TRANSPORTS = (process.env.E2E_TRANSPORTS || 'ws,lp').split(',').map(s => s.trim()).filter(Boolean);

/** A random lower-case alphanumeric suffix. */
function rand(n = 5) {
  return crypto.randomBytes(n).toString('hex');
}

/** A unique login: lower-case letters and digits only, at most 24 characters. */
function uniqueLogin(prefix = 'u') {
  return (prefix.replace(/[^a-z0-9]/g, '').slice(0, 10) || 'u') + rand(5);
}

function uniquePassword() {
  return 'pw' + rand(6);
}

function sleep(ms) {
  return new Promise(r => setTimeout(r, ms));
}

/** Resolves or rejects like `p`, but rejects with a clear message after `ms`. */
function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([Promise.resolve(p), t]).finally(() => clearTimeout(timer));
}

/** Standard padded base64 of a UTF-8 string (what Tinode's []byte secrets expect). */
function b64(s) {
  return Buffer.from(s, 'utf8').toString('base64');
}

/** Compact JSON for assertion messages. */
function j(v) {
  try {
    const s = JSON.stringify(v);
    return s && s.length > 2000 ? s.slice(0, 2000) + '…' : s;
  } catch (e) {
    return String(v);
  }
}

module.exports = {
  API_KEY, BAD_API_KEY, WAIT_MS, TEST_TIMEOUT_MS, TRANSPORTS,
  rand, uniqueLogin, uniquePassword, sleep, withTimeout, b64, j,
};
