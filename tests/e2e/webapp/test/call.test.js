'use strict';
// The stock Tinode web app (npm tinode-webapp) against Palaver in headless Chromium: two users log in in two
// pages, A sends B a message in their P2P chat, A starts a video call, B accepts, both reach the in-call view
// with the other's video, A hangs up, and both histories show the finished call; with coturn, each page's
// Chromium also gets a TURN relay with the credentials of the {hi} reply it received. Then A attaches a file with
// the paperclip: the app uploads it to /v0/file/u/ (LargeFileHelper, through the same origin), sends the message
// naming it, and B reads the same bytes.
//
// Users and their P2P subscriptions are made with tinode-sdk (../lib, so run `npm ci` in tests/e2e too); all
// the rest goes through the app's UI. The server is spawned here (PALAVER_BIN, see ../lib/server.js); with
// PALAVER_TEST_TURN_PORT / PALAVER_TEST_TURN_SECRET (scripts/lib/services.sh start_coturn) its ICE servers are
// that coturn, otherwise it announces none and the pages connect over host candidates. Skipped when Chromium is
// missing (E2E_CHROMIUM, default /usr/bin/chromium) or PALAVER_URL is set (the server's settings are ours).
//
//   E2E_BROWSER_LOG=1     copy both pages' console (including every Tinode frame) to stderr
//   E2E_SCREENSHOTS=DIR   save both pages' screenshots and HTML there when a step fails

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer, isExternal } = require('../../lib/server');
const { newUser } = require('../../lib/fixtures');
const { API_KEY } = require('../../lib/common');
const { startWebServer } = require('../lib/webserver');
const { launchBrowser, openPage, stepper, until, untilFrame, CHROMIUM, STEP_MS } = require('../lib/browser');

const TURN_PORT = process.env.PALAVER_TEST_TURN_PORT;
const TURN_SECRET = process.env.PALAVER_TEST_TURN_SECRET;

