'use strict';
// One-to-one voice/video call signalling (docs/calls.md) driven by the real tinode-sdk, the way tinode-webapp
// drives it: a Drafty video-call message with head {webrtc:"started"} dials, `topic.videoCall(event, seq,
// payload)` sends {note what:"call"}, the server relays the events as {info what:"call"} and rewrites the call's
// state with replacement {data head:{replace, webrtc}} messages. Cases: ring/accept/signal/hang-up, decline, ring
// timeout, an accept racing the timeout, a caller process killed mid-call, busy, two callee devices, and what the
// stock web app needs beyond that (event routing, ringing as soon as the call message arrives, the state folded
// into the message).
//
// Servers: spawned ones (one with the default ring timeout, one with calls.ring_timeout_ms = 1000 for the timeout
// cases); PALAVER_URL, or node 1 of PALAVER_URLS, instead of both (the timeout cases then run only if the {hi}
// reply's callTimeout is at most FAST_LIMIT_S seconds). With PALAVER_URLS the basic call, busy and the killed
// caller (and, when the nodes' ring timeout is that short, the timeout cases) also run with the caller on node 1
// and the callee on node 2.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { startServer, isExternal } = require('../lib/server');
const { connectClient } = require('../lib/client');
const { newUser, secondDevice, tick } = require('../lib/fixtures');
const { isCallInfo, sendDial, dial, STEP_MARK } = require('../lib/calls');
const { TEST_TIMEOUT_MS, TRANSPORTS, WAIT_MS, sleep, j } = require('../lib/common');

const NODES = (process.env.PALAVER_URLS || '').split(',').map(s => s.trim()).filter(Boolean);
const MULTI = NODES.length >= 2;
// The ring timeout the fast server is given, and the longest external one the timeout cases will wait out.
const FAST_RING_MS = 1000;
const FAST_LIMIT_S = 5;
// How long a check that something does *not* arrive waits.
const QUIET_MS = 600;
// A long-polling session ends when its poll times out on the server, not when the client dies.
const LP_KILL_SKIP = 'a killed long-polling client is noticed only at the server-side session timeout';

let srv = null; // default ring timeout
let fast = null; // short ring timeout, or null when none is available
let fastRingMs = 0;
let fastSkip = false;
let configDir = null;

before(async () => {
  if (MULTI) {
    srv = { host: NODES[0], stop: async () => ({}) };
  } else {
    srv = await startServer();
  }
  if (MULTI || isExternal()) {
    // Not ours to configure: use the server's own ring timeout if it is short enough.
    const probe = await connectClient(null, srv.host, { name: 'probe' });
    const timeout = Number(probe.tn.getServerParam('callTimeout', 0));
    probe.close();
    if (timeout > 0 && timeout <= FAST_LIMIT_S) {
      fast = srv;
      fastRingMs = timeout * 1000;
    } else {
      fastSkip = `the external server's ring timeout (callTimeout ${timeout} s in {hi}) is not at most ${FAST_LIMIT_S} s`;
    }
    return;
  }
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'palaver-calls-'));
  const file = path.join(configDir, 'calls.toml');
  fs.writeFileSync(file, `[calls]\nring_timeout_ms = ${FAST_RING_MS}\n`);
  fast = await startServer({ extraArgs: ['--config', file] });
  fastRingMs = FAST_RING_MS;
});
after(async () => {
  if (fast && fast !== srv) await fast.stop();
  if (srv) await srv.stop();
  if (configDir) fs.rmSync(configDir, { recursive: true, force: true });
});

/** Attaches `c` to the P2P topic with `peer` (named by the peer's usr… id). Resolves the Topic. */
async function openP2P(c, peer) {
  const topic = c.tn.getTopic(peer);
  const ctrl = await topic.subscribe(topic.startMetaQuery().withDesc().build());
  assert.equal(ctrl.code, 200, `${c.name}: subscribe ${peer}: ${j(ctrl)}`);
  await tick();
  return topic;
}

/** A caller on `hostA` and a callee on `hostB`, fresh users, each on `me` and attached to their P2P topic. */
async function pair(t, transport, hostA, hostB, prefix) {
  const a = await newUser(t, hostA, transport, `${prefix}a`);
  const b = await newUser(t, hostB, transport, `${prefix}b`);
  await a.subscribeMe();
  await b.subscribeMe();
  const pA = await openP2P(a, b.uid());
  const pB = await openP2P(b, a.uid());
  return { a, b, pA, pB };
}

