//! The native test harness: run a plugin's hooks in plain `cargo test`, without wasm, against an in-memory host
//! whose settings come from the plugin's own manifest (defaults merged with the test's values), and run the golden
//! fixtures the manifest ships, so the component's load gate holds no surprises.

use crate::host::{Context, Host};
use crate::types::{CallInfo, Command, CommandOutcome, HostError, Level, Member, Message, Notification, Topic, User};
use crate::{
    AccountChange, AccountEvent, CommandHandler, File, FileScanner, Gate, Join, JoinVerdict, Listener, Login,
    PublishFilter, Published, Push, PushDecision, PushFilter, Rejection, ScanVerdict, TopicKind, Verdict,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// An event a plugin emitted in a test.
#[derive(Debug, Clone, PartialEq)]
pub enum TestEvent {
    ToUser { user: String, name: String, payload: Value },
    ToTopic { topic: String, name: String, payload: Value },
}

/// A host in memory. Writes apply at once: natively there is no trap to roll them back.
#[derive(Debug, Default)]
pub struct TestHost {
    kv: BTreeMap<String, (Vec<u8>, Option<u64>)>,
    /// The settings the plugin sees, a JSON object.
    pub settings: Map<String, Value>,
    pub users: BTreeMap<String, User>,
    pub topics: BTreeMap<String, Topic>,
    pub members: Vec<Member>,
    pub events: Vec<TestEvent>,
    pub notifications: Vec<Notification>,
    pub logs: Vec<(Level, String)>,
    /// The clock, in Unix milliseconds; tests move it.
    pub now_ms: u64,
    /// The HTTP requests the plugin sent, in order.
    pub http_requests: Vec<crate::http::Request>,
    /// The answers to the plugin's next HTTP requests, in order; with none left a request is denied, as the
    /// host's golden fixtures deny every request (they reach no network).
    pub http_responses: std::collections::VecDeque<Result<crate::http::Response, crate::http::HttpError>>,
}

impl TestHost {
    /// The live value under `key`.
    pub fn kv_value(&self, key: &str) -> Option<&[u8]> {
        self.kv.get(key).filter(|(_, exp)| exp.is_none_or(|t| t > self.now_ms)).map(|(v, _)| v.as_slice())
    }

    fn live(&self, key: &str) -> Option<Vec<u8>> {
        self.kv_value(key).map(<[u8]>::to_vec)
    }
}

impl Host for TestHost {
    fn kv_get(&mut self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
        Ok(self.live(key))
    }

    fn kv_set(&mut self, key: &str, value: &[u8], ttl_ms: Option<u64>) -> Result<(), HostError> {
        let exp = ttl_ms.map(|t| self.now_ms + t);
        self.kv.insert(key.to_owned(), (value.to_vec(), exp));
        Ok(())
    }

    fn kv_delete(&mut self, key: &str) -> Result<bool, HostError> {
        let existed = self.live(key).is_some();
        self.kv.remove(key);
        Ok(existed)
    }

    fn kv_compare_and_set(
        &mut self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
        ttl_ms: Option<u64>,
    ) -> Result<bool, HostError> {
        if self.live(key).as_deref() != expected {
            return Ok(false);
        }
        match value {
            Some(v) => self.kv_set(key, v, ttl_ms)?,
            None => {
                self.kv.remove(key);
            }
        }
        Ok(true)
    }

    fn user(&mut self, id: &str) -> Result<Option<User>, HostError> {
        Ok(self.users.get(id).cloned())
    }

    fn topic(&mut self, name: &str) -> Result<Option<Topic>, HostError> {
        Ok(self.topics.get(name).cloned())
    }

    fn member(&mut self, topic: &str, user: &str) -> Result<Option<Member>, HostError> {
        Ok(self.members.iter().find(|m| m.topic == topic && m.user == user).cloned())
    }

    fn members(&mut self, topic: &str, limit: u32) -> Result<Vec<Member>, HostError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(self.members.iter().filter(|m| m.topic == topic).take(limit).cloned().collect())
    }

    fn emit_to_user(&mut self, user: &str, name: &str, payload: &Value) -> Result<(), HostError> {
        let e = TestEvent::ToUser { user: user.to_owned(), name: name.to_owned(), payload: payload.clone() };
        self.events.push(e);
        Ok(())
    }

    fn emit_to_topic(&mut self, topic: &str, name: &str, payload: &Value) -> Result<(), HostError> {
        let e = TestEvent::ToTopic { topic: topic.to_owned(), name: name.to_owned(), payload: payload.clone() };
        self.events.push(e);
        Ok(())
    }

    fn notify(&mut self, n: &Notification) -> Result<(), HostError> {
        self.notifications.push(n.clone());
        Ok(())
    }

    fn log(&mut self, level: Level, message: &str) {
        self.logs.push((level, message.to_owned()));
    }

    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }

    fn settings(&mut self) -> String {
        Value::Object(self.settings.clone()).to_string()
    }

    fn http_send(&mut self, req: &crate::http::Request) -> Result<crate::http::Response, crate::http::HttpError> {
        self.http_requests.push(req.clone());
        self.http_responses.pop_front().unwrap_or_else(|| {
            Err(crate::http::HttpError::Denied("no response queued in TestHost::http_responses".to_owned()))
        })
    }
}

