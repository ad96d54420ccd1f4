//! Golden fixtures: inputs a plugin ships in its manifest with the verdicts they must give. The load gate runs
//! every fixture on the new version, in isolation (a scratch key-value store, an empty directory, effects
//! recorded and dropped), and refuses the version if any fixture faults or disagrees.

use crate::bindings::{self, EventText, publish_context};
use crate::effects::RecordingEffects;
use crate::error::LoadError;
use crate::hooks::CommandOutcome;
use crate::manifest::Hook;
use crate::runtime::Runtime;
use crate::services::HostServices;
use crate::settings::{resolve, validate_values};
use crate::store::CallScope;
use crate::version::PluginVersion;
use palaver_core::ports::{
    AccountChange, GateVerdict, JoinContext, LoginContext, PluginEvent, PublishContext, PublishVerdict,
};
use palaver_core::{AccessMode, TenantId, TopicKind, UserId};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// One golden input and what it must give.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    pub name: String,
    #[serde(default = "default_hook")]
    pub hook: Hook,
    /// `before-publish`, `after-publish`: the message content (a string or a Drafty object).
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub head: Option<Map<String, Value>>,
    /// `before-publish`, `after-publish`, `before-subscribe`: `group` (default) or `p2p`.
    #[serde(default)]
    pub topic_kind: Option<String>,
    /// `on-login`: the client's address (default empty: unknown), the scheme (default `basic`), the user agent.
    #[serde(default)]
    pub remote_addr: Option<String>,
    #[serde(default)]
    pub scheme: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    /// `before-subscribe`: the mode asked for (default empty) and the mode the host grants (default `JRWPS` for a
    /// group, `JRWPA` for a one-to-one topic).
    #[serde(default)]
    pub want: Option<String>,
    #[serde(default)]
    pub given: Option<String>,
    /// `on-account`: `created` (default), `updated`, `suspended`, `reactivated` or `deleted`; whether an operator
    /// made the change (default false); the public profile; the tags. The event's id is `fixture`.
    #[serde(default)]
    pub change: Option<AccountChange>,
    #[serde(default)]
    pub by_operator: Option<bool>,
    #[serde(default)]
    pub public: Option<Value>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// `after-publish`, `on-account`: the delivery's attempt (default 1).
    #[serde(default)]
    pub attempt: Option<u32>,
    /// The tenant settings the call runs with (defaults fill the rest).
    #[serde(default)]
    pub settings: Option<Value>,
    /// `on-command`: the command name and its arguments.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
    pub expect: Expect,
}

fn default_hook() -> Hook {
    Hook::BeforePublish
}

impl Fixture {
    /// A fixture of `hook` with no input of its own (every input key at its default), expecting `expect`: fill in
    /// the keys a test needs with struct update syntax.
    pub fn new(name: impl Into<String>, hook: Hook, expect: Expect) -> Fixture {
        Fixture {
            name: name.into(),
            hook,
            content: None,
            head: None,
            topic_kind: None,
            remote_addr: None,
            scheme: None,
            user_agent: None,
            want: None,
            given: None,
            change: None,
            by_operator: None,
            public: None,
            tags: None,
            attempt: None,
            settings: None,
            command: None,
            args: None,
            expect,
        }
    }
}

/// The verdict a fixture expects. Fields left out are not compared.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Expect {
    Allow,
    Reject {
        #[serde(default)]
        code: Option<u16>,
        /// A substring of the reason.
        #[serde(default)]
        reason: Option<String>,
    },
    Rewrite {
        #[serde(default)]
        content: Option<Value>,
    },
    Hold {
        #[serde(default)]
        flags: Option<Vec<String>>,
    },
    Ok {
        #[serde(default)]
        result: Option<Value>,
    },
    Rejected {
        #[serde(default)]
        code: Option<u16>,
        #[serde(default)]
        reason_code: Option<String>,
    },
    /// `before-subscribe`: the join goes on with this mode (compared as a set of letters).
    Restrict {
        #[serde(default)]
        mode: Option<String>,
    },
    /// A listener's `err`.
    Err {
        /// A substring of the reason.
        #[serde(default)]
        reason: Option<String>,
    },
}

/// Runs every fixture of `v`; the first failure refuses the version.
pub(crate) fn run_all(rt: &Runtime, v: &PluginVersion) -> Result<(), LoadError> {
    for f in &v.manifest.fixtures {
        run_one(rt, v, f).map_err(|message| LoadError::Fixture { name: f.name.clone(), message })?;
    }
    Ok(())
}