/** Waits for the call {info} `event` of call `seq` about the P2P topic `peer`. Resolves the info. */
async function callInfo(c, peer, event, seq, since = 0, timeout = WAIT_MS) {
  const p = await c.waitFor(pkt => isCallInfo(pkt, peer, event, seq),
    { since, timeout, what: `{info what:"call" event:"${event}" seq:${seq}} about ${peer}` });
  return p.info;
}

/** Call {info} frames about `peer` for call `seq` received since `since`, as a list of events. */
function callEvents(c, peer, seq, since) {
  return c.received(p => p.info && p.info.what === 'call' && p.info.seq === seq &&
    ((p.info.topic === 'me' && p.info.src === peer) || p.info.topic === peer), since).map(p => p.info.event);
}

/** True if `d` is a replacement of call message `seq` (optionally saying `state`). */
function isReplacement(d, seq, state) {
  return !!d && !!d.head && d.head.replace === `:${seq}` && (state === undefined || d.head.webrtc === state);
}

/** Waits for the replacement {data} of call `seq` with head.webrtc `state` on `topic`. Resolves the data. */
function replacement(c, topic, seq, state, since = 0, timeout = WAIT_MS) {
  return c.waitFor(p => p.data && p.data.topic === topic && isReplacement(p.data, seq, state),
    { since, timeout, what: `{data head:{replace:":${seq}", webrtc:"${state}"}} on ${topic}` }).then(p => p.data);
}

/** The head.webrtc states of the replacements of call `seq` that arrived live on `topic` since `since`. */
function replacedStates(c, topic, seq, since) {
  return c.dataOn(topic, since).filter(d => isReplacement(d, seq)).map(d => d.head.webrtc);
}

/**
 * Fetches call `seq` and its replacements from the history of the attached `topic`. Resolves them in seq order;
 * the last one holds the call's final state.
 */
async function callHistory(c, topic, seq) {
  const since = c.mark();
  const ctrl = await topic.getMeta(topic.startMetaQuery().withData(seq, undefined, 100).build());
  assert.ok(ctrl && ctrl.code >= 200 && ctrl.code < 300, `${c.name}: get data on ${topic.name}: ${j(ctrl)}`);
  const found = c.dataOn(topic.name, since).filter(d => d.seq === seq || isReplacement(d, seq));
  assert.ok(found.some(d => d.seq === seq), `${c.name}: the call message ${seq} is in the history: ${j(found)}`);
  return found.sort((x, y) => x.seq - y.seq);
}

/** The final head of call `seq` in the history of `topic`: {state, duration, msgs} (msgs as callHistory's). */
async function finalState(c, topic, seq) {
  const msgs = await callHistory(c, topic, seq);
  const last = msgs[msgs.length - 1];
  return { state: last.head && last.head.webrtc, duration: last.head && last.head['webrtc-duration'], msgs };
}

// Opaque WebRTC payloads, shaped like the browser's RTCSessionDescription/RTCIceCandidate JSON: the server must
// relay them untouched.
const OFFER = { type: 'offer', sdp: 'v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n' +
  'a=group:BUNDLE 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n' };
