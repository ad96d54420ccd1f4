//! The host side of every import a plugin may be granted. Each call is counted against the host-call cap, scoped
//! to the call's tenant and plugin, and writes go into the call's buffer rather than the world.

use crate::bindings::palaver::plugin::types::{
    self, HostError, LogLevel, MemberInfo, Notification, TopicInfo, UserInfo,
};
use crate::bindings::palaver::plugin::{clock, directory, events, kv, log, notifications, settings};
use crate::bindings::topic_kind_to_wit;
use crate::effects::{EventTarget, PluginNotification};
use crate::kv::{KvError, KvOp, entry_bytes};
use crate::store::StoreData;
use palaver_core::UserId;
use serde_json::Value;

/// Longest key a plugin may use, in bytes.
const MAX_KEY: usize = 256;
/// Largest value a plugin may store, in bytes.
const MAX_VALUE: usize = 64 << 10;
/// Most members one `list-members` call returns.
const MAX_MEMBERS: u32 = 1000;

type HostResult<T> = wasmtime::Result<Result<T, HostError>>;

fn invalid<T>(m: impl Into<String>) -> HostResult<T> {
    Ok(Err(HostError::Invalid(m.into())))
}

fn user_id(s: &str) -> Result<UserId, HostError> {
    UserId::parse(s).map_err(|_| HostError::Invalid(format!("{s:?} is not a user id")))
}

fn json(s: &str) -> Result<Value, HostError> {
    serde_json::from_str(s).map_err(|e| HostError::Invalid(format!("payload is not JSON: {e}")))
}

fn json_text(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(Value::to_string)
}

fn kv_error(e: KvError) -> HostError {
    match e {
        KvError::Conflict(k) => HostError::Unavailable(format!("conflict on {k}")),
        KvError::Quota(m) => HostError::Limit(m),
        KvError::Unavailable(m) => HostError::Unavailable(m),
    }
}

fn check_key(key: &str) -> Result<(), HostError> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(HostError::Invalid(format!("keys are 1 to {MAX_KEY} bytes")));
    }
    Ok(())
}

impl StoreData {
    /// The value a call sees under `key`: its own buffered write if any, else what the store answered it (once per
    /// key and call).
    async fn kv_current(&mut self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
        if let Some(v) = self.buffer.kv_view.get(key).or_else(|| self.buffer.kv_read.get(key)) {
            return Ok(v.clone());
        }
        let kv = self.scope.services.kv.clone();
        let v = kv.get(self.kv_scope(), key).await.map_err(kv_error)?;
        self.buffer.kv_read.insert(key.to_owned(), v.clone());
        Ok(v)
    }

    /// Books a write that replaces `old` under `key` with `new` (`None`: a delete) against the scope's quota, or
    /// refuses it with the `limit` error. The store's usage is read once, at the call's first write; the call's
    /// own writes are added as they are buffered.
    async fn book_kv(&mut self, key: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> Result<(), HostError> {
        let before = match self.kv_usage {
            Some(u) => u,
            None => {
                let kv = self.scope.services.kv.clone();
                kv.usage(self.kv_scope()).await.map_err(kv_error)?
            }
        };
        let mut after = before;
        if let Some(old) = old {
            after.keys = after.keys.saturating_sub(1);
            after.bytes = after.bytes.saturating_sub(entry_bytes(key, old));
        }
        if let Some(new) = new {
            after.keys = after.keys.saturating_add(1);
            after.bytes = after.bytes.saturating_add(entry_bytes(key, new));
        }
        if let Some(why) = after.exceeds(before, &self.scope.kv_quota) {
            self.kv_usage = Some(before);
            return Err(HostError::Limit(format!("key-value quota exceeded: {why}")));
        }
        self.kv_usage = Some(after);
        Ok(())
    }

    fn room(&self) -> Result<(), HostError> {
        if self.effect_room() {
            Ok(())
        } else {
            Err(HostError::Limit(format!("at most {} side effects per call", self.scope.max_effects)))
        }
    }
}

impl types::Host for StoreData {}

impl kv::Host for StoreData {
    async fn get(&mut self, key: String) -> HostResult<Option<Vec<u8>>> {
        self.count_host_call()?;
        if let Err(e) = check_key(&key) {
            return Ok(Err(e));
        }
        Ok(self.kv_current(&key).await)
    }