fn run_one(rt: &Runtime, v: &PluginVersion, f: &Fixture) -> Result<(), String> {
    if let Some(s) = &f.settings {
        validate_values(&v.manifest.settings, s)?;
    }
    let settings = Value::Object(resolve(&v.manifest.settings, f.settings.as_ref())).to_string();
    let services = HostServices::in_memory().with_effects(Arc::new(RecordingEffects::new()));
    let scope = CallScope {
        tenant: TenantId::DEFAULT,
        plugin: v.name.clone(),
        version: v.version.clone(),
        request_id: format!("fixture:{}", f.name),
        settings: Arc::from(settings),
        services,
        max_host_calls: v.limits(f.hook).max_host_calls,
        max_effects: rt.config.max_effects,
        max_log_bytes: rt.config.max_log_bytes,
        kv_quota: rt.config.kv_quota,
        // A fixture reaches no network: the `http` import answers `denied`.
        http: None,
    };
    let actor = UserId(0x0123_4567_89ab_cdef);
    let kind = match f.topic_kind.as_deref() {
        None | Some("group") => TopicKind::Group,
        Some("p2p") => TopicKind::P2p,
        Some(other) => return Err(format!("topic_kind {other:?} is neither group nor p2p")),
    };
    let topic =
        if kind == TopicKind::P2p { palaver_core::p2p_name(actor, UserId(42)) } else { "grpFixture".to_owned() };
    let content = || f.content.clone().unwrap_or(Value::String(String::new()));
    match f.hook {
        Hook::BeforePublish => {
            let ctx = PublishContext {
                tenant: TenantId::DEFAULT,
                topic,
                kind,
                from: actor,
                session: "fixture".to_owned(),
                node: rt.config.node.clone(),
            };
            let content = content().to_string();
            let head = bindings::head_text(f.head.as_ref());
            let wit = publish_context(&ctx, scope.request_id.clone());
            let done =
                block_on(v.judge(rt, scope, &wit, &content, head.as_deref())).map_err(|e| format!("faulted: {e}"))?;
            compare_verdict(&f.expect, &done.value)
        }
        Hook::BeforePush | Hook::ScanFile => Err(format!("{} has no golden fixtures", f.hook)),
        Hook::OnLogin => {
            let ctx = LoginContext {
                tenant: TenantId::DEFAULT,
                user: actor,
                session: "fixture".to_owned(),
                node: rt.config.node.clone(),
                scheme: f.scheme.clone().unwrap_or_else(|| "basic".to_owned()),
                remote_addr: f.remote_addr.clone().unwrap_or_default(),
                user_agent: f.user_agent.clone().unwrap_or_default(),
            };
            let wit = bindings::login_info(&ctx, &rt.config.node, scope.request_id.clone());
            let done = block_on(v.login(rt, scope, &wit)).map_err(|e| format!("faulted: {e}"))?;
            compare_gate(&f.expect, &done.value)
        }
        Hook::BeforeSubscribe => {
            let default = if kind == TopicKind::P2p { AccessMode::P2P } else { AccessMode::GROUP_AUTH };
            let given = match f.given.as_deref() {
                None => default,
                Some(g) => AccessMode::parse(g)
                    .ok()
                    .flatten()
                    .filter(|_| !g.trim().starts_with(['+', '-']))
                    .ok_or_else(|| format!("given {g:?} is not an access mode"))?,
            };
            let ctx = JoinContext {
                tenant: TenantId::DEFAULT,
                topic,
                kind,
                user: actor,
                session: "fixture".to_owned(),
                node: rt.config.node.clone(),
                want: f.want.clone().unwrap_or_default(),
                given: given.to_string(),
            };
            let wit = bindings::join_info(&ctx, &ctx.given, &rt.config.node, scope.request_id.clone());
            let done = block_on(v.join(rt, scope, &wit, given)).map_err(|e| format!("faulted: {e}"))?;
            compare_gate(&f.expect, &done.value)
        }
        Hook::AfterPublish | Hook::OnAccount => {
            let event = if f.hook == Hook::AfterPublish {
                PluginEvent::Published {
                    tenant: TenantId::DEFAULT,
                    topic,
                    seq: 1,
                    ts: 0,
                    from: actor,
                    content: content(),
                    head: f.head.clone(),
                }
            } else {
                PluginEvent::Account {
                    tenant: TenantId::DEFAULT,
                    id: "fixture".to_owned(),
                    user: actor,
                    actor: (!f.by_operator.unwrap_or(false)).then_some(actor),
                    change: f.change.unwrap_or(AccountChange::Created),
                    ts: 0,
                    public: f.public.clone(),
                    tags: f.tags.clone().unwrap_or_default(),
                }
            };
            let text = EventText::of(&event);
            let (attempt, node, id) = (f.attempt.unwrap_or(1), &rt.config.node, scope.request_id.clone());
            let done = match (
                bindings::published_message(&event, &text, attempt, node, id.clone()),
                bindings::account_event(&event, &text, attempt, node, id),
            ) {
                (Some(m), _) => block_on(v.after_publish(rt, scope, &m)),
                (None, Some(a)) => block_on(v.on_account(rt, scope, &a)),
                (None, None) => return Err("the event has no input".to_owned()),
            }
            .map_err(|e| format!("faulted: {e}"))?;
            compare_listener(&f.expect, &done.value)
        }
        Hook::OnCommand => {
            let name = f.command.as_deref().ok_or("an on-command fixture needs `command`")?;
            let args = f.args.clone().unwrap_or(Value::Null).to_string();
            let wit = bindings::palaver::plugin::types::CallContext {
                tenant: TenantId::DEFAULT.0,
                actor: actor.to_string(),
                session: "fixture".to_owned(),
                node: rt.config.node.clone(),
                request_id: scope.request_id.clone(),
            };
            let done = block_on(v.handle(rt, scope, &wit, name, &args)).map_err(|e| format!("faulted: {e}"))?;
            compare_outcome(&f.expect, &done.value)
        }
    }
}

