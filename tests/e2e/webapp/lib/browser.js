'use strict';
// Headless Chromium (Debian's package) driven with puppeteer-core, with fake camera and microphone so the web
// app's calls get media without a prompt, and each page's Tinode frames kept for failure messages: the web app
// logs every frame it sends and receives to the console ("in: {…}" / "out: {…}").

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

module.exports = { launchBrowser, openPage, CHROMIUM };