const ANSWER = { type: 'answer', sdp: 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n' };
const ICE_A = { candidate: 'candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 0.0.0.0 rport 0 ' +
  'generation 0 ufrag EEtu network-cost 999', sdpMid: '0', sdpMLineIndex: 0, usernameFragment: 'EEtu' };
const ICE_B = { candidate: 'candidate:1 1 udp 2122260223 192.0.2.10 53421 typ host', sdpMid: '0', sdpMLineIndex: 0,
  usernameFragment: null, extra: { nested: [1, 'two', { three: true }] } };

/**
 * Sends call event `event` with a copy of `payload` on `topic` and returns that copy as sent: the SDK drops
 * zero, false, null and empty fields from an outgoing packet in place (Tinode's simplify), so the copy is what
 * went on the wire, and what the peer must receive unchanged.
 */
function signal(topic, event, seq, payload) {
  const sent = structuredClone(payload);
  topic.videoCall(event, seq, sent);
  return sent;
}

/**
 * ★ Case 1: ring → accept → offer/answer/ICE relayed verbatim → hang-up; both see the replacements live and both
 * histories end with "finished" and a positive webrtc-duration.
 */
async function ringAcceptHangUp(t, transport, hostA, hostB) {
  const { a, b, pA, pB } = await pair(t, transport, hostA, hostB, 'cr');
  const [uidA, uidB] = [a.uid(), b.uid()];
  const [mA, mB] = [a.mark(), b.mark()];
  const seq = await dial(a, pA);

  // The callee learns of the call: the call message itself (what the web app rings on) and the invite on `me`.
  const started = await b.waitData(uidA, d => d.seq === seq, { since: mB });
  assert.equal(started.head.webrtc, 'started', j(started));
  assert.equal(started.from, uidA, j(started));
  const invite = await callInfo(b, uidA, 'invite', seq, mB);
  assert.deepEqual([invite.topic, invite.src, invite.from], ['me', uidA, uidA], `invite: ${j(invite)}`);

  pB.videoCall('ringing', seq);
  const ringing = await callInfo(a, uidB, 'ringing', seq, mA);
  assert.equal(ringing.from, uidB, j(ringing));

  pB.videoCall('accept', seq);
  const accept = await callInfo(a, uidB, 'accept', seq, mA);
  assert.equal(accept.from, uidB, j(accept));
  const acceptedA = await replacement(a, uidB, seq, 'accepted', mA);
  const acceptedB = await replacement(b, uidA, seq, 'accepted', mB);
  for (const d of [acceptedA, acceptedB]) {
    assert.equal(d.from, uidA, `the replacement is the caller's message: ${j(d)}`);
    assert.equal(d.head.aonly, true, `an audio-only call stays audio-only: ${j(d)}`);
    assert.ok(d.seq > seq, j(d));
  }

  const offerSent = signal(pA, 'offer', seq, OFFER);
  assert.deepEqual((await callInfo(b, uidA, 'offer', seq, mB)).payload, offerSent, 'offer relayed verbatim');
  const answerSent = signal(pB, 'answer', seq, ANSWER);
  assert.deepEqual((await callInfo(a, uidB, 'answer', seq, mA)).payload, answerSent, 'answer relayed verbatim');
  const iceASent = signal(pA, 'ice-candidate', seq, ICE_A);
  assert.deepEqual((await callInfo(b, uidA, 'ice-candidate', seq, mB)).payload, iceASent, 'ICE relayed verbatim');
  const iceBSent = signal(pB, 'ice-candidate', seq, ICE_B);
  assert.deepEqual((await callInfo(a, uidB, 'ice-candidate', seq, mA)).payload, iceBSent, 'ICE relayed verbatim');

  await sleep(50);
  pA.videoCall('hang-up', seq);
  await callInfo(b, uidA, 'hang-up', seq, mB);
  const finA = await replacement(a, uidB, seq, 'finished', mA);
  const finB = await replacement(b, uidA, seq, 'finished', mB);
  for (const d of [finA, finB]) {
    assert.ok(d.head['webrtc-duration'] >= 50, `a finished call has its duration in ms: ${j(d)}`);
  }
  assert.deepEqual(replacedStates(a, uidB, seq, mA), ['accepted', 'finished'], 'the caller saw each state once');
  assert.deepEqual(replacedStates(b, uidA, seq, mB), ['accepted', 'finished'], 'the callee saw each state once');

  for (const [c, topic] of [[a, pA], [b, pB]]) {
    const { state, duration, msgs } = await finalState(c, topic, seq);
    assert.equal(state, 'finished', `${c.name}'s history: ${j(msgs)}`);
    assert.ok(duration > 0, `${c.name}'s history has a positive webrtc-duration: ${j(msgs)}`);
  }
}

/** ★ Case 6: a user in an accepted call is busy (486) for a second call, both as callee and as caller. */
async function busy(t, transport, hostA, hostB) {
  const { a, b, pA, pB } = await pair(t, transport, hostA, hostB, 'cb');
  const [uidA, uidB] = [a.uid(), b.uid()];
  const [mA, mB0] = [a.mark(), b.mark()];
  const seq = await dial(a, pA);
  await callInfo(b, uidA, 'invite', seq, mB0);
  pB.videoCall('accept', seq);
  await callInfo(a, uidB, 'accept', seq, mA);

  const c = await newUser(t, hostA, transport, 'cbc');
  const uidC = c.uid();
  const pCB = await openP2P(c, uidB);
  const pCA = await openP2P(c, uidA);
  const mB = b.mark();
  const { ctrl } = await sendDial(c, pCB);
  assert.ok(ctrl, `${c.name}: no reply to the second call`);
  assert.deepEqual([ctrl.code, ctrl.text], [486, 'busy here'], `a call to a callee in a call: ${j(ctrl)}`);
  // The caller of a live call is busy too.
  const again = await sendDial(c, pCA);
  assert.deepEqual([again.ctrl && again.ctrl.code, again.ctrl && again.ctrl.text], [486, 'busy here'],
    `a call to a caller in a call: ${j(again.ctrl)}`);
  await sleep(QUIET_MS);
  assert.deepEqual(b.received(p => p.info && p.info.what === 'call' && (p.info.src === uidC || p.info.topic === uidC), mB),
    [], 'the busy callee is not told of the refused call');

  // Nothing was stored: C's conversation with B has no message.
  const mC = c.mark();
  await pCB.getMeta(pCB.startMetaQuery().withData(undefined, undefined, 10).build());
  assert.deepEqual(c.dataOn(uidB, mC), [], 'a refused call stores no message');

  // Once the call is over, B can be called again.
  pA.videoCall('hang-up', seq);
  await replacement(b, uidA, seq, 'finished', mB);
  const mB2 = b.mark();
  const seq2 = await dial(c, pCB);
  await callInfo(b, uidC, 'invite', seq2, mB2);
  pCB.videoCall('hang-up', seq2);
  await replacement(c, uidB, seq2, 'missed', mC);
}

/**
 * Spawns lib/calls.js as the caller in its own process (WebSocket). Returns {proc, next}, where `next(what)`
 * resolves the next step the process reports (and rejects if it reports a failure or none comes in time).
 */
function spawnCaller(t, host, token, peer) {
  const script = path.resolve(__dirname, '../lib/calls.js');
  const proc = spawn(process.execPath, [script, host, token, peer, 'ws'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', c => { stderr += c; });
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  const queue = [];
  const waiting = [];
  readline.createInterface({ input: proc.stdout }).on('line', line => {
    if (!line.startsWith(STEP_MARK)) return;
    let v;
    try { v = JSON.parse(line.slice(STEP_MARK.length)); } catch (e) { v = { error: `not JSON: ${line}` }; }
    const w = waiting.shift();
    if (w) w(v); else queue.push(v);
  });
  const next = async (what, timeout = WAIT_MS) => {
    const got = queue.length > 0 ? queue.shift() : await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`caller process: no ${what} line within ${timeout} ms; ` +
        `stderr: ${stderr.slice(-2000)}`)), timeout);
      waiting.push(v => { clearTimeout(timer); resolve(v); });
    });
    if (got.error) throw new Error(`caller process failed: ${got.error}\nstderr: ${stderr.slice(-2000)}`);
    return got;
  };
  return { proc, next };
}

