//! Tinode's `anonymous` scheme: off until the tenant enables it, an account with no login that logs in again
//! only with its token, at the `anon` level, and joins topics with their `anon` default access.

mod harness;

use harness::{Client, cluster};
use palaver_core::TenantId;
use serde_json::{Value, json};

async fn anonymous(c: &mut Client) -> Value {
    c.hi().await;
    c.req(
        "acc",
        json!({ "user": "new", "scheme": "anonymous", "login": true, "desc": { "public": { "fn": "guest" } } }),
    )
    .await
    .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_accounts_are_off_until_the_tenant_allows_them() {
    let nodes = cluster(2, |_| {});
    let mut guest = Client::connect(&nodes[0]);
    let ctrl = anonymous(&mut guest).await;
    assert_eq!((ctrl["code"].clone(), ctrl["text"].clone()), (json!(401), json!("unknown authentication scheme")));

    let on = nodes[0].set_account_settings(TenantId::DEFAULT, &json!({ "anonymous": true })).await.unwrap();
    assert!(on.anonymous);
    assert_eq!(nodes[1].account_settings(TenantId::DEFAULT).await.unwrap().settings.anonymous, Some(true));
    let ctrl = anonymous(&mut guest).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(ctrl["params"]["authlvl"], "anon");
    assert_eq!(ctrl["params"]["desc"]["public"]["fn"], "guest");
    let token = ctrl["params"]["token"].as_str().unwrap().to_owned();
    let guest_id = ctrl["params"]["user"].as_str().unwrap().to_owned();

    // Its token is its only way back in, on any node; there is nothing to log in with otherwise.
    let mut again = Client::connect(&nodes[1]);
    again.hi().await;
    let (ctrl, _) = again.req("login", json!({ "scheme": "token", "secret": token })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["params"]["authlvl"].clone()), (json!(200), json!("anon")), "{ctrl}");
    let mut other = Client::connect(&nodes[1]);
    other.hi().await;
    let (ctrl, _) = other.req("login", json!({ "scheme": "anonymous" })).await;
    assert_eq!(ctrl["code"], 501, "{ctrl}");

    // Topics give it their anon access: none by default, what the owner grants otherwise.
    let mut owner = Client::connect(&nodes[0]);
    owner.signup("olga", "secret123").await;
    let closed = owner.new_group("members only").await;
    assert_eq!(again.sub(&closed).await["code"], 403);
    let (ctrl, _) = owner
        .req("sub", json!({ "topic": "new1", "set": { "desc": { "defacs": { "auth": "JRWPS", "anon": "JR" } } } }))
        .await;
    let open = ctrl["topic"].as_str().unwrap().to_owned();
    let ctrl = again.sub(&open).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(again.publish(&open, json!("hello")).await["code"], 403, "J and R only");
    // A P2P peer's anon defaults (none by default) decide whether it may write to them.
    assert_eq!(again.sub(&owner.user.clone()).await["code"], 403);
    // A logged-in account is not anonymous.
    let mut member = Client::connect(&nodes[1]);
    member.signup("mick", "secret123").await;
    assert_eq!(member.sub(&closed).await["code"], 200);
    assert_ne!(guest_id, member.user);

    // Turned off again: no new anonymous accounts; the existing one keeps its token.
    nodes[1].set_account_settings(TenantId::DEFAULT, &json!({ "anonymous": null })).await.unwrap();
    let mut late = Client::connect(&nodes[0]);
    assert_eq!(anonymous(&mut late).await["code"], 401);
    let bad = nodes[0].set_account_settings(TenantId::DEFAULT, &json!({ "anonymous": "yes" })).await;
    assert!(bad.is_err(), "{bad:?}");
}
