//! What a hook can ask of the host, behind the [`Host`] trait: [`WasmHost`] calls the real imports inside the
//! component, [`crate::testing::TestHost`] answers from memory in native tests. [`Context`] is the handle a hook
//! receives; it is generic over the host, so the component only imports what the plugin's code actually calls.

use crate::bindings::platform::palaver::plugin::http as wit_http;
use crate::bindings::platform::palaver::plugin::{clock, directory, events, kv, log, notifications, settings};
use crate::bindings::wit;
use crate::http::{Http, HttpError, Request, Response};
use crate::types::{CallInfo, HostError, Level, Member, Notification, Topic, User};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The host's services as a hook sees them. Writes are buffered by the host and applied only if the hook
/// returns normally; a panic discards them.
pub trait Host {
    fn kv_get(&mut self, key: &str) -> Result<Option<Vec<u8>>, HostError>;
    fn kv_set(&mut self, key: &str, value: &[u8], ttl_ms: Option<u64>) -> Result<(), HostError>;
    fn kv_delete(&mut self, key: &str) -> Result<bool, HostError>;
    fn kv_compare_and_set(
        &mut self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
        ttl_ms: Option<u64>,
    ) -> Result<bool, HostError>;
    fn user(&mut self, id: &str) -> Result<Option<User>, HostError>;
    fn topic(&mut self, name: &str) -> Result<Option<Topic>, HostError>;
    fn member(&mut self, topic: &str, user: &str) -> Result<Option<Member>, HostError>;
    fn members(&mut self, topic: &str, limit: u32) -> Result<Vec<Member>, HostError>;
    fn emit_to_user(&mut self, user: &str, name: &str, payload: &Value) -> Result<(), HostError>;
    fn emit_to_topic(&mut self, topic: &str, name: &str, payload: &Value) -> Result<(), HostError>;
    fn notify(&mut self, n: &Notification) -> Result<(), HostError>;
    fn log(&mut self, level: Level, message: &str);
    fn now_ms(&mut self) -> u64;
    /// The plugin's settings for the calling tenant, a JSON object as text.
    fn settings(&mut self) -> String;
    /// Sends an outbound HTTP request (grant `http`). A host without it denies every request.
    fn http_send(&mut self, req: &Request) -> Result<Response, HttpError> {
        let _ = req;
        Err(HttpError::Denied("this host makes no HTTP requests".to_owned()))
    }
}

/// The imports of the component. Only call it inside a component: natively the imports do not exist.
#[derive(Debug, Default, Clone, Copy)]
pub struct WasmHost;