    async fn set(&mut self, key: String, value: Vec<u8>, ttl_ms: Option<u64>) -> HostResult<()> {
        self.count_host_call()?;
        if let Err(e) = check_key(&key).and_then(|()| self.room()) {
            return Ok(Err(e));
        }
        if value.len() > MAX_VALUE {
            return invalid(format!("values are at most {MAX_VALUE} bytes"));
        }
        let booked = match self.kv_current(&key).await {
            Ok(old) => self.book_kv(&key, old.as_deref(), Some(&value)).await,
            Err(e) => Err(e),
        };
        if let Err(e) = booked {
            return Ok(Err(e));
        }
        self.buffer_kv(KvOp::Set { key, value, ttl_ms });
        Ok(Ok(()))
    }

    async fn delete(&mut self, key: String) -> HostResult<bool> {
        self.count_host_call()?;
        if let Err(e) = check_key(&key).and_then(|()| self.room()) {
            return Ok(Err(e));
        }
        let old = match self.kv_current(&key).await {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if let Err(e) = self.book_kv(&key, old.as_deref(), None).await {
            return Ok(Err(e));
        }
        self.buffer_kv(KvOp::Delete { key });
        Ok(Ok(old.is_some()))
    }

    async fn compare_and_set(
        &mut self,
        key: String,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        ttl_ms: Option<u64>,
    ) -> HostResult<bool> {
        self.count_host_call()?;
        if let Err(e) = check_key(&key).and_then(|()| self.room()) {
            return Ok(Err(e));
        }
        if value.as_ref().is_some_and(|v| v.len() > MAX_VALUE) {
            return invalid(format!("values are at most {MAX_VALUE} bytes"));
        }
        let current = match self.kv_current(&key).await {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        if current != expected {
            return Ok(Ok(false));
        }
        if let Err(e) = self.book_kv(&key, current.as_deref(), value.as_deref()).await {
            return Ok(Err(e));
        }
        // The condition is buffered with the write, so the commit checks it again against concurrent calls.
        self.buffer_kv(KvOp::CompareAndSet { key, expected, value, ttl_ms });
        Ok(Ok(true))
    }
}

impl directory::Host for StoreData {
    async fn get_user(&mut self, user: String) -> HostResult<Option<UserInfo>> {
        self.count_host_call()?;
        let id = match user_id(&user) {
            Ok(id) => id,
            Err(e) => return Ok(Err(e)),
        };
        let dir = self.scope.services.directory.clone();
        Ok(dir.user(self.scope.tenant, id).await.map_err(|e| HostError::Unavailable(e.to_string())).map(|u| {
            u.map(|u| UserInfo {
                id: u.id.to_string(),
                active: u.active,
                public: json_text(&u.public),
                tags: u.tags,
                created_ms: u64::try_from(u.created_ms).unwrap_or(0),
            })
        }))
    }

    async fn get_topic(&mut self, topic: String) -> HostResult<Option<TopicInfo>> {
        self.count_host_call()?;
        let dir = self.scope.services.directory.clone();
        Ok(dir.topic(self.scope.tenant, &topic).await.map_err(|e| HostError::Unavailable(e.to_string())).map(|t| {
            t.map(|t| TopicInfo {
                name: t.name,
                kind: topic_kind_to_wit(t.kind),
                owner: t.owner.map(|o| o.to_string()),
                public: json_text(&t.public),
                tags: t.tags,
                created_ms: u64::try_from(t.created_ms).unwrap_or(0),
                seq: t.seq,
            })
        }))
    }

    async fn get_member(&mut self, topic: String, user: String) -> HostResult<Option<MemberInfo>> {
        self.count_host_call()?;
        let id = match user_id(&user) {
            Ok(id) => id,
            Err(e) => return Ok(Err(e)),
        };
        let dir = self.scope.services.directory.clone();
        let found = dir.member(self.scope.tenant, &topic, id).await;
        Ok(found.map_err(|e| HostError::Unavailable(e.to_string())).map(|m| m.map(member)))
    }

    async fn list_members(&mut self, topic: String, limit: u32) -> HostResult<Vec<MemberInfo>> {
        self.count_host_call()?;
        let dir = self.scope.services.directory.clone();
        let limit = usize::try_from(limit.min(MAX_MEMBERS)).unwrap_or(0);
        let found = dir.members(self.scope.tenant, &topic, limit).await;
        Ok(found.map_err(|e| HostError::Unavailable(e.to_string())).map(|ms| ms.into_iter().map(member).collect()))
    }
}

fn member(m: crate::directory::MemberInfo) -> MemberInfo {
    MemberInfo {
        topic: m.topic,
        user: m.user.to_string(),
        mode: m.mode,
        joined_ms: u64::try_from(m.joined_ms).unwrap_or(0),
    }
}

impl events::Host for StoreData {
    async fn to_user(&mut self, user: String, name: String, payload: String) -> HostResult<()> {
        self.count_host_call()?;
        let checked = self.room().and_then(|()| Ok((user_id(&user)?, json(&payload)?)));
        match checked {
            Ok((id, payload)) if !name.is_empty() && name.len() <= 128 => {
                self.buffer_event(EventTarget::User(id), name, payload);
                Ok(Ok(()))
            }
            Ok(_) => invalid("event names are 1 to 128 bytes"),
            Err(e) => Ok(Err(e)),
        }
    }

    async fn to_topic(&mut self, topic: String, name: String, payload: String) -> HostResult<()> {
        self.count_host_call()?;
        let checked = self.room().and_then(|()| json(&payload));
        match checked {
            Ok(payload) if !name.is_empty() && name.len() <= 128 && !topic.is_empty() => {
                self.buffer_event(EventTarget::Topic(topic), name, payload);
                Ok(Ok(()))
            }
            Ok(_) => invalid("event names are 1 to 128 bytes and the topic is required"),
            Err(e) => Ok(Err(e)),
        }
    }
}

impl notifications::Host for StoreData {
    async fn send(&mut self, n: Notification) -> HostResult<()> {
        self.count_host_call()?;
        let checked = self.room().and_then(|()| Ok((user_id(&n.user)?, json(&n.payload)?)));
        match checked {
            Ok((user, payload)) => {
                let plugin = self.scope.plugin.to_string();
                self.buffer_notification(PluginNotification { plugin, user, kind: n.kind, title: n.title, payload });
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }
}

impl log::Host for StoreData {
    async fn log(&mut self, level: LogLevel, mut message: String) -> wasmtime::Result<()> {
        message.truncate(message.floor_char_boundary(self.scope.max_log_bytes));
        // Kept before the host-call count, so that a panic's message (the SDK's panic hook logs it at error level
        // just before the trap) reaches the fault even when this call is the one past the cap.
        if matches!(level, LogLevel::Error) {
            self.last_error_line = Some(message.clone());
        }
        self.count_host_call()?;
        let s = &self.scope;
        let (tenant, plugin, version, request) = (s.tenant, &*s.plugin, &*s.version, &s.request_id);
        match level {
            LogLevel::Trace => tracing::trace!(%tenant, plugin, version, request, "{message}"),
            LogLevel::Debug => tracing::debug!(%tenant, plugin, version, request, "{message}"),
            LogLevel::Info => tracing::info!(%tenant, plugin, version, request, "{message}"),
            LogLevel::Warn => tracing::warn!(%tenant, plugin, version, request, "{message}"),
            LogLevel::Error => tracing::error!(%tenant, plugin, version, request, "{message}"),
        }
        Ok(())
    }
}

impl clock::Host for StoreData {
    async fn now_ms(&mut self) -> wasmtime::Result<u64> {
        self.count_host_call()?;
        Ok(self.scope.services.clock.now_ms())
    }
}

impl settings::Host for StoreData {
    async fn get(&mut self) -> wasmtime::Result<String> {
        self.count_host_call()?;
        Ok(self.scope.settings.to_string())
    }
}