/** Case 3: a call nobody accepts is missed after the ring timeout (`fast`), and a late accept changes nothing. */
async function missedCall(t, transport, hostA, hostB) {
  const { a, b, pA, pB } = await pair(t, transport, hostA, hostB, 'cm');
  const [uidA, uidB] = [a.uid(), b.uid()];
  assert.equal(Number(a.tn.getServerParam('callTimeout', 0)) * 1000, fastRingMs,
    `{hi} params.callTimeout is the ring timeout in seconds: ${j(a.tn.getServerInfo())}`);
  const [mA, mB] = [a.mark(), b.mark()];
  const seq = await dial(a, pA);
  const dialled = Date.now();
  await callInfo(b, uidA, 'invite', seq, mB);
  await callInfo(a, uidB, 'hang-up', seq, mA, fastRingMs + WAIT_MS);
  const waited = Date.now() - dialled;
  assert.ok(waited >= fastRingMs - 250, `missed only after the ring timeout (${fastRingMs} ms): after ${waited} ms`);
  await callInfo(b, uidA, 'hang-up', seq, mB);
  const dA = await replacement(a, uidB, seq, 'missed', mA);
  await replacement(b, uidA, seq, 'missed', mB);
  assert.equal(dA.head['webrtc-duration'], undefined, j(dA));

  const [mA2, mB2] = [a.mark(), b.mark()];
  pB.videoCall('accept', seq);
  await sleep(QUIET_MS);
  assert.deepEqual(callEvents(a, uidB, seq, mA2), [], 'an accept after the timeout reaches nobody');
  assert.deepEqual(replacedStates(b, uidA, seq, mB2), [], 'an accept after the timeout writes no state');
  for (const [c, topic] of [[a, pA], [b, pB]]) {
    const { state, msgs } = await finalState(c, topic, seq);
    assert.equal(state, 'missed', `${c.name}'s history: ${j(msgs)}`);
  }
}