/// A plugin with a test host around it.
pub struct Harness<P> {
    pub plugin: P,
    pub host: TestHost,
    /// The call context every hook call gets.
    pub call: CallInfo,
    defaults: Map<String, Value>,
}

impl<P: Default> Default for Harness<P> {
    fn default() -> Self {
        Harness::new()
    }
}

impl<P: Default> Harness<P> {
    /// A fresh plugin with no settings, called by a fixed test user of tenant 1 on node `test`.
    pub fn new() -> Harness<P> {
        let call =
            CallInfo { tenant: 1, actor: "usrASNFZ4mrze8".to_owned(), node: "test".to_owned(), ..CallInfo::default() };
        Harness { plugin: P::default(), host: TestHost::default(), call, defaults: Map::new() }
    }

    /// A fresh plugin whose settings start from the defaults of `manifest` (its `plugin.toml` text).
    pub fn with_manifest(manifest: &str) -> Result<Harness<P>, String> {
        let mut h = Harness::new();
        h.defaults = crate::testing::defaults(manifest)?;
        h.host.settings = h.defaults.clone();
        Ok(h)
    }

    /// Sets the tenant's settings: the manifest's defaults, overridden by `values` (a JSON object).
    pub fn settings(&mut self, values: Value) -> &mut Self {
        let mut s = self.defaults.clone();
        if let Value::Object(o) = values {
            s.extend(o);
        }
        self.host.settings = s;
        self
    }
}

impl<P: PublishFilter> Harness<P> {
    /// The verdict on a group message with this content.
    pub fn publish(&mut self, content: impl Into<Value>) -> Verdict {
        self.publish_message(&Message::new(content))
    }

    /// The verdict on a message.
    pub fn publish_message(&mut self, msg: &Message) -> Verdict {
        let mut cx = Context::new(self.call.clone(), &mut self.host);
        self.plugin.before_publish(&mut cx, msg)
    }
}

impl<P: PushFilter> Harness<P> {
    /// The decision on a push.
    pub fn push(&mut self, push: &Push) -> PushDecision {
        let mut cx = Context::new(self.call.clone(), &mut self.host);
        self.plugin.before_push(&mut cx, push)
    }
}

impl<P: FileScanner> Harness<P> {
    /// The verdict on a file. The call is the harness's, with the file's uploader as its actor and no session, as
    /// the host makes it.
    pub fn scan(&mut self, file: &File) -> ScanVerdict {
        let call = CallInfo { actor: file.uploader.clone(), session: String::new(), ..self.call.clone() };
        let mut cx = Context::new(call, &mut self.host);
        self.plugin.scan_file(&mut cx, file)
    }
}

impl<P: Listener> Harness<P> {
    /// Delivers a stored message. The call is the harness's, with the sender as its actor and no session, as the
    /// host makes it.
    pub fn after_publish(&mut self, msg: &Published) -> Result<(), String> {
        let call = CallInfo { actor: msg.sender.clone(), session: String::new(), ..self.call.clone() };
        let mut cx = Context::new(call, &mut self.host);
        self.plugin.after_publish(&mut cx, msg)
    }

    /// Delivers an account change, with its actor as the call's and no session.
    pub fn on_account(&mut self, event: &AccountEvent) -> Result<(), String> {
        let call = CallInfo { actor: event.actor.clone(), session: String::new(), ..self.call.clone() };
        let mut cx = Context::new(call, &mut self.host);
        self.plugin.on_account(&mut cx, event)
    }
}