function skipReason() {
  if (isExternal()) return 'PALAVER_URL is set: this test configures its own server';
  if (!fs.existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set E2E_CHROMIUM)`;
  return false;
}

/** The server's configuration: calls on (the default), and coturn as the ICE server when one is running. */
function writeConfig(dir) {
  const file = path.join(dir, 'webapp.toml');
  const lines = ['# Written by tests/e2e/webapp/test/call.test.js.', '[calls]', 'enabled = true'];
  if (TURN_PORT && TURN_SECRET) {
    lines.push('', '[[calls.ice_servers]]', `urls = ["turn:127.0.0.1:${TURN_PORT}?transport=udp"]`,
      `secret = ${JSON.stringify(TURN_SECRET)}`);
  }
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

describe('Tinode web app in Chromium', { skip: skipReason() }, () => {
  let dir, srv, web, browser;
  const pages = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-e2e-webapp-'));
    srv = await startServer({ forceSpawn: true, extraArgs: ['--config', writeConfig(dir)] });
    web = await startWebServer(srv.host);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (web) await web.close();
    if (srv) await srv.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const step = stepper(pages, () => srv.log(3000));




  /** Clicks the first element matching `selector` whose text contains `text` (the first of all when it is empty). */
  async function clickText(p, selector, text) {
    const ok = await until(p, `an element ${selector} with text "${text}"`, (sel, txt) => {
      const el = [...document.querySelectorAll(sel)].find(e => e.textContent.includes(txt));
      if (!el) return false;
      el.click();
      return true;
    }, selector, text);
    assert.ok(ok);
  }

  async function login(p, user) {
    await p.page.goto(web.origin + '/', { waitUntil: 'load' });
    await p.page.waitForSelector('#inputLogin', { timeout: STEP_MS });
    await p.page.type('#inputLogin', user.login);
    await p.page.type('input[type=password]', user.password);
    await p.page.keyboard.press('Enter');
    await p.page.waitForSelector('.contact-box li', { timeout: STEP_MS });
  }

  /** Opens the chat with the contact whose title is `title`, and waits for the message input. */
  async function openChat(p, title) {
    await clickText(p, '.contact-box li', title);
    await until(p, `the chat with ${title} open`, t => {
      const h = document.querySelector('#topic-title');
      return h && h.textContent.includes(t) && !!document.querySelector('#send-message-input');
    }, title);
  }

  test('message, video call, accept, hang up, finished call in history', { timeout: 240000 }, async t => {
    const a = await newUser(t, srv.host, 'ws', 'weba');
    const b = await newUser(t, srv.host, 'ws', 'webb');
    // The P2P topic, subscribed by both, so each has the other in the chat list.
    await a.tn.getTopic(b.uid()).subscribe();
    await b.tn.getTopic(a.uid()).subscribe();
    const titleA = `E2E ${a.login}`;
    const titleB = `E2E ${b.login}`;
    a.close();
    b.close();

    const pa = await openPage(browser, 'A');
    const pb = await openPage(browser, 'B');
    pages.push(pa, pb);

    await step('log in', async () => {
      await login(pa, a);
      await login(pb, b);
    });
    await step('open the P2P chat', async () => {
      await openChat(pa, titleB);
      await openChat(pb, titleA);
    });

    const text = `hello from the web app ${Date.now()}`;
    await step('A sends a message B sees', async () => {
      await pa.page.type('#send-message-input', text);
      await pa.page.keyboard.press('Enter');
      await until(pb, `B sees "${text}"`, txt => document.body.innerText.includes(txt), text);
    });

    await step('A starts a video call from the topic menu', async () => {
      // The call items are in the topic's context menu, offered when the {hi} reply has iceServers.
      await clickText(pa, '#topic-caption-panel a', 'more_vert');
      await clickText(pa, 'ul.menu li', 'Video call');
      await until(pa, 'the outgoing call view', () => !!document.querySelector('#video-container'));
    });

    await step('B sees the incoming call and accepts', async () => {
      await until(pb, 'the incoming call dialog', () => !!document.querySelector('.incoming-call'));
      await clickText(pb, '.incoming-call #controls button.positive', '');
    });

    await step('both reach the call with the other party\'s video', async () => {
      // On B's accept the caller's call panel makes the WebRTC offer; it acts on the {info what:"call"} frames
      // routed to the P2P topic (the SDK routes an {info} by its topic).
      await untilFrame(pa, 'A sends the WebRTC offer once B accepted', /^out: \{"note":\{.*"event":"offer"/);
      await untilFrame(pb, 'B answers the offer', /^out: \{"note":\{.*"event":"answer"/);
      // The peer's <video> replaces the ringing card once its stream has arrived over WebRTC; it plays when
      // the media flows.
      const playing = () => {
        const v = document.querySelector('#video-container .call-party.peer video');
        return !!v && !!v.srcObject && v.srcObject.getTracks().some(tr => tr.readyState === 'live') &&
          v.readyState >= 2 && v.currentTime > 0;
      };
      await until(pa, 'A plays B\'s video', playing);
      await until(pb, 'B plays A\'s video', playing);
    });

    await step('A hangs up', async () => {
      await clickText(pa, '#video-container #controls button.danger', 'call_end');
      await until(pa, 'A\'s call view closed', () => !document.querySelector('#video-container'));
      await until(pb, 'B\'s call view closed', () => !document.querySelector('#video-container'));
    });

    await step('both histories show the finished call', async () => {
      // The call message (replaced by the server's final state) renders as "Outgoing call" / "Incoming call"
      // with the duration (m:ss) for a finished call, where a dropped one says missed, declined, cancelled or
      // disconnected, and a message the app cannot read shows "invalid content".
      const finished = dir => {
        const calls = [...document.querySelectorAll('#messages-panel .call-message')];
        const last = calls[calls.length - 1];
        const text = last ? last.innerText.replace(/\s+/g, ' ') : '';
        return text.includes(dir) && /\d+:\d\d/.test(text) ? text : false;
      };
      const lastMessage = p => p.page.evaluate(() => {
        const all = document.querySelectorAll('#messages-panel .message-content');
        return all.length ? all[all.length - 1].innerText : '(no messages)';
      });
      for (const [p, dir] of [[pa, 'Outgoing call'], [pb, 'Incoming call']]) {
        await until(p, `${p.name}'s history shows the finished "${dir}" with its duration`, finished, dir)
          .catch(async e => { throw new Error(`${e.message}; the last message reads: ${await lastMessage(p)}`); });
      }
    });

    if (TURN_PORT && TURN_SECRET) {
      await step('each page gets a TURN relay from coturn with the credentials of its {hi}', async () => {
        // In the call itself the pages, on one host, connect over host candidates, and Chromium stops gathering
        // once a pair works (often before the relay is allocated), so the relay is checked on its own: a peer
        // connection with no peer gathers every candidate, and a relay one means coturn granted the allocation.
        for (const p of pages) {
          const hi = p.frames.map(f => /^in: (\{"ctrl":.*"iceServers".*\})$/.exec(f)).find(Boolean);
          assert.ok(hi, `${p.name}: no {hi} reply with iceServers among the page's frames`);
          const iceServers = JSON.parse(hi[1]).ctrl.params.iceServers;
          const candidates = await p.page.evaluate(async (servers, ms) => {
            const pc = new RTCPeerConnection({ iceServers: servers });
            const found = [];
            const done = new Promise(resolve => {
              pc.onicecandidate = e => (e.candidate ? found.push(e.candidate.candidate) : resolve());
              setTimeout(resolve, ms);
            });
            pc.createDataChannel('probe');
            await pc.setLocalDescription(await pc.createOffer());
            await done;
            pc.close();
            return found;
          }, iceServers, STEP_MS);
          assert.ok(candidates.some(c => / typ relay /.test(c)),
            `${p.name}: no relay candidate with ${JSON.stringify(iceServers)}: ${JSON.stringify(candidates)}`);
        }
      });
    }
  });
  test('attach a file: the app uploads it out of band and the peer can read it', { timeout: 120000 }, async t => {
    const a = await newUser(t, srv.host, 'ws', 'filea');
    const b = await newUser(t, srv.host, 'ws', 'fileb');
    await a.tn.getTopic(b.uid()).subscribe();
    await b.tn.getTopic(a.uid()).subscribe();
    const titleB = `E2E ${b.login}`;
    a.close();
    b.close();
    const pa = await openPage(browser, 'A-files');
    pages.push(pa);
    await step('log in and open the chat', async () => {
      await login(pa, a);
      await openChat(pa, titleB);
    });
    // Larger than the app sends in band (0.75 × maxMessageSize − 1 KiB), so it goes through LargeFileHelper.
    const bytes = crypto.randomBytes(400 * 1024);
    const file = path.join(dir, 'report.bin');
    fs.writeFileSync(file, bytes);
    await step('attach the file with the paperclip input and send it', async () => {
      const inputs = await pa.page.$$('input[type=file]');
      let attach = null;
      for (const input of inputs) {
        const accept = await input.evaluate(el => el.getAttribute('accept') || '');
        if (!accept.startsWith('image')) attach = input;
      }
      assert.ok(attach, `no file input for documents among ${inputs.length}`);
      await attach.uploadFile(file);
      await until(pa, 'the document preview with its send button', () =>
        [...document.querySelectorAll('#image-preview a')].some(el => el.textContent.includes('send')));
      await clickText(pa, '#image-preview a', 'send');
    });
    const url = await step('the message goes out naming the uploaded file', async () => {
      await untilFrame(pa, 'a {pub} with extra.attachments', /^out: \{"pub":.*"attachments":\["\/v0\/file\/s\//);
      const frame = pa.frames.find(f => /^out: \{"pub":.*"attachments"/.test(f));
      return JSON.parse(frame.slice('out: '.length)).extra.attachments[0];
    });
    await step('the peer downloads the same bytes', async () => {
      const resp = await fetch(`http://${srv.host}${url}`,
        { headers: { 'X-Tinode-APIKey': API_KEY, 'X-Tinode-Auth': `Token ${b.token}` } });
      assert.equal(resp.status, 200, await resp.clone().text());
      assert.ok(Buffer.from(await resp.arrayBuffer()).equals(bytes), 'the bytes B reads are the bytes A attached');
    });
  });
});