fn mismatch(expect: &Expect, got: impl std::fmt::Debug) -> Result<(), String> {
    Err(format!("expected {expect:?}, got {got:?}"))
}

fn compare_verdict(expect: &Expect, got: &PublishVerdict) -> Result<(), String> {
    let ok = match (expect, got) {
        (Expect::Allow, PublishVerdict::Allow) => true,
        (Expect::Reject { code, reason }, PublishVerdict::Reject { code: c, reason: r }) => {
            code.is_none_or(|code| code == *c) && reason.as_ref().is_none_or(|s| r.contains(s.as_str()))
        }
        (Expect::Rewrite { content }, PublishVerdict::Rewrite { content: c, .. }) => {
            content.as_ref().is_none_or(|x| x == c)
        }
        (Expect::Hold { flags }, PublishVerdict::Hold { flags: f }) => flags.as_ref().is_none_or(|x| x == f),
        _ => false,
    };
    if ok { Ok(()) } else { mismatch(expect, got) }
}

fn compare_outcome(expect: &Expect, got: &CommandOutcome) -> Result<(), String> {
    let ok = match (expect, got) {
        (Expect::Ok { result }, CommandOutcome::Ok(v)) => result.as_ref().is_none_or(|r| r == v),
        (Expect::Rejected { code, reason_code }, CommandOutcome::Rejected { code: c, reason_code: r, .. }) => {
            code.is_none_or(|code| code == *c) && reason_code.as_ref().is_none_or(|x| x == r)
        }
        _ => false,
    };
    if ok { Ok(()) } else { mismatch(expect, got) }
}

fn compare_gate(expect: &Expect, got: &GateVerdict) -> Result<(), String> {
    let mode = |m: &str| AccessMode::parse(m).ok().flatten();
    let ok = match (expect, got) {
        (Expect::Allow, GateVerdict::Allow) => true,
        (Expect::Reject { code, reason }, GateVerdict::Reject { code: c, reason: r }) => {
            code.is_none_or(|code| code == *c) && reason.as_ref().is_none_or(|s| r.contains(s.as_str()))
        }
        (Expect::Restrict { mode: want }, GateVerdict::Restrict { mode: m }) => {
            want.as_deref().is_none_or(|w| mode(w).is_some() && mode(w) == mode(m))
        }
        _ => false,
    };
    if ok { Ok(()) } else { mismatch(expect, got) }
}

