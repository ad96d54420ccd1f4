'use strict';
// Editing and recalling with the real tinode-sdk, as the web app does it: an edit is a message with
// head.replace ":<seq>"; the other party's SDK shows the message once, with the new text; the other party's own
// attempt to replace it is refused with 403; a sender's hard delete of their own message (a recall) reaches the
// other party as {pres what:"del"} and the message is gone from both histories.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { startServer } = require('../lib/server');
const { newUser, secondDevice, tick } = require('../lib/fixtures');
const { TEST_TIMEOUT_MS, TRANSPORTS, j } = require('../lib/common');

let srv;
test.before(async () => { srv = await startServer(); });
test.after(async () => { if (srv) await srv.stop(); });

/** Publishes `text` as an edit of `seq` on an attached topic; resolves the server's ctrl from the wire. */
async function sendEdit(c, topic, seq, text) {
  const msg = topic.createMessage(text, false);
  msg.head = Object.assign(msg.head || {}, { replace: `:${seq}` });
  const since = c.mark();
  await topic.publishMessage(msg);
  const reply = await c.waitFor(p => p.ctrl && p.ctrl.id === msg.id, { since, what: `the reply to the edit ${msg.id}` });
  return reply.ctrl;
}

for (const transport of TRANSPORTS) {
  describe(`edit and recall over ${transport}`, () => {
    test(`${transport}: the sender edits and recalls; the peer sees one message, then none`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const a = await newUser(t, srv.host, transport, 'ea');
        const b = await newUser(t, srv.host, transport, 'eb');
        const pA = a.tn.getTopic(b.uid());
        await pA.subscribe(pA.startMetaQuery().withDesc().build());
        const pB = b.tn.getTopic(a.uid());
        await pB.subscribe(pB.startMetaQuery().withLaterData(24).build());
        const mB = b.mark();
        const seq = (await a.publish(pA, 'helo wrold')).params.seq;
        await b.waitData(a.uid(), d => d.seq === seq, { since: mB });

        const ok = await sendEdit(a, pA, seq, 'hello world');
        assert.equal(ok.code, 202, j(ok));
        await b.waitData(a.uid(), d => d.seq === ok.params.seq, { since: mB });
        await tick(50); // the SDK routes a packet to its topic on the next turn after onMessage
        const shown = [];
        pB.messages(m => shown.push(m));
        assert.equal(shown.length, 1, `one message, the newest version: ${j(shown)}`);
        assert.equal(shown[0].content, 'hello world');
        assert.equal(shown[0].seq, seq, 'in the original place');

        const theirs = await sendEdit(b, pB, seq, 'not yours').catch(e => e);
        assert.equal(theirs.code, 403, `B may not replace A's message: ${j(theirs)}`);

        const mB2 = b.mark();
        const del = await pA.delMessagesList([seq], true);
        assert.equal(del.code, 200, j(del));
        const pres = await b.waitPres(a.uid(), p => p.what === 'del', { since: mB2 });
        assert.deepEqual(pres.delseq, [{ low: seq }], j(pres));
        // A fresh client of B reads the history: the recalled message is not in it.
        const b2 = await secondDevice(t, srv.host, transport, b);
        const pB2 = b2.tn.getTopic(a.uid());
        const mC = b2.mark();
        await pB2.subscribe(pB2.startMetaQuery().withLaterData(24).build());
        await b2.waitFor(p => p.ctrl && p.ctrl.topic === a.uid() && p.ctrl.params && p.ctrl.params.what === 'data',
          { since: mC, what: 'the end of the history page' }).catch(() => null);
        const seqs = b2.dataOn(a.uid(), mC).map(d => d.seq);
        assert.ok(!seqs.includes(seq), `the recalled message is gone: ${j(seqs)}`);
      });
  });
}
