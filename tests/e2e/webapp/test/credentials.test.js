'use strict';
// The stock Tinode web app's sign-up with a required email, against a server that requires one
// ([accounts.credentials] required = ["email"], codes mailed to Mailpit): the sign-up form shows the email field
// (the {hi} reply's reqCred), the 300 "validate credentials" takes the app to its confirmation-code view, a wrong
// code keeps it there (300 again), and the mailed code logs the new user in.
//
// Needs Chromium (E2E_CHROMIUM, default /usr/bin/chromium) and Mailpit (PALAVER_TEST_SMTP_ADDR /
// PALAVER_TEST_MAILPIT_API, exported by start_mailpit in scripts/lib/services.sh; see ../../lib/mailpit.js). Skipped
// without Chromium, when PALAVER_URL is set (the server's settings are ours), or when no Mailpit answers and
// PALAVER_TEST_MAILPIT_API is not set.
//
//   E2E_BROWSER_LOG=1     copy the page's console (including every Tinode frame) to stderr
//   E2E_SCREENSHOTS=DIR   save the page's screenshot and HTML there when a step fails

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startServer, isExternal } = require('../../lib/server');
const { uniqueLogin, uniquePassword } = require('../../lib/common');
const { CONFIRM_SUBJECT, smtpTable, mailpitProblem, uniqueAddr, wrongCode, mailbox } = require('../../lib/mailpit');
const { startWebServer } = require('../lib/webserver');
const { launchBrowser, openPage, stepper, until, untilFrame, CHROMIUM, STEP_MS } = require('../lib/browser');


function skipReason() {
  if (isExternal()) return 'PALAVER_URL is set: this test configures its own server';
  if (!fs.existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set E2E_CHROMIUM)`;
  return false;
}

describe('Tinode web app: sign-up with a required email', { skip: skipReason() }, () => {
  let srv, web, browser, noMail;
  const pages = [];
  const mail = mailbox();

  before(async () => {
    noMail = await mailpitProblem();
    if (noMail) return;
    srv = await startServer({
      forceSpawn: true,
      env: {
        PALAVER_ACCOUNTS__CREDENTIALS__REQUIRED: '["email"]',
        PALAVER_ACCOUNTS__CREDENTIALS__EMAIL: smtpTable(),
      },
    });
    web = await startWebServer(srv.host);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (web) await web.close();
    if (srv) await srv.stop();
  });

  const step = stepper(pages, () => srv.log(3000));




  /**
   * Puts `code` in the app's code view in one change and submits it. Once a code came in the page's address (after
   * a first submit) the view submits by itself on every change, so Enter is pressed only if the view did not
   * submit it already.
   */
  async function enterCode(p, code) {
    const since = p.frames.length;
    await p.page.waitForSelector('#enter-confirmation-code', { timeout: STEP_MS });
    await p.page.evaluate(c => {
      const el = document.querySelector('#enter-confirmation-code');
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(el, c);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.focus();
    }, code);
    const sent = new RegExp(`^out: \\{"login":\\{.*"cred":\\[\\{"meth":"email","resp":"${code}"`);
    await new Promise(r => setTimeout(r, 500));
    if (!p.frames.slice(since).some(f => sent.test(f))) await p.page.keyboard.press('Enter');
    await untilFrame(p, `the token login with the code ${code}`, sent, since);
  }

  test('sign up, the confirmation-code view, a wrong code, the mailed code logs in', { timeout: 120000 },
    async t => {
      if (noMail) return t.skip(noMail);
      const p = await openPage(browser, 'signup');
      pages.push(p);
      const login = uniqueLogin('webcred');
      const addr = uniqueAddr('webapp');

      await step('the sign-up form asks for an email', async () => {
        await p.page.goto(`${web.origin}/#register`, { waitUntil: 'load' });
        await p.page.waitForSelector('input[type=email]', { timeout: STEP_MS });
        await untilFrame(p, 'the {hi} reply names the required email',
          /^in: \{"ctrl":.*"reqCred":\{"auth":\["email"\]\}/);
      });

      await step('sign up: 300 "validate credentials" opens the confirmation-code view', async () => {
        await p.page.type('input[autocomplete=user-name]', login);
        await p.page.type('input[autocomplete=new-password]', uniquePassword());
        await p.page.type('input[autocomplete=name]', `Web ${login}`);
        await p.page.type('input[type=email]', addr);
        await p.page.click('button.primary[type=submit]');
        await untilFrame(p, 'the sign-up carries the email',
          new RegExp(`^out: \\{"acc":\\{.*"cred":\\[\\{"meth":"email","val":"${addr.replace(/[.]/g, '\\.')}"`));
        await untilFrame(p, 'the sign-up is answered 300',
          /^in: \{"ctrl":\{.*"code":300,"text":"validate credentials"/);
        await p.page.waitForSelector('#enter-confirmation-code', { timeout: STEP_MS });
        assert.match(await p.page.evaluate(() => window.location.hash), /^#cred\?.*method=email/);
      });

      const code = await step('the code arrives by mail', () => mail.next(addr, CONFIRM_SUBJECT));

      await step('a wrong code: 300 again, the app stays on the code view', async () => {
        const since = p.frames.length;
        await enterCode(p, wrongCode(code));
        await untilFrame(p, 'answered 300', /^in: \{"ctrl":\{.*"code":300,"text":"validate credentials"/, since);
        await new Promise(r => setTimeout(r, 500));
        assert.ok(await p.page.$('#enter-confirmation-code'), 'still on the confirmation-code view');
      });

      await step('the mailed code, typed key by key, logs in and the app subscribes to me', async () => {
        // After the wrong code the view logs in at every keystroke: each partial code is answered 300 without
        // using one of the code's tries, so the whole code still works when its last digit is typed.
        const since = p.frames.length;
        await p.page.evaluate(() => {
          const el = document.querySelector('#enter-confirmation-code');
          Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(el, '');
          el.dispatchEvent(new Event('input', { bubbles: true }));
          el.focus();
        });
        await p.page.type('#enter-confirmation-code', code, { delay: 150 });
        const sent = new RegExp(`^out: \\{"login":\\{.*"cred":\\[\\{"meth":"email","resp":"${code}"`);
        await new Promise(r => setTimeout(r, 500));
        if (!p.frames.slice(since).some(f => sent.test(f))) await p.page.keyboard.press('Enter');
        await untilFrame(p, 'answered 200', /^in: \{"ctrl":\{.*"code":200,"text":"ok","params":\{"authlvl":"auth"/,
          since);
        await untilFrame(p, 'the app attaches to me', /^out: \{"sub":\{.*"topic":"me"/, since);
        await until(p, 'the confirmation-code view is gone', () => !document.querySelector('#enter-confirmation-code'));
      });
    });
});
