'use strict';
// Headless Chromium (Debian's package) driven with puppeteer-core, with fake camera and microphone so the web
// app's calls get media without a prompt, and each page's Tinode frames kept for failure messages: the web app
// logs every frame it sends and receives to the console ("in: {…}" / "out: {…}").

const fs = require('node:fs');
const path = require('node:path');
const puppeteer = require('puppeteer-core');

const CHROMIUM = process.env.E2E_CHROMIUM || '/usr/bin/chromium';

async function launchBrowser() {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      // Root in a container has no user namespace for the sandbox.
      '--no-sandbox',
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
    ],
  });
}

/**
 * A page in its own browser context (own storage, so two users can be logged in at once). `name` labels its
 * log. Returns {page, name, frames, log, lastFrames(n), report(n)}; `frames` are "in: {…}" / "out: {…}" strings.
 */
async function openPage(browser, name) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const p = { page, name, frames: [], log: [] };
  page.on('console', m => {
    const text = m.text();
    const frame = /^\[[\d:.]+\] (in|out): (\{.*\})\s*$/s.exec(text);
    if (frame) {
      p.frames.push(`${frame[1]}: ${frame[2]}`);
    } else {
      p.log.push(`${m.type()}: ${text}`);
    }
    if (process.env.E2E_BROWSER_LOG) process.stderr.write(`[${name}] ${text}\n`);
  });
  page.on('pageerror', e => p.log.push(`pageerror: ${e.message}`));
  p.lastFrames = (n = 15) => p.frames.slice(-n).join('\n');
  p.report = (n = 15) => `--- ${name}: last frames ---\n${p.lastFrames(n)}\n--- ${name}: console ---\n` +
    p.log.slice(-10).join('\n');
  return p;
}

/** How long one step may wait for the page (`E2E_STEP_MS`, default 20 s). */
const STEP_MS = Number(process.env.E2E_STEP_MS || 20000);

/**
 * A `step(what, fn)` for a test's `pages` (read when a step fails): it runs `fn`, and on failure throws an error
 * carrying each page's last frames and console and the server's log (`serverLog()`), after saving screenshots
 * and the pages' HTML to `E2E_SCREENSHOTS` when that is set.
 */
function stepper(pages, serverLog) {
  return async function step(what, fn) {
    try {
      return await fn();
    } catch (e) {
      const shots = process.env.E2E_SCREENSHOTS;
      if (shots) {
        fs.mkdirSync(shots, { recursive: true });
        for (const p of pages) {
          const base = path.join(shots, `${what.replace(/[^a-z0-9]+/gi, '-')}-${p.name}`);
          await p.page.screenshot({ path: `${base}.png` }).catch(() => {});
          fs.writeFileSync(`${base}.html`, await p.page.content().catch(() => ''));
        }
      }
      const reports = pages.map(p => p.report()).join('\n');
      throw new Error(`step "${what}" failed: ${e.message}\n${reports}\n--- server ---\n${serverLog()}`);
    }
  };
}

/** Waits until `fn` (run in page `p`) returns truthy; resolves its value. */
async function until(p, what, fn, ...args) {
  const handle = await p.page.waitForFunction(fn, { timeout: STEP_MS, polling: 100 }, ...args)
    .catch(e => { throw new Error(`${p.name}: ${what}: ${e.message}`); });
  return handle.jsonValue();
}

/** Waits until page `p` has sent or received a Tinode frame matching `re` (among those from index `since`). */
async function untilFrame(p, what, re, since = 0) {
  const deadline = Date.now() + STEP_MS;
  for (;;) {
    const f = p.frames.slice(since).find(x => re.test(x));
    if (f) return f;
    if (Date.now() > deadline) throw new Error(`${p.name}: ${what}: no frame matching ${re} within ${STEP_MS} ms`);
    await new Promise(r => setTimeout(r, 100));
  }
}

module.exports = { launchBrowser, openPage, stepper, until, untilFrame, CHROMIUM, STEP_MS };