fn json(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

fn member(m: wit::MemberInfo) -> Member {
    Member { topic: m.topic, user: m.user, mode: m.mode, joined_ms: m.joined_ms }
}

impl Host for WasmHost {
    fn kv_get(&mut self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
        Ok(kv::get(key)?)
    }

    fn kv_set(&mut self, key: &str, value: &[u8], ttl_ms: Option<u64>) -> Result<(), HostError> {
        Ok(kv::set(key, value, ttl_ms)?)
    }

    fn kv_delete(&mut self, key: &str) -> Result<bool, HostError> {
        Ok(kv::delete(key)?)
    }

    fn kv_compare_and_set(
        &mut self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
        ttl_ms: Option<u64>,
    ) -> Result<bool, HostError> {
        Ok(kv::compare_and_set(key, expected, value, ttl_ms)?)
    }

    fn user(&mut self, id: &str) -> Result<Option<User>, HostError> {
        Ok(directory::get_user(id)?.map(|u| User {
            id: u.id,
            active: u.active,
            public: json(u.public),
            tags: u.tags,
            created_ms: u.created_ms,
        }))
    }

    fn topic(&mut self, name: &str) -> Result<Option<Topic>, HostError> {
        Ok(directory::get_topic(name)?.map(|t| Topic {
            name: t.name,
            kind: t.kind.into(),
            owner: t.owner,
            public: json(t.public),
            tags: t.tags,
            created_ms: t.created_ms,
            seq: t.seq,
        }))
    }

    fn member(&mut self, topic: &str, user: &str) -> Result<Option<Member>, HostError> {
        Ok(directory::get_member(topic, user)?.map(member))
    }

    fn members(&mut self, topic: &str, limit: u32) -> Result<Vec<Member>, HostError> {
        Ok(directory::list_members(topic, limit)?.into_iter().map(member).collect())
    }

    fn emit_to_user(&mut self, user: &str, name: &str, payload: &Value) -> Result<(), HostError> {
        Ok(events::to_user(user, name, &payload.to_string())?)
    }

    fn emit_to_topic(&mut self, topic: &str, name: &str, payload: &Value) -> Result<(), HostError> {
        Ok(events::to_topic(topic, name, &payload.to_string())?)
    }

    fn notify(&mut self, n: &Notification) -> Result<(), HostError> {
        let wire = wit::Notification {
            user: n.user.clone(),
            kind: n.kind.clone(),
            title: n.title.clone(),
            payload: n.payload.to_string(),
        };
        Ok(notifications::send(&wire)?)
    }

    fn log(&mut self, level: Level, message: &str) {
        let level = match level {
            Level::Trace => wit::LogLevel::Trace,
            Level::Debug => wit::LogLevel::Debug,
            Level::Info => wit::LogLevel::Info,
            Level::Warn => wit::LogLevel::Warn,
            Level::Error => wit::LogLevel::Error,
        };
        log::log(level, message);
    }

    fn now_ms(&mut self) -> u64 {
        clock::now_ms()
    }

    fn settings(&mut self) -> String {
        settings::get()
    }

    fn http_send(&mut self, req: &Request) -> Result<Response, HttpError> {
        let wire = wit_http::Request {
            method: req.method.clone(),
            url: req.url.clone(),
            headers: req.headers.clone(),
            body: req.body.clone(),
        };
        match wit_http::send(&wire) {
            Ok(r) => Ok(Response { status: r.status, headers: r.headers, body: r.body }),
            Err(wit_http::HttpError::Denied(m)) => Err(HttpError::Denied(m)),
            Err(wit_http::HttpError::Invalid(m)) => Err(HttpError::Invalid(m)),
            Err(wit_http::HttpError::Limit(m)) => Err(HttpError::Limit(m)),
            Err(wit_http::HttpError::Timeout) => Err(HttpError::Timeout),
            Err(wit_http::HttpError::Failed(m)) => Err(HttpError::Failed(m)),
        }
    }
}

/// The handle a hook receives: who is calling, and the host.
pub struct Context<'h, H: Host> {
    call: CallInfo,
    host: &'h mut H,
}

impl<'h, H: Host> Context<'h, H> {
    /// A context for a call by `call` on `host`.
    pub fn new(call: CallInfo, host: &'h mut H) -> Context<'h, H> {
        Context { call, host }
    }

    /// Who is calling, from where.
    pub fn call(&self) -> &CallInfo {
        &self.call
    }

    /// The host, for what the helpers below do not cover.
    pub fn host(&mut self) -> &mut H {
        self.host
    }

    /// The plugin's key-value store, scoped to the calling tenant.
    pub fn kv(&mut self) -> Kv<'_, H> {
        Kv { host: self.host }
    }