fn compare_listener(expect: &Expect, got: &Result<(), String>) -> Result<(), String> {
    let ok = match (expect, got) {
        // A listener returns no result: a fixture that expects one cannot pass.
        (Expect::Ok { result }, Ok(())) => result.is_none(),
        (Expect::Err { reason }, Err(r)) => reason.as_ref().is_none_or(|s| r.contains(s.as_str())),
        _ => false,
    };
    if ok { Ok(()) } else { mismatch(expect, got) }
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives a future to completion on the current thread. The load gate uses it to run fixtures from synchronous
/// code: their services are in memory, so the futures are ready at once and nothing waits on an I/O reactor.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixtures_parse_from_toml() {
        let f: Fixture = toml::from_str(
            "name = \"n\"\ncontent = \"hi\"\nsettings = { words = [\"x\"] }\nexpect = { verdict = \"reject\", code = 422 }\n",
        )
        .unwrap();
        assert_eq!(f.hook, Hook::BeforePublish);
        assert_eq!(f.content, Some(json!("hi")));
        assert_eq!(f.expect, Expect::Reject { code: Some(422), reason: None });
    }

    #[test]
    fn verdicts_compare_only_what_is_given() {
        let got = PublishVerdict::Reject { code: 422, reason: "blocked word".to_owned() };
        assert!(compare_verdict(&Expect::Reject { code: None, reason: None }, &got).is_ok());
        assert!(compare_verdict(&Expect::Reject { code: Some(422), reason: Some("word".to_owned()) }, &got).is_ok());
        assert!(compare_verdict(&Expect::Reject { code: Some(403), reason: None }, &got).is_err());
        assert!(compare_verdict(&Expect::Allow, &got).is_err());
        let ok = CommandOutcome::Ok(json!({ "n": 1 }));
        assert!(compare_outcome(&Expect::Ok { result: Some(json!({ "n": 1 })) }, &ok).is_ok());
        assert!(compare_outcome(&Expect::Ok { result: Some(json!({ "n": 2 })) }, &ok).is_err());
    }

    #[test]
    fn gate_and_listener_fixtures_parse_and_compare() {
        let f: Fixture = toml::from_str(
            "name = \"n\"\nhook = \"before-subscribe\"\ngiven = \"JRWPS\"\nexpect = { verdict = \"restrict\", mode = \"JRPS\" }\n",
        )
        .unwrap();
        assert_eq!(f.hook, Hook::BeforeSubscribe);
        let restrict = |m: &str| GateVerdict::Restrict { mode: m.to_owned() };
        assert!(compare_gate(&f.expect, &restrict("JRPS")).is_ok());
        assert!(compare_gate(&f.expect, &restrict("SPRJ")).is_ok(), "letters compare as a set");
        assert!(compare_gate(&f.expect, &restrict("JRWPS")).is_err());
        assert!(compare_gate(&f.expect, &GateVerdict::Allow).is_err());
        let reject = GateVerdict::Reject { code: 403, reason: "not from 10.1.2.3".to_owned() };
        assert!(
            compare_gate(&Expect::Reject { code: Some(403), reason: Some("10.1.2.3".to_owned()) }, &reject).is_ok()
        );
        let f: Fixture = toml::from_str(
            "name = \"n\"\nhook = \"on-account\"\nchange = \"deleted\"\nexpect = { verdict = \"err\" }\n",
        )
        .unwrap();
        assert_eq!(f.change, Some(AccountChange::Deleted));
        for (name, change) in [
            ("created", AccountChange::Created),
            ("updated", AccountChange::Updated),
            ("suspended", AccountChange::Suspended),
            ("reactivated", AccountChange::Reactivated),
            ("deleted", AccountChange::Deleted),
        ] {
            let text = format!(
                "name = \"n\"\nhook = \"on-account\"\nchange = \"{name}\"\nby_operator = true\nexpect = {{ verdict = \"ok\" }}\n"
            );
            let f: Fixture = toml::from_str(&text).unwrap();
            assert_eq!((f.change, f.by_operator), (Some(change), Some(true)), "{name}");
        }
        assert!(
            toml::from_str::<Fixture>("name = \"n\"\nchange = \"renamed\"\nexpect = { verdict = \"ok\" }\n").is_err()
        );
        assert!(compare_listener(&f.expect, &Err("down".to_owned())).is_ok());
        assert!(compare_listener(&f.expect, &Ok(())).is_err());
        assert!(compare_listener(&Expect::Ok { result: None }, &Ok(())).is_ok());
        assert!(compare_listener(&Expect::Ok { result: Some(json!(1)) }, &Ok(())).is_err());
    }

    #[test]
    fn block_on_runs_ready_and_woken_futures() {
        assert_eq!(block_on(async { 7 }), 7);
        let mut polled = false;
        let fut = std::future::poll_fn(|cx| {
            if polled {
                Poll::Ready(1)
            } else {
                polled = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        });
        assert_eq!(block_on(fut), 1);
    }
}