impl<P: Gate> Harness<P> {
    /// The gate's answer to a login, with the login's user and session as the call's.
    pub fn on_login(&mut self, login: &Login) -> Result<(), Rejection> {
        let call = CallInfo { actor: login.user.clone(), session: login.session.clone(), ..self.call.clone() };
        let mut cx = Context::new(call, &mut self.host);
        self.plugin.on_login(&mut cx, login)
    }

    /// The gate's verdict on a join, with the joining user and session as the call's.
    pub fn before_subscribe(&mut self, join: &Join) -> JoinVerdict {
        let call = CallInfo { actor: join.user.clone(), session: join.session.clone(), ..self.call.clone() };
        let mut cx = Context::new(call, &mut self.host);
        self.plugin.before_subscribe(&mut cx, join)
    }
}

impl<P: CommandHandler> Harness<P> {
    /// The outcome of a command.
    pub fn command(&mut self, name: &str, args: Value) -> CommandOutcome {
        let mut cx = Context::new(self.call.clone(), &mut self.host);
        self.plugin.on_command(&mut cx, &Command { name: name.to_owned(), args })
    }
}

/// The settings defaults a manifest declares.
fn defaults(manifest: &str) -> Result<Map<String, Value>, String> {
    let m: Value = toml::from_str(manifest).map_err(|e| format!("manifest: {e}"))?;
    let mut out = Map::new();
    if let Some(settings) = m.get("settings").and_then(Value::as_object) {
        for (k, spec) in settings {
            if let Some(d) = spec.get("default") {
                out.insert(k.clone(), d.clone());
            }
        }
    }
    Ok(out)
}

fn fixtures(manifest: &str) -> Result<Vec<Value>, String> {
    let m: Value = toml::from_str(manifest).map_err(|e| format!("manifest: {e}"))?;
    Ok(m.get("fixtures").and_then(Value::as_array).cloned().unwrap_or_default())
}

fn field<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|x| !x.is_null())
}

fn check_verdict(expect: &Value, got: &Verdict) -> bool {
    let want = expect.get("verdict").and_then(Value::as_str).unwrap_or("");
    let same = |k: &str, v: Value| field(expect, k).is_none_or(|e| *e == v);
    match got {
        Verdict::Allow => want == "allow",
        Verdict::Reject { code, reason } => {
            want == "reject"
                && same("code", Value::from(*code))
                && field(expect, "reason").and_then(Value::as_str).is_none_or(|s| reason.contains(s))
        }
        Verdict::Rewrite { content, .. } => want == "rewrite" && same("content", content.clone()),
        Verdict::Hold { flags } => want == "hold" && same("flags", Value::from(flags.clone())),
    }
}

fn check_outcome(expect: &Value, got: &CommandOutcome) -> bool {
    let want = expect.get("verdict").and_then(Value::as_str).unwrap_or("");
    let same = |k: &str, v: Value| field(expect, k).is_none_or(|e| *e == v);
    match got {
        CommandOutcome::Ok(v) => want == "ok" && same("result", v.clone()),
        CommandOutcome::Rejected { code, reason_code, .. } => {
            want == "rejected"
                && same("code", Value::from(*code))
                && same("reason_code", Value::from(reason_code.clone()))
        }
    }
}

