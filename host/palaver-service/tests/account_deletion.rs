//! `{del what:"user"}` on two in-process nodes sharing one store: the account's other sessions close on the other
//! node, its owned group is deleted for its members, it leaves the groups it joined, its P2P peer is told, it
//! cannot log in again while its login is free for someone new, and nobody deletes another's account.

mod harness;

use harness::{Client, cluster_with_store};
use palaver_core::ports::{SubscriptionStore, UserStore};
use palaver_core::{RecordState, TenantId, UserId};
use serde_json::json;

async fn user(svc: &palaver_service::Service, login: &str) -> Client {
    let mut c = Client::connect(svc);
    c.signup(login, "secret123").await;
    c.sub("me").await;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_account_is_gone_everywhere_and_its_topics_are_told() {
    let (nodes, store) = cluster_with_store(2);
    let t = TenantId::DEFAULT;
    let mut dora = user(&nodes[0], "dora").await;
    let mut ann = user(&nodes[1], "ann").await;
    let mut ben = user(&nodes[1], "ben").await;
    let mut carl = user(&nodes[1], "carl").await;
    // Dora owns a group Ann joined, joined Ben's group, and talks to Carl.
    let dora_grp = dora.new_group("dora's").await;
    assert_eq!(ann.sub(&dora_grp).await["code"], 200);
    let ben_grp = ben.new_group("ben's").await;
    assert_eq!(dora.sub(&ben_grp).await["code"], 200);
    assert_eq!(dora.sub(&carl.user.clone()).await["code"], 200);
    assert_eq!(dora.publish(&carl.user.clone(), json!("hi carl")).await["code"], 202);
    let mut tablet = Client::connect(&nodes[1]);
    assert_eq!(tablet.login("dora", "secret123").await["code"], 200);

    // Nobody deletes someone else's account over the socket.
    let (ctrl, _) = carl.req("del", json!({ "what": "user", "user": ann.user })).await;
    assert_eq!(ctrl["code"], 403, "{ctrl}");

    let id = UserId::parse(&dora.user).unwrap();
    let (ctrl, _) = dora.req("del", json!({ "what": "user", "hard": true })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    tablet.wait_for("the other node's session closes", |f| f["ctrl"]["code"] == 205).await;
    let gone = |src: String| move |f: &serde_json::Value| f["pres"]["what"] == "gone" && f["pres"]["src"] == src;
    ann.wait_for("the owned group is gone for its member", gone(dora_grp.clone())).await;
    carl.wait_for("the P2P peer is told", gone(dora.user.clone())).await;

    let account = store.get_user(t, id).await.unwrap().expect("the row stays for the messages it sent");
    assert_eq!(account.state, RecordState::Deleted);
    assert_eq!((account.public, account.tags.len()), (None, 0), "hard erases the profile");
    assert!(store.list_user_subs(t, id).await.unwrap().is_empty(), "it left every topic");
    let ben_members = store.list_topic_subs(t, &ben_grp).await.unwrap();
    assert!(ben_members.iter().all(|s| s.user != id), "Ben's group lost it");

    let mut again = Client::connect(&nodes[0]);
    assert_eq!(again.login("dora", "secret123").await["code"], 401, "no login any more");
    let (ctrl, _) = again.req("login", json!({ "scheme": "token", "secret": dora.token })).await;
    assert_eq!(ctrl["code"], 401, "nor its tokens: {ctrl}");
    let mut newcomer = Client::connect(&nodes[1]);
    newcomer.signup("dora", "another1").await;
    assert_ne!(newcomer.user, dora.user, "the login is free for a new account");
}
