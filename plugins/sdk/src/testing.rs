//! The native test harness: run a plugin's hooks in plain `cargo test`, without wasm, against an in-memory host
//! whose settings come from the plugin's own manifest (defaults merged with the test's values), and run the golden
//! fixtures the manifest ships, so the component's load gate holds no surprises.

use crate::host::{Context, Host};
use crate::types::{CallInfo, Command, CommandOutcome, HostError, Level, Member, Message, Notification, Topic, User};
use crate::{
    CommandHandler, File, FileScanner, PublishFilter, Push, PushDecision, PushFilter, ScanVerdict, TopicKind, Verdict,
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

/// Runs the fixtures of one hook, each on a fresh plugin with the fixture's settings; the other hook's are left
/// to the other runner.
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
        let mut h = Harness::<P>::with_manifest(manifest)?;
        h.settings(f.get("settings").cloned().unwrap_or(Value::Null));
        run(&mut h, &f).map_err(|e| format!("fixture {name:?}: {e}"))?;
        n += 1;
    }
    Ok(n)
}