/// Runs the `before-publish` golden fixtures of `manifest` on fresh plugins of type `P`, the way the host's load
/// gate does, and returns how many passed, or the first that failed.
pub fn run_publish_fixtures<P: PublishFilter>(manifest: &str) -> Result<usize, String> {
    run_fixtures::<P>(manifest, "before-publish", |h, f| {
        let kind = match f.get("topic_kind").and_then(Value::as_str) {
            Some("p2p") => TopicKind::P2p,
            _ => TopicKind::Group,
        };
        let content = f.get("content").cloned().unwrap_or(Value::String(String::new()));
        let head = f.get("head").and_then(Value::as_object).cloned();
        let msg = Message { topic: "grpFixture".to_owned(), topic_kind: kind, content, head };
        let got = h.publish_message(&msg);
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        if check_verdict(&expect, &got) { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })
}

/// Runs the `on-command` golden fixtures of `manifest` on fresh plugins of type `P`.
pub fn run_command_fixtures<P: CommandHandler>(manifest: &str) -> Result<usize, String> {
    run_fixtures::<P>(manifest, "on-command", |h, f| {
        let name = f.get("command").and_then(Value::as_str).unwrap_or("");
        let got = h.command(name, f.get("args").cloned().unwrap_or(Value::Null));
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        if check_outcome(&expect, &got) { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })
}

/// The letters of a mode as a set, so that `JRP` and `PJR` compare equal (`N` is the empty set).
fn mode_letters(mode: &str) -> Option<std::collections::BTreeSet<char>> {
    let m = mode.trim();
    if m.eq_ignore_ascii_case("n") {
        return Some(std::collections::BTreeSet::new());
    }
    let letters: std::collections::BTreeSet<char> = m.chars().map(|c| c.to_ascii_uppercase()).collect();
    (!m.is_empty() && letters.iter().all(|c| "JRWPASDO".contains(*c))).then_some(letters)
}

fn check_rejection(expect: &Value, code: u16, reason: &str) -> bool {
    field(expect, "code").is_none_or(|e| e.as_u64() == Some(u64::from(code)))
        && field(expect, "reason").and_then(Value::as_str).is_none_or(|s| reason.contains(s))
}

fn check_join(expect: &Value, got: &JoinVerdict) -> bool {
    let want = expect.get("verdict").and_then(Value::as_str).unwrap_or("");
    match got {
        JoinVerdict::Allow => want == "allow",
        JoinVerdict::Reject(r) => want == "reject" && check_rejection(expect, r.code, &r.reason),
        JoinVerdict::Restrict(mode) => {
            want == "restrict"
                && field(expect, "mode")
                    .and_then(Value::as_str)
                    .is_none_or(|m| mode_letters(m).is_some_and(|m| mode_letters(mode).is_some_and(|got| got == m)))
        }
    }
}

fn check_done(expect: &Value, got: &Result<(), String>) -> bool {
    let want = expect.get("verdict").and_then(Value::as_str).unwrap_or("");
    match got {
        Ok(()) => want == "ok" && field(expect, "result").is_none(),
        Err(reason) => {
            want == "err" && field(expect, "reason").and_then(Value::as_str).is_none_or(|s| reason.contains(s))
        }
    }
}

fn fixture_u32(f: &Value, key: &str, default: u32) -> u32 {
    f.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(default)
}

fn fixture_str(f: &Value, key: &str, default: &str) -> String {
    f.get(key).and_then(Value::as_str).unwrap_or(default).to_owned()
}

/// Runs the `on-login` and `before-subscribe` golden fixtures of `manifest` on fresh plugins of type `P`, with the
/// inputs the host's load gate builds from them, and returns how many passed, or the first that failed.
pub fn run_gate_fixtures<P: Gate>(manifest: &str) -> Result<usize, String> {
    let logins = run_fixtures::<P>(manifest, "on-login", |h, f| {
        let mut login = Login::new(&h.call.actor, &fixture_str(f, "remote_addr", ""));
        login.scheme = fixture_str(f, "scheme", "basic");
        login.user_agent = fixture_str(f, "user_agent", "");
        let got = h.on_login(&login);
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        let ok = match &got {
            Ok(()) => expect.get("verdict").and_then(Value::as_str) == Some("allow"),
            Err(r) => {
                expect.get("verdict").and_then(Value::as_str) == Some("reject")
                    && check_rejection(&expect, r.code, &r.reason)
            }
        };
        if ok { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })?;
    let joins = run_fixtures::<P>(manifest, "before-subscribe", |h, f| {
        let p2p = f.get("topic_kind").and_then(Value::as_str) == Some("p2p");
        let (topic, given) = if p2p { ("p2pFixture", "JRWPA") } else { ("grpFixture", "JRWPS") };
        let mut join = Join::new(topic, &fixture_str(f, "given", given));
        join.user = h.call.actor.clone();
        join.want = fixture_str(f, "want", "");
        let got = h.before_subscribe(&join);
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        if check_join(&expect, &got) { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })?;
    Ok(logins + joins)
}

/// Runs the `after-publish` and `on-account` golden fixtures of `manifest` on fresh plugins of type `P`.
pub fn run_listener_fixtures<P: Listener>(manifest: &str) -> Result<usize, String> {
    let published = run_fixtures::<P>(manifest, "after-publish", |h, f| {
        let mut msg = Published::new(f.get("content").cloned().unwrap_or(Value::String(String::new())));
        msg.topic = "grpFixture".to_owned();
        if f.get("topic_kind").and_then(Value::as_str) == Some("p2p") {
            (msg.topic, msg.topic_kind) = ("p2pFixture".to_owned(), TopicKind::P2p);
        }
        msg.sender = h.call.actor.clone();
        msg.head = f.get("head").and_then(Value::as_object).cloned();
        msg.attempt = fixture_u32(f, "attempt", 1);
        let got = h.after_publish(&msg);
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        if check_done(&expect, &got) { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })?;
    let accounts = run_fixtures::<P>(manifest, "on-account", |h, f| {
        let change = match f.get("change").map(|c| c.as_str().and_then(AccountChange::parse)) {
            None => AccountChange::Created,
            Some(Some(c)) => c,
            Some(None) => return Err(format!("change {} is not an account change", f["change"])),
        };
        let mut event = AccountEvent::new(&h.call.actor, change);
        event.id = "fixture".to_owned();
        event.by_operator = f.get("by_operator").and_then(Value::as_bool).unwrap_or(false);
        event.public = f.get("public").cloned();
        event.tags = f
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        event.attempt = fixture_u32(f, "attempt", 1);
        let got = h.on_account(&event);
        let expect = f.get("expect").cloned().unwrap_or(Value::Null);
        if check_done(&expect, &got) { Ok(()) } else { Err(format!("expected {expect}, got {got:?}")) }
    })?;
    Ok(published + accounts)
}

/// Whether the host runs `hook` of `manifest`: in worlds `gate` and `listener`, only a hook the manifest names in
/// `[hooks.<name>]`; in the others, every hook of the world.
fn runs_hook(manifest: &str, hook: &str) -> Result<bool, String> {
    let m: Value = toml::from_str(manifest).map_err(|e| format!("manifest: {e}"))?;
    let named = matches!(m.get("world").and_then(Value::as_str), Some("gate" | "listener"));
    Ok(!named || m.get("hooks").and_then(|h| h.get(hook)).is_some())
}

/// Runs the fixtures of one hook, each on a fresh plugin with the fixture's settings; the other hook's are left
/// to the other runner. A fixture of a hook the host would never run (a gate's or listener's hook its manifest does
/// not name) fails, as the host's load gate refuses the manifest.
fn run_fixtures<P: Default>(
    manifest: &str,
    hook: &str,
    run: impl Fn(&mut Harness<P>, &Value) -> Result<(), String>,
) -> Result<usize, String> {
    let mut n = 0;
    for f in fixtures(manifest)? {
        if f.get("hook").and_then(Value::as_str).unwrap_or("before-publish") != hook {
            continue;
        }
        let name = f.get("name").and_then(Value::as_str).unwrap_or("?").to_owned();
        if !runs_hook(manifest, hook)? {
            return Err(format!("fixture {name:?}: the manifest does not name [hooks.{hook}], so {hook} never runs"));
        }
        let mut h = Harness::<P>::with_manifest(manifest)?;
        h.settings(f.get("settings").cloned().unwrap_or(Value::Null));
        run(&mut h, &f).map_err(|e| format!("fixture {name:?}: {e}"))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes only an operator's suspension, as a fixture builds it.
    #[derive(Default)]
    struct Suspensions;

    impl Listener for Suspensions {
        fn on_account<H: Host>(&mut self, _cx: &mut Context<'_, H>, e: &AccountEvent) -> Result<(), String> {
            let expected = e.by_operator && e.change == AccountChange::Suspended && e.id == "fixture";
            if expected { Ok(()) } else { Err(format!("{e:?}")) }
        }
    }

    const MANIFEST: &str = "name = \"l\"\nversion = \"1.0.0\"\nworld = \"listener\"\n[hooks.on-account]\n\
                            [[fixtures]]\nname = \"s\"\nhook = \"on-account\"\nchange = \"suspended\"\n\
                            by_operator = true\nexpect = { verdict = \"ok\" }\n";

    #[test]
    fn account_fixtures_take_every_change_and_who_made_it() {
        assert_eq!(run_listener_fixtures::<Suspensions>(MANIFEST), Ok(1));
        let by_user = MANIFEST.replace("by_operator = true\n", "");
        assert!(run_listener_fixtures::<Suspensions>(&by_user).is_err());
        let unknown = MANIFEST.replace("\"suspended\"", "\"renamed\"");
        let e = run_listener_fixtures::<Suspensions>(&unknown).unwrap_err();
        assert!(e.contains("not an account change"), "{e}");
    }

    #[test]
    fn a_fixture_of_a_hook_the_manifest_does_not_name_fails() {
        let unnamed = MANIFEST.replace("[hooks.on-account]\n", "[hooks.after-publish]\n");
        let e = run_listener_fixtures::<Suspensions>(&unnamed).unwrap_err();
        assert!(e.contains("[hooks.on-account]") && e.contains("never runs"), "{e}");
    }
}
