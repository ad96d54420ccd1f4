//! What a wasmtime `Store` carries for one call: the call's scope, the memory limiter, the host-call counter and
//! the buffer of side effects that is applied only if the call succeeds. A warm instance keeps its store and gets
//! a fresh scope and an empty buffer before every call.

use crate::config::KvQuota;
use crate::effects::{EventTarget, PluginEvent, PluginNotification};
use crate::error::{Fault, FaultKind};
use crate::http::{HttpCall, HttpScope};
use crate::kv::{KvOp, KvScope, KvUsage};
use crate::services::HostServices;
use palaver_core::TenantId;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Who a call runs for, and what it may use.
#[derive(Clone)]
pub(crate) struct CallScope {
    pub(crate) tenant: TenantId,
    pub(crate) plugin: Arc<str>,
    pub(crate) version: Arc<str>,
    pub(crate) request_id: String,
    /// The resolved settings of the plugin for the tenant, as a JSON object.
    pub(crate) settings: Arc<str>,
    pub(crate) services: HostServices,
    pub(crate) max_host_calls: u32,
    pub(crate) max_effects: usize,
    pub(crate) max_log_bytes: usize,
    pub(crate) kv_quota: KvQuota,
    /// What the call may reach over HTTP: `None` without the `http` grant, and in golden fixtures.
    pub(crate) http: Option<HttpScope>,
}

/// Side effects of one call, held back until it succeeds.
#[derive(Default)]
pub(crate) struct EffectBuffer {
    pub(crate) kv_ops: Vec<KvOp>,
    /// The call's own writes, so that its reads see them: `None` is a buffered delete.
    pub(crate) kv_view: HashMap<String, Option<Vec<u8>>>,
    /// What the store answered this call per key, so that a call reads each key once (repeatable reads): a
    /// concurrent call's commit between two of its reads is caught once, at its own commit, and the call runs
    /// again, instead of the call seeing two values of one key.
    pub(crate) kv_read: HashMap<String, Option<Vec<u8>>>,
    pub(crate) events: Vec<PluginEvent>,
    pub(crate) notifications: Vec<PluginNotification>,
}

impl EffectBuffer {
    pub(crate) fn is_empty(&self) -> bool {
        self.kv_ops.is_empty() && self.events.is_empty() && self.notifications.is_empty()
    }

    fn len(&self) -> usize {
        self.kv_ops.len() + self.events.len() + self.notifications.len()
    }
}

/// Caps linear memory and notes when the cap was hit, so the fault is reported as `memory`, not a bare trap.
pub(crate) struct MemoryLimiter {
    cap: usize,
    pub(crate) peak: usize,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: u64) -> MemoryLimiter {
        MemoryLimiter { cap: usize::try_from(cap).unwrap_or(usize::MAX), peak: 0, exceeded: false }
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.cap || maximum.is_some_and(|m| desired > m) {
            self.exceeded = true;
            // Trapping at once, instead of failing `memory.grow`, stops a guest that would otherwise spin on
            // allocation failures until its fuel runs out.
            return Err(wasmtime::Error::msg(format!("memory cap of {} bytes exceeded", self.cap)));
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000 && maximum.is_none_or(|m| desired <= m))
    }
}

/// The `T` of every `Store<T>` the runtime creates.
pub(crate) struct StoreData {
    pub(crate) scope: CallScope,
    pub(crate) memory: MemoryLimiter,
    pub(crate) host_calls: u32,
    pub(crate) buffer: EffectBuffer,
    /// A limit the host enforced itself; it names the fault better than the trap wasmtime reports for it.
    pub(crate) hint: Option<FaultKind>,
    /// What the key-value scope holds with this call's buffered writes applied, once the call wrote.
    pub(crate) kv_usage: Option<KvUsage>,
    /// The last line the call logged at error level. A trap shows the host no more than a backtrace, so a fault
    /// quotes this line: the SDK's panic hook logs the panic's message there just before the trap.
    pub(crate) last_error_line: Option<String>,
    /// The call's outbound requests so far.
    pub(crate) http: HttpCall,
    /// When the host must stop waiting on I/O of its own (outbound HTTP) for the call: a little before its
    /// deadline, so that the plugin can still answer. Epoch interruption does not fire while the host awaits.
    pub(crate) wait_until: Option<Instant>,
}

impl StoreData {
    pub(crate) fn new(scope: CallScope, memory_cap: u64) -> StoreData {
        StoreData {
            scope,
            memory: MemoryLimiter::new(memory_cap),
            host_calls: 0,
            buffer: EffectBuffer::default(),
            hint: None,
            kv_usage: None,
            last_error_line: None,
            http: HttpCall::default(),
            wait_until: None,
        }
    }

