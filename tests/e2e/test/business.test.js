'use strict';
// The business plugins (friends, group governance) and system notifications as real tinode-sdk clients see
// them: commands over the /v1/im/ HTTP API with the socket's token, their effects as {info} events in the
// business form on every device on either node, and the publish path enforcing a mute and a block on every node.
// Runs when PALAVER_URLS names two nodes loading target/plugins/deploy (scripts/test-all.sh starts them).

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { newUser, secondDevice, createGroup, joinTopic, tick } = require('../lib/fixtures');
const { httpRequest } = require('../lib/raw');
const { API_KEY, TEST_TIMEOUT_MS, TRANSPORTS, rand, j } = require('../lib/common');

const NODES = (process.env.PALAVER_URLS || '').split(',').map(s => s.trim()).filter(Boolean);
const skip = NODES.length < 2 || process.env.E2E_BUSINESS !== '1'
  ? 'set PALAVER_URLS to two nodes running the business plugins and E2E_BUSINESS=1' : false;

/** Calls the /v1/im/ API on `host` as the client's user; resolves {status, body}. */
async function api(host, c, method, path, body) {
  const headers = { 'X-Tinode-APIKey': API_KEY, Authorization: `Token ${c.token}` };
  let payload;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await httpRequest(host, { method, path: `/v1/im${path}`, headers, body: payload });
  return { status: res.status, body: res.body ? JSON.parse(res.body) : null };
}

const isEvent = name => i => i.event === name;

for (const transport of TRANSPORTS) {
  describe(`business plugins over ${transport}`, { skip }, () => {
    const [n1, n2] = NODES;

    test(`${transport}: a friend request and its acceptance reach both users' devices on both nodes`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const alice = await newUser(t, n1, transport, 'bfa');
        const bob = await newUser(t, n1, transport, 'bfb');
        const bob2 = await secondDevice(t, n2, transport, bob, 'bob@node2');
        const alice2 = await secondDevice(t, n2, transport, alice, 'alice@node2');
        for (const c of [bob, bob2, alice2]) await c.subscribeMe();
        const marks = [bob.mark(), bob2.mark(), alice2.mark()];

        const sent = await api(n1, alice, 'POST', '/friends/requests', { to: bob.uid(), message: 'hi from e2e' });
        assert.equal(sent.status, 200, j(sent));
        const id = sent.body.request.id;
        for (const [c, m] of [[bob, marks[0]], [bob2, marks[1]]]) {
          const info = await c.waitInfo('me', isEvent('friend.request.created'), { since: m });
          assert.equal(info.what, 'im');
          assert.equal(info.from, alice.uid());
          assert.equal(info.payload.request_id, id);
        }
        await bob2.waitInfo('me', isEvent('system_notification.created'), { since: marks[1] });

        const accepted = await api(n2, bob, 'POST', `/friends/requests/${id}/accept`);
        assert.equal(accepted.status, 200, j(accepted));
        await alice2.waitInfo('me', isEvent('friend.request.accepted'), { since: marks[2] });
        const again = await api(n1, bob, 'POST', `/friends/requests/${id}/accept`);
        assert.equal(again.status, 409, j(again));
        assert.equal(again.body.reason, 'REQUEST_NOT_PENDING');

        // Reading the notice on one node clears it on the device on the other.
        const list = await api(n1, bob, 'GET', '/notifications?unread=true');
        assert.equal(list.status, 200, j(list));
        const notice = list.body.notifications.find(n => n.kind === 'friend_request');
        assert.ok(notice, j(list.body));
        const m2 = bob2.mark();
        const read = await api(n1, bob, 'POST', `/notifications/${notice.id}/read`);
        assert.equal(read.status, 200, j(read));
        const synced = await bob2.waitInfo('me', isEvent('system_notification.read'), { since: m2 });
        assert.equal(synced.payload.id, notice.id);
      });

    test(`${transport}: a mute given on one node refuses the member's send on the other, and the event reaches the group`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const owner = await newUser(t, n1, transport, 'bgo');
        const member = await newUser(t, n2, transport, 'bgm');
        const grp = await createGroup(owner, `governed ${rand(3)}`);
        const gM = await joinTopic(member, grp.name);
        assert.equal((await member.publish(gM, 'before')).code, 202);
        const mM = member.mark();
        const muted = await api(n1, owner, 'PUT', `/groups/${grp.name}/mutes/${member.uid()}`, { duration_ms: 60000 });
        assert.equal(muted.status, 200, j(muted));
        const info = await member.waitInfo(grp.name, isEvent('group.mute.updated'), { since: mM });
        assert.equal(info.what, 'group');
        assert.equal(info.payload.user_id, member.uid());
        const refused = await member.tn.publishMessage(gM.createMessage('while muted', false)).then(
          c => ({ resolved: c }), e => ({ rejected: e }));
        assert.ok(refused.rejected, `the SDK rejects the publish: ${j(refused)}`);
        assert.equal(refused.rejected.code, 403, j(refused.rejected));
        assert.match(String(refused.rejected.message), /GROUP_MUTED/);

        // A plain member may not mute or kick; the owner cannot be kicked.
        const kick = await api(n2, member, 'DELETE', `/groups/${grp.name}/members/${owner.uid()}`);
        assert.equal(kick.status, 403, j(kick));
        const lifted = await api(n1, owner, 'DELETE', `/groups/${grp.name}/mutes/${member.uid()}`);
        assert.equal(lifted.status, 200, j(lifted));
        await member.waitInfo(grp.name, i => i.event === 'group.mute.updated' && i.payload.muted === false,
          { since: mM });
        assert.equal((await member.publish(gM, 'after')).code, 202);
      });

    test(`${transport}: a block refuses P2P messages from a device on the other node`,
      { timeout: TEST_TIMEOUT_MS }, async t => {
        const alice = await newUser(t, n1, transport, 'bba');
        const bob = await newUser(t, n2, transport, 'bbb');
        const pB = bob.tn.getTopic(alice.uid());
        assert.equal((await pB.subscribe()).code, 200);
        await tick();
        assert.equal((await bob.publish(pB, 'hello')).code, 202);
        const blocked = await api(n1, alice, 'POST', '/blocks', { user: bob.uid() });
        assert.equal(blocked.status, 200, j(blocked));
        await tick(100);
        const refused = await bob.tn.publishMessage(pB.createMessage('blocked?', false)).then(
          c => ({ resolved: c }), e => ({ rejected: e }));
        assert.ok(refused.rejected, j(refused));
        assert.equal(refused.rejected.code, 403);
        assert.match(String(refused.rejected.message), /BLOCKED/);
        const req = await api(n2, bob, 'POST', '/friends/requests', { to: alice.uid() });
        assert.equal(req.status, 403, j(req));
        assert.equal(req.body.reason, 'BLOCKED');
      });
  });
}