/**
 * Case 4: an accept sent around the moment the ring timer is due leaves exactly one outcome, accepted (then
 * finished by a hang-up) or missed, the same for both parties, live and in history.
 */
async function acceptRace(t, transport, hostA, hostB) {
  const { a, b, pA, pB } = await pair(t, transport, hostA, hostB, 'cx');
  const [uidA, uidB] = [a.uid(), b.uid()];
  const outcomes = [];
  // Accepts sent a little before, at and a little after the timer is due (it starts when the call is
  // stored, just before the dial's ctrl is sent).
  for (const offset of [-40, -10, 0, 10, 40]) {
    const [mA, mB] = [a.mark(), b.mark()];
    const seq = await dial(a, pA);
    const due = Date.now() + fastRingMs + offset;
    await callInfo(b, uidA, 'invite', seq, mB);
    await sleep(Math.max(0, due - Date.now()));
    pB.videoCall('accept', seq);
    // Whatever happened, the timer has fired by now; then the callee hangs up (finishing an accepted call,
    // refused for a missed one).
    await sleep(fastRingMs / 2 + 500);
    pB.videoCall('hang-up', seq);
    await callInfo(a, uidB, 'hang-up', seq, mA);
    await sleep(QUIET_MS);
    const seenA = replacedStates(a, uidB, seq, mA);
    const seenB = replacedStates(b, uidA, seq, mB);
    const accepts = callEvents(a, uidB, seq, mA).filter(e => e === 'accept');
    const label = `accept at ${offset} ms from the timeout: caller saw ${j(seenA)}, callee saw ${j(seenB)}`;
    assert.ok(['["accepted","finished"]', '["missed"]'].includes(j(seenA)), `exactly one outcome; ${label}`);
    assert.deepEqual(seenB, seenA, `both parties saw the same states; ${label}`);
    assert.equal(accepts.length, seenA[0] === 'accepted' ? 1 : 0, `the caller heard of the accept iff it took; ${label}`);
    for (const [c, topic] of [[a, pA], [b, pB]]) {
      const { msgs } = await finalState(c, topic, seq);
      const states = msgs.slice(1).map(m => m.head.webrtc);
      assert.deepEqual(states, seenA, `${c.name}'s history holds the same outcome: ${j(msgs)}`);
    }
    outcomes.push(`${offset} ms: ${seenA[seenA.length - 1]}`);
  }
  t.diagnostic(`outcomes: ${outcomes.join(', ')}`);
}

/** Case 5: the caller's client process is SIGKILLed mid-call; the callee sees the call end as disconnected. */
async function killedCaller(t, transport, hostA, hostB) {
  const a = await newUser(t, hostA, transport, 'cka');
  const b = await newUser(t, hostB, transport, 'ckb');
  const [uidA, uidB] = [a.uid(), b.uid()];
  await b.subscribeMe();
  const pB = await openP2P(b, uidA);
  const pA = await openP2P(a, uidB);
  const mB = b.mark();
  const child = spawnCaller(t, hostA, a.token, uidB);
  const { dialled: seq } = await child.next('dialled');
  await callInfo(b, uidA, 'invite', seq, mB);
  pB.videoCall('accept', seq);
  await child.next('accepted');
  await replacement(b, uidA, seq, 'accepted', mB);
  child.proc.kill('SIGKILL');
  await callInfo(b, uidA, 'hang-up', seq, mB);
  await replacement(b, uidA, seq, 'disconnected', mB);
  assert.deepEqual(replacedStates(b, uidA, seq, mB), ['accepted', 'disconnected'], 'each state once');
  const { state, msgs } = await finalState(b, pB, seq);
  assert.equal(state, 'disconnected', `the callee's history: ${j(msgs)}`);
  // Both are free again: the caller's other session can dial the callee.
  const [mA, mB2] = [a.mark(), b.mark()];
  const seq2 = await dial(a, pA);
  await callInfo(b, uidA, 'invite', seq2, mB2);
  pA.videoCall('hang-up', seq2);
  await replacement(a, uidB, seq2, 'missed', mA);
}