    /// Outbound HTTP to the hosts the manifest's `[http] allow` lists (grant `http`). Not buffered: a request
    /// leaves when it is sent, even if the call fails afterwards.
    pub fn http(&mut self) -> Http<'_, H> {
        Http { host: self.host }
    }

    /// The plugin's settings for the calling tenant, decoded.
    pub fn settings<T: DeserializeOwned>(&mut self) -> Result<T, HostError> {
        serde_json::from_str(&self.host.settings()).map_err(|e| HostError::Decode(e.to_string()))
    }

    /// The settings as the JSON text the host sent: stable per tenant and version, so a good cache key.
    pub fn settings_text(&mut self) -> String {
        self.host.settings()
    }

    /// Logs a line into the host's logs.
    pub fn log(&mut self, level: Level, message: &str) {
        self.host.log(level, message);
    }

    /// The host's clock, in Unix milliseconds.
    pub fn now_ms(&mut self) -> u64 {
        self.host.now_ms()
    }

    /// A user of the calling tenant.
    pub fn user(&mut self, id: &str) -> Result<Option<User>, HostError> {
        self.host.user(id)
    }

    /// A topic of the calling tenant.
    pub fn topic(&mut self, name: &str) -> Result<Option<Topic>, HostError> {
        self.host.topic(name)
    }

    /// A user's membership of a topic.
    pub fn member(&mut self, topic: &str, user: &str) -> Result<Option<Member>, HostError> {
        self.host.member(topic, user)
    }

    /// A topic's members, at most `limit`.
    pub fn members(&mut self, topic: &str, limit: u32) -> Result<Vec<Member>, HostError> {
        self.host.members(topic, limit)
    }

    /// Sends a realtime event to every session of a user, if the call succeeds.
    pub fn emit_to_user(&mut self, user: &str, name: &str, payload: &impl Serialize) -> Result<(), HostError> {
        let v = serde_json::to_value(payload).map_err(|e| HostError::Invalid(e.to_string()))?;
        self.host.emit_to_user(user, name, &v)
    }

    /// Sends a realtime event to a topic's online members, if the call succeeds.
    pub fn emit_to_topic(&mut self, topic: &str, name: &str, payload: &impl Serialize) -> Result<(), HostError> {
        let v = serde_json::to_value(payload).map_err(|e| HostError::Invalid(e.to_string()))?;
        self.host.emit_to_topic(topic, name, &v)
    }

    /// Writes a system notification, if the call succeeds.
    pub fn notify(&mut self, n: &Notification) -> Result<(), HostError> {
        self.host.notify(n)
    }
}

/// The plugin's key-value store.
pub struct Kv<'a, H: Host> {
    host: &'a mut H,
}

impl<H: Host> Kv<'_, H> {
    pub fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
        self.host.kv_get(key)
    }

    pub fn set(&mut self, key: &str, value: &[u8], ttl_ms: Option<u64>) -> Result<(), HostError> {
        self.host.kv_set(key, value, ttl_ms)
    }

    pub fn delete(&mut self, key: &str) -> Result<bool, HostError> {
        self.host.kv_delete(key)
    }

    /// Replaces the value only if it currently is `expected` (`None`: absent); `value: None` deletes.
    pub fn compare_and_set(
        &mut self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
        ttl_ms: Option<u64>,
    ) -> Result<bool, HostError> {
        self.host.kv_compare_and_set(key, expected, value, ttl_ms)
    }

    /// A JSON value, decoded.
    pub fn get_json<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, HostError> {
        match self.get(key)? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b).map(Some).map_err(|e| HostError::Decode(e.to_string())),
        }
    }

    /// Stores a value as JSON.
    pub fn set_json(&mut self, key: &str, value: &impl Serialize, ttl_ms: Option<u64>) -> Result<(), HostError> {
        let bytes = serde_json::to_vec(value).map_err(|e| HostError::Invalid(e.to_string()))?;
        self.set(key, &bytes, ttl_ms)
    }

    /// Adds `delta` to the integer under `key` (absent counts as 0) and returns the new value. Within one call
    /// this is exact; across concurrent calls the host checks again at commit and runs a call that lost the race
    /// again on the new value (up to four runs), so no update is lost.
    pub fn incr(&mut self, key: &str, delta: i64, ttl_ms: Option<u64>) -> Result<i64, HostError> {
        let old = self.get(key)?;
        let n = match &old {
            None => 0,
            Some(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| HostError::Decode(format!("{key} holds no integer")))?,
        };
        let new = n.saturating_add(delta);
        let text = new.to_string();
        if self.compare_and_set(key, old.as_deref(), Some(text.as_bytes()), ttl_ms)? {
            Ok(new)
        } else {
            Err(HostError::Unavailable(format!("{key} changed concurrently")))
        }
    }
}
