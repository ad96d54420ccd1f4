'use strict';
// Codes by email, read back from Mailpit (a real SMTP server with a REST API), for the credential tests.
//
//   PALAVER_TEST_SMTP_ADDR    Mailpit's SMTP host:port (default 127.0.0.1:1025), where the spawned servers send
//   PALAVER_TEST_MAILPIT_API  its API (default http://127.0.0.1:8025)
//
// start_mailpit (scripts/lib/services.sh) starts it and exports both.

const assert = require('node:assert/strict');
const { httpGet } = require('./server');
const { WAIT_MS, rand, sleep, j } = require('./common');

const SMTP_ADDR = process.env.PALAVER_TEST_SMTP_ADDR || '127.0.0.1:1025';
const MAILPIT_API = (process.env.PALAVER_TEST_MAILPIT_API || 'http://127.0.0.1:8025').replace(/\/+$/, '');
const MAILPIT_HOST = MAILPIT_API.replace(/^[a-z]+:\/\//, '');
const FROM_ADDRESS = 'no-reply@palaver.test';
const FROM = `Palaver <${FROM_ADDRESS}>`;
const CONFIRM_SUBJECT = 'Your confirmation code';
const RESET_SUBJECT = 'Your password reset code';

/** `[accounts.credentials.email]` for Mailpit, as a TOML inline table (PALAVER_ACCOUNTS__CREDENTIALS__EMAIL). */
function smtpTable() {
  const [host, port] = SMTP_ADDR.split(':');
  return `{ host = "${host}", port = ${Number(port)}, tls = "none", from = "${FROM}" }`;
}

/** The same as TOML lines under `[accounts.credentials.email]`. */
function smtpLines() {
  const [host, port] = SMTP_ADDR.split(':');
  return [`host = "${host}"`, `port = ${Number(port)}`, 'tls = "none"', `from = "${FROM}"`];
}

/**
 * Why Mailpit cannot be used, or null. When PALAVER_TEST_MAILPIT_API names it, not answering is an error (the run
 * meant to have it); otherwise a reason to skip.
 */
async function mailpitProblem() {
  try {
    const r = await httpGet(MAILPIT_HOST, '/readyz');
    if (r.status === 200) return null;
    throw new Error(`GET /readyz: HTTP ${r.status}`);
  } catch (e) {
    if (process.env.PALAVER_TEST_MAILPIT_API) {
      throw new Error(`Mailpit at ${MAILPIT_API} (PALAVER_TEST_MAILPIT_API) does not answer: ${e.message}`);
    }
    return `no Mailpit at ${MAILPIT_API} (start_mailpit in scripts/lib/services.sh)`;
  }
}

/** An address no earlier run used (Mailpit keeps what it got). */
const uniqueAddr = prefix => `${prefix}-${rand(6)}@palaver.test`;

/** A code of the same length that is surely not `code`. */
const wrongCode = code => code.slice(0, -1) + String((Number(code.slice(-1)) + 1) % 10);

async function mailpitJson(p) {
  const r = await httpGet(MAILPIT_HOST, p, 5000);
  assert.equal(r.status, 200, `Mailpit GET ${p}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
  return JSON.parse(r.body);
}

/** The summaries of the messages to `addr`, oldest first. */
async function messagesTo(addr) {
  const found = await mailpitJson(`/api/v1/search?limit=100&query=${encodeURIComponent(`to:"${addr}"`)}`);
  const list = (found.messages || []).filter(m => (m.To || []).some(t => t.Address === addr));
  return list.sort((a, b) => Date.parse(a.Created) - Date.parse(b.Created));
}

/** The code on a line of its own in a message's text. */
function codeIn(msg) {
  const lines = String(msg.Text || '').split(/\r?\n/).map(l => l.trim()).filter(l => /^\d{4,10}$/.test(l));
  assert.equal(lines.length, 1, `one code on a line of its own in: ${j(msg.Text)}`);
  return lines[0];
}

/**
 * Reads the codes mailed to each address in order: `next(addr, subject)` waits for a message to `addr` it has not
 * returned before, checks its sender, recipient and subject, and resolves its code; `count(addr)` counts all the
 * messages to `addr`.
 */
function mailbox() {
  const seen = new Set();
  return {
    async next(addr, subject, ms = WAIT_MS) {
      const deadline = Date.now() + ms;
      let fresh;
      for (;;) {
        fresh = (await messagesTo(addr)).find(m => !seen.has(m.ID));
        if (fresh) break;
        if (Date.now() > deadline) throw new Error(`timeout after ${ms} ms: a new message to ${addr} (${subject})`);
        await sleep(100);
      }
      seen.add(fresh.ID);
      const msg = await mailpitJson(`/api/v1/message/${fresh.ID}`);
      assert.equal(msg.Subject, subject, `subject of the message to ${addr}: ${j(msg.Subject)}`);
      assert.equal(msg.From && msg.From.Address, FROM_ADDRESS, `sender: ${j(msg.From)}`);
      assert.deepEqual((msg.To || []).map(t => t.Address), [addr], `recipients: ${j(msg.To)}`);
      return codeIn(msg);
    },
    async count(addr) {
      return (await messagesTo(addr)).length;
    },
  };
}

module.exports = {
  SMTP_ADDR, MAILPIT_API, CONFIRM_SUBJECT, RESET_SUBJECT,
  smtpTable, smtpLines, mailpitProblem, uniqueAddr, wrongCode, mailbox,
};
