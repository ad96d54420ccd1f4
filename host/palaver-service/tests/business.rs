//! Business commands over two in-process nodes sharing one store and bus, with rules that allow everything: what
//! the host itself guarantees (events to the right devices on every node, the publish gate for mutes and
//! blocks, stored notifications and their read sync, member paging, the owner's protection). The plugins' own
//! rules are tested with the real components in `palaver-server`'s `business` tests.

mod harness;

use harness::{Client, basic, cluster};
use palaver_core::{TenantId, UserId};
use palaver_service::{BizError, Service};
use serde_json::{Value, json};

async fn user(svc: &Service, login: &str) -> Client {
    let mut c = Client::connect(svc);
    c.signup(login, "secret123").await;
    c
}

/// The same user's second device, on `svc`.
async fn device(svc: &Service, login: &str) -> Client {
    let mut c = Client::connect(svc);
    c.req("hi", json!({ "ver": "0.25.3", "ua": "test/1.0" })).await;
    let (ctrl, _) = c.req("login", json!({ "scheme": "basic", "secret": basic(login, "secret123") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    c.user = ctrl["params"]["user"].as_str().unwrap().to_owned();
    c
}

fn uid(c: &Client) -> UserId {
    UserId::parse(&c.user).unwrap()
}

async fn run(svc: &Service, actor: &Client, command: &str, args: Value) -> Result<Value, BizError> {
    let command = palaver_api::CommandName::parse(command).expect("a command of the table");
    svc.run_command(TenantId::DEFAULT, uid(actor), command, args).await
}

/// Waits for an `{info}` business event named `event`.
async fn info(c: &mut Client, event: &str) -> Value {
    let name = event.to_owned();
    c.wait_for(event, move |v| v["info"]["event"] == name.as_str()).await.0["info"].clone()
}

#[tokio::test]
async fn a_friend_request_reaches_both_parties_on_every_node_and_is_stored_as_a_notification() {
    let nodes = cluster(2, |_| {});
    let alice = user(&nodes[0], "alice").await;
    let mut bob = user(&nodes[0], "bob").await;
    let mut bob2 = device(&nodes[1], "bob").await;
    let mut alice2 = device(&nodes[1], "alice").await;
    for c in [&mut bob, &mut bob2, &mut alice2] {
        c.sub("me").await;
    }
    let r = run(&nodes[0], &alice, "friend.request.create", json!({ "to": bob.user, "message": "hi" })).await.unwrap();
    assert_eq!(r["created"], true);
    let id = r["request"]["id"].as_i64().unwrap();
    let seen = info(&mut bob2, "friend.request.created").await;
    assert_eq!(seen["what"], "im");
    assert_eq!(seen["from"], alice.user.as_str());
    assert_eq!(seen["payload"]["request_id"], id);
    info(&mut alice2, "friend.request.created").await;
    let created = info(&mut bob2, "system_notification.created").await;
    assert_eq!(created["payload"]["notification"]["kind"], "friend_request");
    // A repeat is idempotent: the same request, no new event.
    let again = run(&nodes[1], &alice, "friend.request.create", json!({ "to": bob.user })).await.unwrap();
    assert_eq!((again["created"].clone(), again["request"]["id"].as_i64()), (json!(false), Some(id)));
    // The request to yourself and to nobody are refused by the host.
    let me = run(&nodes[0], &alice, "friend.request.create", json!({ "to": alice.user })).await.unwrap_err();
    assert_eq!((me.status(), me.reason.name()), (400, "SELF"));
    let nobody = run(&nodes[0], &alice, "friend.request.create", json!({ "to": "usrASNFZ4mrze8" })).await.unwrap_err();
    assert_eq!(nobody.reason.name(), "USER_NOT_FOUND");
    // Bob reads the notice on one device; the other device hears the new unread count.
    let list = run(&nodes[0], &bob, "notification.list", json!({})).await.unwrap();
    assert_eq!(list["unread"], 1);
    let nid = list["notifications"][0]["id"].as_i64().unwrap();
    let read = run(&nodes[0], &bob, "notification.read", json!({ "id": nid.to_string() })).await.unwrap();
    assert_eq!(read["unread"], 0);
    let synced = info(&mut bob2, "system_notification.read").await;
    assert_eq!(synced["payload"]["unread"], 0);
    let other = run(&nodes[0], &alice, "notification.read", json!({ "id": nid })).await.unwrap_err();
    assert_eq!(other.reason.name(), "NOTIFICATION_NOT_FOUND", "another user's notice does not exist for alice");
    // Accepting makes them friends on both sides; a second accept is refused.
    run(&nodes[1], &bob, "friend.request.accept", json!({ "id": id.to_string() })).await.unwrap();
    info(&mut alice2, "friend.request.accepted").await;
    let twice = run(&nodes[0], &bob, "friend.request.accept", json!({ "id": id.to_string() })).await.unwrap_err();
    assert_eq!((twice.status(), twice.reason.name()), (409, "REQUEST_NOT_PENDING"));
    let friends = run(&nodes[0], &alice, "friend.list", json!({})).await.unwrap();
    assert_eq!(friends["friends"][0]["user"], bob.user.as_str());
    let dup = run(&nodes[0], &bob, "friend.request.create", json!({ "to": alice.user })).await.unwrap_err();
    assert_eq!(dup.reason.name(), "ALREADY_FRIENDS");
}

#[tokio::test]
async fn a_block_stops_p2p_messages_from_every_node_until_lifted() {
    let nodes = cluster(2, |_| {});
    let mut alice = user(&nodes[0], "alice").await;
    let mut bob = user(&nodes[1], "bob").await;
    assert_eq!(alice.sub(&bob.user).await["code"], 200);
    assert_eq!(bob.sub(&alice.user).await["code"], 200);
    assert_eq!(bob.publish(&alice.user, json!("before")).await["code"], 202);
    run(&nodes[0], &alice, "block.create", json!({ "user": bob.user })).await.unwrap();
    // Bob is on the other node: the block must reach his node's publish gate before the command answered.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let refused = bob.publish(&alice.user, json!("after")).await;
    assert_eq!((refused["code"].clone(), refused["text"].clone()), (json!(403), json!("BLOCKED")), "{refused}");
    // The blocker can still write (the block is one-way).
    assert_eq!(alice.publish(&bob.user, json!("still me")).await["code"], 202);
    run(&nodes[0], &alice, "block.delete", json!({ "user": bob.user })).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(bob.publish(&alice.user, json!("again")).await["code"], 202);
}

#[tokio::test]
async fn a_mute_holds_on_every_node_and_mute_all_spares_admins() {
    let nodes = cluster(2, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ann = user(&nodes[1], "ann").await;
    let mut ben = user(&nodes[1], "ben").await;
    for c in [&mut ann, &mut ben] {
        assert_eq!(c.sub(&grp).await["code"], 200);
        assert_eq!(c.publish(&grp, json!("hello")).await["code"], 202);
    }
    let args = json!({ "topic": grp, "user": ann.user, "duration_ms": 60_000 });
    run(&nodes[0], &owner, "group.mute.set", args).await.unwrap();
    let ev = info(&mut ann, "group.mute.updated").await;
    assert_eq!((ev["what"].clone(), ev["payload"]["muted"].clone()), (json!("group"), json!(true)));
    let refused = ann.publish(&grp, json!("muted?")).await;
    assert_eq!((refused["code"].clone(), refused["text"].clone()), (json!(403), json!("GROUP_MUTED")));
    assert_eq!(ben.publish(&grp, json!("not me")).await["code"], 202);
    // The owner cannot be muted, whatever the rules say.
    let own = run(&nodes[1], &ann, "group.mute.set", json!({ "topic": grp, "user": owner.user })).await.unwrap_err();
    assert_eq!(own.reason.name(), "OWNER_PROTECTED");
    run(&nodes[0], &owner, "group.mute.clear", json!({ "topic": grp, "user": ann.user })).await.unwrap();
    info(&mut ann, "group.mute.updated").await;
    assert_eq!(ann.publish(&grp, json!("free")).await["code"], 202);
    // Muting everyone leaves the owner and admins able to speak.
    run(&nodes[0], &owner, "group.role.set", json!({ "topic": grp, "user": ben.user, "role": "admin" })).await.unwrap();
    run(&nodes[0], &owner, "group.mute.all", json!({ "topic": grp, "muted": true })).await.unwrap();
    info(&mut ann, "group.mute.updated").await;
    assert_eq!(ann.publish(&grp, json!("x")).await["text"], "GROUP_MUTED");
    assert_eq!(ben.publish(&grp, json!("admin")).await["code"], 202);
    assert_eq!(owner.publish(&grp, json!("owner")).await["code"], 202);
}

#[tokio::test]
async fn removing_a_member_evicts_them_everywhere_and_the_owner_cannot_be_removed() {
    let nodes = cluster(2, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ann = user(&nodes[1], "ann").await;
    ann.sub("me").await;
    assert_eq!(ann.sub(&grp).await["code"], 200);
    let kick = run(&nodes[1], &ann, "group.member.remove", json!({ "topic": grp, "user": owner.user })).await;
    assert_eq!(kick.unwrap_err().reason.name(), "OWNER_PROTECTED");
    run(&nodes[0], &owner, "group.member.remove", json!({ "topic": grp, "user": ann.user })).await.unwrap();
    let (evicted, _) = ann.wait_for("eviction", |v| v["ctrl"]["code"] == 205).await;
    assert_eq!(evicted["ctrl"]["topic"], grp.as_str());
    let removed = info(&mut ann, "group.member.removed").await;
    assert_eq!(removed["payload"]["user_id"], ann.user.as_str());
    let n = run(&nodes[1], &ann, "notification.list", json!({})).await.unwrap();
    assert_eq!(n["notifications"][0]["kind"], "group_removed");
    let gone = run(&nodes[1], &ann, "group.member.list", json!({ "topic": grp })).await.unwrap_err();
    assert_eq!((gone.status(), gone.reason.name()), (403, "NOT_MEMBER"));
    // The removal sticks: neither Tinode's own join nor the API's brings the member back on their own, nor a
    // plain member's Tinode invite.
    assert_eq!(ann.sub(&grp).await["code"], 403);
    let mut ben = user(&nodes[0], "ben").await;
    assert_eq!(ben.sub(&grp).await["code"], 200);
    let invite = json!({ "topic": grp, "sub": { "user": ann.user, "mode": "JRWP" } });
    assert_eq!(ben.req("set", invite.clone()).await.0["code"], 403);
    // A policy stored through the API keeps Tinode invites to admins as well.
    run(&nodes[0], &owner, "group.settings.set", json!({ "topic": grp, "join_policy": "approval" })).await.unwrap();
    let carl = user(&nodes[0], "carl").await;
    let invite_carl = json!({ "topic": grp, "sub": { "user": carl.user, "mode": "JRWP" } });
    let refused = ben.req("set", invite_carl).await.0;
    assert_eq!(
        (refused["code"].clone(), refused["text"].clone()),
        (json!(403), json!("permission denied: only admins invite to this group"))
    );
    let open = json!({ "topic": grp, "join_policy": "open" });
    run(&nodes[0], &owner, "group.settings.set", open).await.unwrap();
    let again = run(&nodes[1], &ann, "group.join.request", json!({ "topic": grp })).await.unwrap_err();
    assert_eq!((again.status(), again.reason.name()), (403, "MEMBER_REMOVED"));
    // The owner's invite lifts it.
    run(&nodes[0], &owner, "group.invite", json!({ "topic": grp, "users": [ann.user] })).await.unwrap();
    assert_eq!(ann.sub(&grp).await["code"], 200);
}

#[tokio::test]
async fn the_member_list_pages_with_a_stable_cursor_and_shows_changes_at_once() {
    let nodes = cluster(2, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut members = Vec::new();
    for i in 0..5 {
        let mut c = user(&nodes[i % 2], &format!("m{i}")).await;
        assert_eq!(c.sub(&grp).await["code"], 200);
        members.push(c);
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page =
            run(&nodes[1], &members[0], "group.member.list", json!({ "topic": grp, "limit": 2, "cursor": cursor }))
                .await
                .unwrap();
        assert_eq!(page["total"], 6);
        seen.extend(page["members"].as_array().unwrap().iter().map(|m| m["user"].as_str().unwrap().to_owned()));
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((seen.len(), sorted.len()), (6, 6), "every member once: {seen:?}");
    // A role change shows in the next page read on the other node, not after a cache expiry.
    let target = members[3].user.clone();
    run(&nodes[0], &owner, "group.role.set", json!({ "topic": grp, "user": target, "role": "admin" })).await.unwrap();
    let all = run(&nodes[1], &members[0], "group.member.list", json!({ "topic": grp })).await.unwrap();
    let row = all["members"].as_array().unwrap().iter().find(|m| m["user"] == target.as_str()).unwrap().clone();
    assert_eq!(row["role"], "admin");
    let owner_row =
        all["members"].as_array().unwrap().iter().find(|m| m["user"] == owner.user.as_str()).unwrap().clone();
    assert_eq!(owner_row["role"], "owner");
}

#[tokio::test]
async fn the_admin_limit_the_rules_fix_is_applied_atomically() {
    let nodes = cluster(1, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let mut c = user(&nodes[0], &format!("m{i}")).await;
        c.sub(&grp).await;
        ids.push(c.user.clone());
    }
    // The test rules allow two admins; four grants race.
    let grants = ids.iter().map(|u| {
        let (svc, owner) = (nodes[0].clone(), UserId::parse(&owner.user).unwrap());
        let args = json!({ "topic": grp, "user": u, "role": "admin" });
        async move { svc.run_command(TenantId::DEFAULT, owner, palaver_api::CommandName::GroupRoleSet, args).await }
    });
    let results = futures_like_join_all(grants).await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let limited =
        results.iter().filter(|r| r.as_ref().is_err_and(|e| e.reason == palaver_api::Reason::AdminLimit)).count();
    assert_eq!((ok, limited), (2, 2), "{results:?}");
}

/// Runs futures concurrently on the runtime and collects their outputs in order.
async fn futures_like_join_all<F, T>(futs: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn announcements_reach_the_group_and_read_marks_reach_only_the_readers_devices() {
    let nodes = cluster(2, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ann = user(&nodes[1], "ann").await;
    ann.sub(&grp).await;
    let mut ann2 = device(&nodes[0], "ann").await;
    ann2.sub("me").await;
    let a = run(
        &nodes[0],
        &owner,
        "group.announcement.create",
        json!({ "topic": grp, "title": "Rules",
        "content": "be kind", "pinned": true }),
    )
    .await
    .unwrap();
    let ev = info(&mut ann, "group.announcement.created").await;
    assert_eq!(ev["payload"]["announcement"]["title"], "Rules");
    let id = a["id"].as_i64().unwrap();
    let r = run(&nodes[1], &ann, "group.announcement.read", json!({ "topic": grp, "id": id })).await.unwrap();
    assert_eq!(r["first_read"], true);
    info(&mut ann2, "group.announcement.read").await;
    let list = run(&nodes[1], &ann, "group.announcement.list", json!({ "topic": grp })).await.unwrap();
    assert_eq!(
        (list["announcements"][0]["reads"].clone(), list["announcements"][0]["read"].is_null()),
        (json!(1), false)
    );
    let big = "x".repeat(40_000);
    let e =
        run(&nodes[0], &owner, "group.announcement.create", json!({ "topic": grp, "content": big })).await.unwrap_err();
    assert_eq!((e.status(), e.reason.name()), (413, "ANNOUNCEMENT_TOO_LARGE"));
}

#[tokio::test]
async fn an_ownership_transfer_moves_tinode_s_owner_rights_too() {
    let nodes = cluster(2, |_| {});
    let mut owner = user(&nodes[0], "owner").await;
    let grp = owner.new_group("team").await;
    let mut ann = user(&nodes[1], "ann").await;
    assert_eq!(ann.sub(&grp).await["code"], 200);
    run(&nodes[0], &owner, "group.owner.transfer", json!({ "topic": grp, "user": ann.user })).await.unwrap();
    // The old owner keeps no owner's powers under Tinode's protocol...
    let del = owner.req("del", json!({ "topic": grp, "what": "topic", "hard": true })).await.0;
    assert_eq!(del["code"], 403, "{del}");
    let (desc, _) = owner.req("get", json!({ "topic": grp, "what": "desc" })).await;
    assert!(!desc["desc"]["acs"]["given"].as_str().unwrap().contains('O'), "{desc}");
    // ...and the new owner has them.
    let set = ann.req("set", json!({ "topic": grp, "desc": { "public": { "fn": "renamed" } } })).await.0;
    assert_eq!(set["code"], 200, "{set}");
    let (desc, _) = ann.req("get", json!({ "topic": grp, "what": "desc" })).await;
    assert_eq!(desc["desc"]["acs"]["given"], "JRWPASDO", "{desc}");
}

#[tokio::test]
async fn an_invite_beyond_the_invitees_group_limit_is_refused() {
    let svc = cluster(1, |c| c.max_groups_per_user = 1).remove(0);
    let mut alice = user(&svc, "alice").await;
    let mut bob = user(&svc, "bob").await;
    bob.new_group("bob's").await;
    let grp = alice.new_group("alice's").await;
    let err =
        run(&svc, &alice, "group.invite", json!({ "topic": grp, "users": [bob.user.clone()] })).await.unwrap_err();
    assert_eq!((err.status(), err.reason.name()), (409, "TOO_MANY_GROUPS"), "{err:?}");
}