for (const transport of TRANSPORTS) {
  describe(`calls over ${transport}`, () => {
    test(`${transport}: ring, accept, offer/answer/ICE relayed verbatim, hang-up: both histories say finished`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        await ringAcceptHangUp(t, transport, srv.host, srv.host);
      });

    test(`${transport}: the callee hanging up while it rings declines the call`, { timeout: TEST_TIMEOUT_MS }, async t => {
      const { a, b, pA, pB } = await pair(t, transport, srv.host, srv.host, 'cd');
      const [uidA, uidB] = [a.uid(), b.uid()];
      const [mA, mB] = [a.mark(), b.mark()];
      const seq = await dial(a, pA);
      await callInfo(b, uidA, 'invite', seq, mB);
      pB.videoCall('hang-up', seq);
      await callInfo(a, uidB, 'hang-up', seq, mA);
      const dA = await replacement(a, uidB, seq, 'declined', mA);
      await replacement(b, uidA, seq, 'declined', mB);
      assert.equal(dA.head['webrtc-duration'], undefined, `a call never accepted has no duration: ${j(dA)}`);
      for (const [c, topic] of [[a, pA], [b, pB]]) {
        const { state, msgs } = await finalState(c, topic, seq);
        assert.equal(state, 'declined', `${c.name}'s history: ${j(msgs)}`);
      }
      // A declined call cannot be accepted any more.
      const mA2 = a.mark();
      pB.videoCall('accept', seq);
      await sleep(QUIET_MS);
      assert.deepEqual(callEvents(a, uidB, seq, mA2), [], 'no accept after the decline');
      assert.deepEqual(replacedStates(a, uidB, seq, mA2), [], 'no new state after the decline');
    });

    test(`${transport}: a call nobody accepts is missed after the ring timeout; a late accept changes nothing`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        // Known only once the servers are up (an external one's ring timeout is read from its {hi}).
        if (fastSkip) { t.skip(fastSkip); return; }
        await missedCall(t, transport, fast.host, fast.host);
      });

    test(`${transport}: an accept racing the ring timeout leaves exactly one outcome, accepted-then-finished or missed`,
      { timeout: TEST_TIMEOUT_MS * 2 }, async t => {
        if (fastSkip) { t.skip(fastSkip); return; }
        await acceptRace(t, transport, fast.host, fast.host);
      });

    test(`${transport}: the caller's process killed mid-call ends it as disconnected for the callee`,
      { timeout: TEST_TIMEOUT_MS, skip: transport === 'lp' && LP_KILL_SKIP }, async t => {
        await killedCaller(t, transport, srv.host, srv.host);
      });

    test(`${transport}: a callee in an accepted call is busy (486) for a second call`, { timeout: TEST_TIMEOUT_MS },
      async t => {
        await busy(t, transport, srv.host, srv.host);
      });

    test(`${transport}: with two callee devices, the one that accepts gets the signalling and the other stops ringing`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const { a, b, pA, pB } = await pair(t, transport, srv.host, srv.host, 'c2');
        const [uidA, uidB] = [a.uid(), b.uid()];
        const b2 = await secondDevice(t, srv.host, transport, b, `${b.name}#2`);
        await b2.subscribeMe();
        const pB2 = await openP2P(b2, uidA);
        const [mA, mB, mB2] = [a.mark(), b.mark(), b2.mark()];
        const seq = await dial(a, pA);
        await callInfo(b, uidA, 'invite', seq, mB);
        await callInfo(b2, uidA, 'invite', seq, mB2);

        pB.videoCall('accept', seq);
        await callInfo(a, uidB, 'accept', seq, mA);
        // The other device is told that its own user accepted: {info topic:"me" src from:<itself> event:"accept"},
        // which tinode-webapp takes as "another session answered" and stops ringing on.
        const stop = await callInfo(b2, uidA, 'accept', seq, mB2);
        assert.deepEqual([stop.topic, stop.src, stop.from], ['me', uidA, uidB],
          `the idle device's stop-ringing notice: ${j(stop)}`);
        await replacement(b2, uidA, seq, 'accepted', mB2);

        const [mB2a, mAa] = [b2.mark(), a.mark()];
        const offerSent = signal(pA, 'offer', seq, OFFER);
        assert.deepEqual((await callInfo(b, uidA, 'offer', seq, mB)).payload, offerSent);
        // The idle device cannot take over: its answer is dropped; the accepting device's goes through.
        pB2.videoCall('answer', seq, { type: 'answer', sdp: 'from the idle device' });
        await sleep(QUIET_MS);
        assert.deepEqual(callEvents(b2, uidA, seq, mB2a), [], 'the idle device gets none of the signalling');
        assert.deepEqual(callEvents(a, uidB, seq, mAa), [], "the idle device's answer is dropped");
        const answerSent = signal(pB, 'answer', seq, ANSWER);
        assert.deepEqual((await callInfo(a, uidB, 'answer', seq, mAa)).payload, answerSent);
        assert.deepEqual(callEvents(b, uidA, seq, mB).filter(e => e === 'accept'), [],
          'the accepting device is not told of its own accept');

        pA.videoCall('hang-up', seq);
        await callInfo(b, uidA, 'hang-up', seq, mB);
        await callInfo(b2, uidA, 'hang-up', seq, mB2);
        await replacement(b2, uidA, seq, 'finished', mB2);
      });

    // What tinode-webapp (on tinode-sdk 0.25) needs beyond the flow above. Its CallPanel sets the P2P topic's
    // onInfo and drives WebRTC from the accept/offer/answer/ice-candidate/hang-up/ringing events it gets there; the
    // SDK calls a topic's onInfo only for {info} whose `topic` is that topic's name. Tinode (server/calls.go) sends
    // the events meant for a call party's session with topic = the P2P topic as that party names it; only the
    // notices to a user's other sessions (accept to the callee's other devices, hang-up to sessions not attached)
    // go on `me` with `src`.
    test(`${transport}: call events for a party's session arrive on the P2P topic, where the web app listens`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const { a, b, pA, pB } = await pair(t, transport, srv.host, srv.host, 'cw');
        const [uidA, uidB] = [a.uid(), b.uid()];
        const onInfoA = [];
        const onInfoB = [];
        pA.onInfo = info => { if (info.what === 'call') onInfoA.push(info.event); };
        pB.onInfo = info => { if (info.what === 'call') onInfoB.push(info.event); };
        const [mA, mB] = [a.mark(), b.mark()];
        const seq = await dial(a, pA);
        await b.waitData(uidA, d => d.seq === seq, { since: mB });
        // Palaver stores the call record only after delivering the call message, so a note sent the moment the
        // {data} arrives may find no call and be dropped; the invite comes once the record exists.
        await callInfo(b, uidA, 'invite', seq, mB);
        pB.videoCall('ringing', seq);
        await callInfo(a, uidB, 'ringing', seq, mA);
        pB.videoCall('accept', seq);
        await callInfo(a, uidB, 'accept', seq, mA);
        signal(pA, 'offer', seq, OFFER);
        await callInfo(b, uidA, 'offer', seq, mB);
        signal(pB, 'answer', seq, ANSWER);
        await callInfo(a, uidB, 'answer', seq, mA);
        signal(pA, 'ice-candidate', seq, ICE_A);
        await callInfo(b, uidA, 'ice-candidate', seq, mB);
        signal(pB, 'ice-candidate', seq, ICE_B);
        await callInfo(a, uidB, 'ice-candidate', seq, mA);
        pA.videoCall('hang-up', seq);
        await callInfo(b, uidA, 'hang-up', seq, mB);
        await tick(20);
        const onTopic = (c, peer, since) => c.received(p => p.info && p.info.what === 'call' && p.info.seq === seq, since)
          .map(p => `${p.info.event}@${p.info.topic === peer ? peer : `${p.info.topic}(src ${p.info.src})`}`);
        // Tinode also echoes the hang-up to the hanging-up party's attached sessions; that one is not required.
        const missing = (got, want) => want.filter(e => !got.includes(e));
        assert.deepEqual(missing(onInfoA, ['ringing', 'accept', 'answer', 'ice-candidate']), [],
          `events the caller's P2P topic onInfo never got (it got ${j(onInfoA)}); the caller's session received: ` +
          j(onTopic(a, uidB, mA)));
        assert.deepEqual(missing(onInfoB, ['offer', 'ice-candidate', 'hang-up']), [],
          `events the callee's P2P topic onInfo never got (it got ${j(onInfoB)}); the callee's session received: ` +
          j(onTopic(b, uidA, mB)));
      });

    // tinode-webapp rings on the call message itself: its onDataMessage handler shows the incoming call for a
    // {data head.webrtc:"started"}, and the incoming-call view sends {note event:"ringing"} as it mounts (or, when
    // the user is already in a call, {note event:"hang-up"} at once). Those notes follow the {data} immediately, so
    // the call must exist by the time the {data} is delivered. Three calls, so a race shows.
    test(`${transport}: a ringing note sent the moment the call message arrives reaches the caller`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const { a, b, pA, pB } = await pair(t, transport, srv.host, srv.host, 'cg');
        const [uidA, uidB] = [a.uid(), b.uid()];
        b.tn.onDataMessage = data => {
          if (data.topic === uidA && data.head && data.head.webrtc === 'started' && data.from === uidA) {
            pB.videoCall('ringing', data.seq);
          }
        };
        const heard = [];
        for (let i = 0; i < 3; i++) {
          const [mA, mB] = [a.mark(), b.mark()];
          const seq = await dial(a, pA);
          await callInfo(b, uidA, 'invite', seq, mB);
          const got = await callInfo(a, uidB, 'ringing', seq, mA, 2000).then(() => true, () => false);
          heard.push(got);
          pA.videoCall('hang-up', seq);
          await replacement(b, uidA, seq, 'missed', mB);
        }
        assert.deepEqual(heard, [true, true, true],
          'the caller heard each ringing (false: the note came before the call existed and was dropped)');
      });

    // tinode-sdk folds a call message's state into its Drafty VC entity (Topic._routeData: head.webrtc and
    // webrtc-duration become the entity's state and duration) only when head.mime is text/x-drafty; the web app
    // renders that entity. Tinode (server/calls.go, messageHead) gives each replacement the call message's own
    // mime for that reason.
    test(`${transport}: a replacement keeps the call message's mime, so the SDK shows the final state and duration`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const { a, b, pA, pB } = await pair(t, transport, srv.host, srv.host, 'cv');
        const [uidA, uidB] = [a.uid(), b.uid()];
        const [mA, mB] = [a.mark(), b.mark()];
        const seq = await dial(a, pA, false);
        await callInfo(b, uidA, 'invite', seq, mB);
        pB.videoCall('accept', seq);
        await callInfo(a, uidB, 'accept', seq, mA);
        await sleep(50);
        pB.videoCall('hang-up', seq);
        const fin = await replacement(a, uidB, seq, 'finished', mA);
        await replacement(b, uidA, seq, 'finished', mB);
        await tick(20);
        assert.equal(fin.head.mime, 'text/x-drafty', `the replacement's mime is the call message's: ${j(fin)}`);
        for (const [c, topic] of [[a, pA], [b, pB]]) {
          const latest = topic.latestMsgVersion(seq);
          const vc = latest && latest.content && Array.isArray(latest.content.ent) ? latest.content.ent[0] : null;
          assert.ok(vc && vc.tp === 'VC', `${c.name}: the latest version of the call message is a VC entity: ${j(latest)}`);
          assert.equal(vc.data.state, 'finished', `${c.name}: the SDK shows the final state: ${j(vc)}`);
          assert.ok(vc.data.duration > 0, `${c.name}: the SDK shows the duration: ${j(vc)}`);
        }
      });
  });

  describe(`calls across two nodes over ${transport}`, { skip: !MULTI && 'set PALAVER_URLS to two nodes' }, () => {
    test(`${transport}: caller on node 1, callee on node 2: ring, accept, signalling, hang-up, both histories finished`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        await ringAcceptHangUp(t, transport, NODES[0], NODES[1]);
      });

    test(`${transport}: caller on node 1, callee on node 2 in a call: a second call is busy (486)`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        await busy(t, transport, NODES[0], NODES[1]);
      });

    test(`${transport}: caller on node 1 killed mid-call: the callee on node 2 sees it disconnected`,
      { timeout: TEST_TIMEOUT_MS, skip: transport === 'lp' && LP_KILL_SKIP }, async t => {
        await killedCaller(t, transport, NODES[0], NODES[1]);
      });

    // The ring timer is held by node 1 (it created the call); the accept is taken on node 2.
    test(`${transport}: caller on node 1, callee on node 2: an unanswered call is missed after the ring timeout`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        if (fastSkip) { t.skip(fastSkip); return; }
        await missedCall(t, transport, NODES[0], NODES[1]);
      });

    test(`${transport}: caller on node 1, callee on node 2: an accept racing the ring timeout leaves one outcome`,
      { timeout: TEST_TIMEOUT_MS * 2 }, async t => {
        if (fastSkip) { t.skip(fastSkip); return; }
        await acceptRace(t, transport, NODES[0], NODES[1]);
      });
  });
}
