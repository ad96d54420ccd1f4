//! Credentials on two in-process nodes sharing one store and one code store: sign-up with a required email
//! answers 300 with a token, a login confirms the code (on the other node), wrong and used-up codes, the
//! tag a confirmed address becomes, `{set|get|del cred}` on `me`, the hourly send limit, and the password reset
//! by code, which closes the account's other sessions.

mod harness;

use harness::codes::{last_code, sent_to};
use harness::{Client, basic, cluster};
use palaver_core::ports::CodePurpose;
use palaver_service::ServiceConfig;
use serde_json::{Value, json};

fn require_email(cfg: &mut ServiceConfig) {
    cfg.credentials.required = vec!["email".into()];
}

fn unique(name: &str) -> String {
    format!("{name}-{:08x}@example.com", rand::random::<u32>())
}

async fn signup(c: &mut Client, login: &str, email: &str) -> Value {
    c.hi().await;
    let body = json!({ "user": "new", "scheme": "basic", "secret": basic(login, "secret123"), "login": true,
                       "cred": [{ "meth": "email", "val": email }] });
    c.req("acc", body).await.0
}

async fn login_with(c: &mut Client, login: &str, cred: Value) -> Value {
    let body = json!({ "scheme": "basic", "secret": basic(login, "secret123"), "cred": cred });
    c.req("login", body).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_email_is_confirmed_by_code_before_the_first_login() {
    let nodes = cluster(2, require_email);
    let email = unique("Erin");
    let mut c = Client::connect(&nodes[0]);
    let hi = c.hi().await;
    assert_eq!(hi["params"]["reqCred"], json!({ "auth": ["email"] }), "{hi}");

    // No email at all: refused, and no account is made.
    let body = json!({ "user": "new", "scheme": "basic", "secret": basic("erin", "secret123"), "login": true });
    let (ctrl, _) = c.req("acc", body).await;
    assert_eq!((ctrl["code"].clone(), ctrl["params"]["creds"].clone()), (json!(422), json!(["email"])), "{ctrl}");
    let (ctrl, _) = c
        .req(
            "acc",
            json!({ "user": "new", "secret": basic("erin", "secret123"), "login": true,
                                         "cred": [{ "meth": "email", "val": "not-an-address" }] }),
        )
        .await;
    assert_eq!((ctrl["code"].clone(), ctrl["params"]["what"].clone()), (json!(400), json!("email")), "{ctrl}");

    let ctrl = signup(&mut c, "erin", &email).await;
    assert_eq!(ctrl["code"], 300, "{ctrl}");
    assert_eq!(ctrl["text"], "validate credentials");
    assert_eq!(ctrl["params"]["cred"], json!(["email"]));
    assert!(ctrl["params"]["desc"]["created"].is_string(), "{ctrl}");
    let token = ctrl["params"]["token"].as_str().expect("a token comes back").to_owned();
    let stored = email.to_lowercase();
    assert_eq!(sent_to(&stored).len(), 1, "one code, to the normalised address");
    assert_eq!(sent_to(&stored)[0].purpose, CodePurpose::Confirm);
    // The session is not logged in.
    let (ctrl, _) = c.req("sub", json!({ "topic": "me" })).await;
    assert_eq!(ctrl["code"], 401, "{ctrl}");

    // On the other node: a login without the code, then with a wrong one, is answered 300 again.
    let mut other = Client::connect(&nodes[1]);
    other.hi().await;
    assert_eq!(login_with(&mut other, "erin", json!([])).await["code"], 300);
    let wrong = login_with(&mut other, "erin", json!([{ "meth": "email", "resp": "000000x" }])).await;
    assert_eq!(wrong["code"], 300, "{wrong}");
    // The token of the 300 logs in once it carries the code, as the web app does.
    let code = last_code(&stored);
    let (ctrl, _) = other
        .req("login", json!({ "scheme": "token", "secret": token, "cred": [{ "meth": "email", "resp": code }] }))
        .await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    assert_eq!(other.sub("me").await["code"], 200);
    let (meta, _) = other.req("get", json!({ "topic": "me", "what": "cred" })).await;
    assert_eq!(meta["cred"], json!([{ "meth": "email", "val": stored, "done": true }]), "{meta}");
    let frames = other.send(json!({ "get": { "id": "t", "topic": "me", "what": "tags" } })).await;
    let tags = frames.iter().find_map(|f| f["meta"]["tags"].as_array().cloned()).expect("tags");
    assert!(tags.contains(&json!(format!("email:{stored}"))), "{tags:?}");

    // The code is spent: a second login with it needs none, and a plain login now works.
    let mut third = Client::connect(&nodes[0]);
    third.hi().await;
    assert_eq!(login_with(&mut third, "erin", json!([])).await["code"], 200);

    // Nobody else can claim the confirmed address.
    let mut late = Client::connect(&nodes[0]);
    assert_eq!(signup(&mut late, "erin2", &email).await["code"], 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_wears_out_and_a_new_one_is_sent() {
    let nodes = cluster(1, |cfg| {
        require_email(cfg);
        cfg.credentials.max_attempts = 2;
    });
    let email = unique("wes");
    let mut c = Client::connect(&nodes[0]);
    assert_eq!(signup(&mut c, "wes", &email).await["code"], 300);
    // What cannot be a code (a half-typed one) uses no try.
    for partial in ["1", "12345", "1234567", "abcdef"] {
        assert_eq!(login_with(&mut c, "wes", json!([{ "meth": "email", "resp": partial }])).await["code"], 300);
    }
    let old = last_code(&email);
    let wrong = if old == "000000" { "111111" } else { "000000" };
    for _ in 0..2 {
        assert_eq!(login_with(&mut c, "wes", json!([{ "meth": "email", "resp": wrong }])).await["code"], 300);
    }
    assert_eq!(sent_to(&email).len(), 1);
    // The second miss voided the code: the next try, even with the old code, is told and gets a new one.
    let ctrl = login_with(&mut c, "wes", json!([{ "meth": "email", "resp": old }])).await;
    assert_eq!(ctrl["code"], 422, "{ctrl}");
    assert_eq!(sent_to(&email).len(), 2);
    let ctrl = login_with(&mut c, "wes", json!([{ "meth": "email", "resp": last_code(&email) }])).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_added_confirmed_and_removed_on_me() {
    let nodes = cluster(1, |_| {});
    let mut c = Client::connect(&nodes[0]);
    c.signup("mia", "secret123").await;
    assert_eq!(c.sub("me").await["code"], 200);
    let (ctrl, _) = c.req("get", json!({ "topic": "me", "what": "cred" })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["params"]["what"].clone()), (json!(204), json!("creds")), "{ctrl}");

    let email = unique("mia");
    let (ctrl, _) = c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "val": email } })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let (meta, _) = c.req("get", json!({ "topic": "me", "what": "cred" })).await;
    assert_eq!(meta["cred"], json!([{ "meth": "email", "val": email }]), "unconfirmed: no done: {meta}");
    let (ctrl, _) = c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "resp": "nope" } })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["text"].clone()), (json!(406), json!("invalid response")), "{ctrl}");
    let code = last_code(&email);
    let (ctrl, frames) = c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "resp": code } })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let pres = frames.iter().any(|f| f["pres"]["what"] == "tags" && f["pres"]["topic"] == "me");
    let pres = pres || c.wait_for("pres tags", |f| f["pres"]["what"] == "tags").await.0.is_object();
    assert!(pres);
    // A client's tag list cannot drop the address's tag nor add another's.
    let (ctrl, _) = c.req("set", json!({ "topic": "me", "tags": ["music", "email:ceo@example.com"] })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let frames = c.send(json!({ "get": { "id": "t", "topic": "me", "what": "tags" } })).await;
    let tags = frames.iter().find_map(|f| f["meta"]["tags"].as_array().cloned()).expect("tags");
    assert_eq!(tags, vec![json!(format!("email:{email}")), json!("music")]);

    // Bad input gets a clear error.
    let (ctrl, _) = c.req("set", json!({ "topic": "me", "cred": { "meth": "fax", "val": "+15550100" } })).await;
    assert_eq!(ctrl["code"], 400, "{ctrl}");
    let (ctrl, _) = c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "val": email } })).await;
    assert_eq!(ctrl["code"], 409, "confirmed already: {ctrl}");

    let (ctrl, _) =
        c.req("del", json!({ "topic": "me", "what": "cred", "cred": { "meth": "email", "val": email } })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    let (ctrl, _) = c.req("get", json!({ "topic": "me", "what": "cred" })).await;
    assert_eq!(ctrl["code"], 204, "{ctrl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_only_confirmed_address_of_a_required_method_stays() {
    let nodes = cluster(1, require_email);
    let email = unique("lou");
    let mut c = Client::connect(&nodes[0]);
    assert_eq!(signup(&mut c, "lou", &email).await["code"], 300);
    assert_eq!(login_with(&mut c, "lou", json!([{ "meth": "email", "resp": last_code(&email) }])).await["code"], 200);
    assert_eq!(c.sub("me").await["code"], 200);
    let del = json!({ "topic": "me", "what": "cred", "cred": { "meth": "email", "val": email } });
    let (ctrl, _) = c.req("del", del.clone()).await;
    assert_eq!(ctrl["code"], 422, "{ctrl}");
    // With a second confirmed address the first may go.
    let second = unique("lou2");
    c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "val": second } })).await;
    let code = last_code(&second);
    assert_eq!(c.req("set", json!({ "topic": "me", "cred": { "meth": "email", "resp": code } })).await.0["code"], 200);
    assert_eq!(c.req("del", del).await.0["code"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_gets_at_most_its_hourly_codes() {
    let nodes = cluster(1, |cfg| cfg.credentials.sends_per_hour = 2);
    let mut c = Client::connect(&nodes[0]);
    c.signup("hal", "secret123").await;
    let email = unique("hal");
    let add = json!({ "topic": "me", "cred": { "meth": "email", "val": email } });
    assert_eq!(c.req("set", add.clone()).await.0["code"], 200);
    assert_eq!(c.req("set", add.clone()).await.0["code"], 200);
    let (ctrl, _) = c.req("set", add).await;
    assert_eq!(ctrl["code"], 429, "{ctrl}");
    assert!(ctrl["params"]["retry_after_ms"].as_u64().unwrap() > 3_000_000, "{ctrl}");
    assert_eq!(sent_to(&email).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_is_reset_by_a_code_and_every_session_closes() {
    let nodes = cluster(2, require_email);
    let email = unique("rae");
    let mut c = Client::connect(&nodes[0]);
    assert_eq!(signup(&mut c, "rae", &email).await["code"], 300);
    assert_eq!(login_with(&mut c, "rae", json!([{ "meth": "email", "resp": last_code(&email) }])).await["code"], 200);
    let old_token = c.req("login", json!({})).await.0; // 409: the session stays as it is
    assert_eq!(old_token["code"], 409);

    // An unknown address gets the same answer, and no code.
    let b64 = |s: String| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
    let mut stranger = Client::connect(&nodes[1]);
    stranger.hi().await;
    let nobody = unique("nobody");
    let (ctrl, _) =
        stranger.req("login", json!({ "scheme": "reset", "secret": b64(format!("basic:email:{nobody}")) })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["text"].clone()), (json!(301), json!("auth reset")), "{ctrl}");
    assert!(sent_to(&nobody).is_empty());

    let (ctrl, _) =
        stranger.req("login", json!({ "scheme": "reset", "secret": b64(format!("basic:email:{email}")) })).await;
    assert_eq!(ctrl["code"], 301, "{ctrl}");
    let sent = sent_to(&email);
    assert_eq!(sent.last().unwrap().purpose, CodePurpose::Reset);
    let code = sent.last().unwrap().code.clone();
    let reset = |code: &str| {
        json!({ "user": "", "scheme": "basic", "secret": b64(":brand-new-pw".into()), "tmpscheme": "code",
                "tmpsecret": b64(format!("{code}:email:{email}")) })
    };
    let (ctrl, _) = stranger.req("acc", reset("999999999")).await;
    assert_eq!(ctrl["code"], 401, "a wrong code: {ctrl}");
    let (ctrl, _) = stranger.req("acc", reset(&code)).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
    c.wait_for("the old session closes", |f| f["ctrl"]["code"] == 205).await;
    let (ctrl, _) = stranger.req("acc", reset(&code)).await;
    assert_eq!(ctrl["code"], 401, "a code works once: {ctrl}");

    let mut again = Client::connect(&nodes[1]);
    again.hi().await;
    let (ctrl, _) = again.req("login", json!({ "scheme": "basic", "secret": basic("rae", "secret123") })).await;
    assert_eq!(ctrl["code"], 401, "the old password is gone");
    let (ctrl, _) = again.req("login", json!({ "scheme": "basic", "secret": basic("rae", "brand-new-pw") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");

    // Tinode's second way: the code buys a one-time grant (`{login scheme:"code"}`), which sets the password.
    let mut third = Client::connect(&nodes[0]);
    third.hi().await;
    third.req("login", json!({ "scheme": "reset", "secret": b64(format!("basic:email:{email}")) })).await;
    let code = last_code(&email);
    let (ctrl, _) =
        third.req("login", json!({ "scheme": "code", "secret": b64(format!("{code}:email:{email}")) })).await;
    assert_eq!((ctrl["code"].clone(), ctrl["params"]["authlvl"].clone()), (json!(200), json!("")), "{ctrl}");
    let grant = ctrl["params"]["token"].as_str().unwrap().to_owned();
    assert_eq!(third.sub("me").await["code"], 401, "the grant logs nobody in");
    let (ctrl, _) = third.req("login", json!({ "scheme": "token", "secret": grant })).await;
    assert_eq!(ctrl["code"], 401, "nor is it a login token: {ctrl}");
    let by_grant =
        json!({ "scheme": "basic", "secret": b64(":third-pw".into()), "tmpscheme": "token", "tmpsecret": grant });
    assert_eq!(third.req("acc", by_grant.clone()).await.0["code"], 200);
    assert_eq!(third.req("acc", by_grant).await.0["code"], 401, "a grant works once");
    let mut fourth = Client::connect(&nodes[1]);
    fourth.hi().await;
    let (ctrl, _) = fourth.req("login", json!({ "scheme": "basic", "secret": basic("rae", "third-pw") })).await;
    assert_eq!(ctrl["code"], 200, "{ctrl}");
}