    /// Prepares a warm store for its next call.
    pub(crate) fn reset(&mut self, scope: CallScope) {
        self.scope = scope;
        self.host_calls = 0;
        self.buffer = EffectBuffer::default();
        self.hint = None;
        self.kv_usage = None;
        self.last_error_line = None;
        self.http = HttpCall::default();
        self.wait_until = None;
    }

    /// The fault a limit enforced by the host stopped the call with, if any.
    pub(crate) fn fault_hint(&self) -> Option<FaultKind> {
        if self.memory.exceeded { Some(FaultKind::Memory) } else { self.hint }
    }

    /// The fault a wasmtime error stopped the call with, classified by the host's hint and quoting the last
    /// error line the call logged (a panic's message).
    pub(crate) fn fault(&self, err: &wasmtime::Error) -> Fault {
        Fault::from_wasmtime(err, self.fault_hint(), self.last_error_line.as_deref())
    }

    pub(crate) fn kv_scope(&self) -> KvScope<'_> {
        KvScope { tenant: self.scope.tenant, plugin: &self.scope.plugin }
    }

    /// Counts a host call; past the cap the call traps, since a guest that loops on the host must not keep a
    /// worker thread busy until its deadline.
    pub(crate) fn count_host_call(&mut self) -> wasmtime::Result<()> {
        self.host_calls += 1;
        if self.host_calls > self.scope.max_host_calls {
            self.hint = Some(FaultKind::HostCalls);
            return Err(wasmtime::Error::msg(format!("host-call cap of {} exceeded", self.scope.max_host_calls)));
        }
        Ok(())
    }

    /// Whether one more buffered effect fits.
    pub(crate) fn effect_room(&self) -> bool {
        self.buffer.len() < self.scope.max_effects
    }

    /// Buffers a key-value write and records it in the call's view.
    pub(crate) fn buffer_kv(&mut self, op: KvOp) {
        let (key, value) = match &op {
            KvOp::Set { key, value, .. } => (key.clone(), Some(value.clone())),
            KvOp::Delete { key } => (key.clone(), None),
            KvOp::CompareAndSet { key, value, .. } => (key.clone(), value.clone()),
        };
        self.buffer.kv_view.insert(key, value);
        self.buffer.kv_ops.push(op);
    }

    pub(crate) fn buffer_event(&mut self, target: EventTarget, name: String, payload: Value) {
        let plugin = self.scope.plugin.to_string();
        self.buffer.events.push(PluginEvent { plugin, target, name, payload });
    }

    pub(crate) fn buffer_notification(&mut self, n: PluginNotification) {
        self.buffer.notifications.push(n);
    }

    /// Takes the buffered effects out, leaving the buffer empty.
    pub(crate) fn take_effects(&mut self) -> EffectBuffer {
        std::mem::take(&mut self.buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::ResourceLimiter;

    fn scope() -> CallScope {
        CallScope {
            tenant: TenantId(1),
            plugin: Arc::from("p"),
            version: Arc::from("1.0.0"),
            request_id: "r".to_owned(),
            settings: Arc::from("{}"),
            services: HostServices::in_memory(),
            max_host_calls: 2,
            max_effects: 1,
            max_log_bytes: 16,
            kv_quota: KvQuota::default(),
            http: None,
        }
    }

    #[test]
    fn the_host_call_cap_traps_and_names_the_fault() {
        let mut d = StoreData::new(scope(), 1 << 20);
        assert!(d.count_host_call().is_ok());
        assert!(d.count_host_call().is_ok());
        assert!(d.count_host_call().is_err());
        assert_eq!(d.fault_hint(), Some(FaultKind::HostCalls));
        d.reset(scope());
        assert_eq!(d.fault_hint(), None);
        assert!(d.count_host_call().is_ok());
    }

    #[test]
    fn the_memory_cap_traps_and_names_the_fault() {
        let mut m = MemoryLimiter::new(1 << 20);
        assert!(m.memory_growing(0, 1 << 16, None).unwrap());
        assert!(m.memory_growing(1 << 16, (1 << 20) + 1, None).is_err());
        assert!(m.exceeded);
        assert_eq!(m.peak, 1 << 16);
    }

    #[test]
    fn buffered_writes_are_visible_to_the_call_and_counted() {
        let mut d = StoreData::new(scope(), 1 << 20);
        assert!(d.effect_room());
        d.buffer_kv(KvOp::Set { key: "k".to_owned(), value: b"v".to_vec(), ttl_ms: None });
        assert_eq!(d.buffer.kv_view.get("k"), Some(&Some(b"v".to_vec())));
        assert!(!d.effect_room());
        let taken = d.take_effects();
        assert_eq!(taken.kv_ops.len(), 1);
        assert!(d.buffer.is_empty());
    }
}
