//! One-to-one calls, Tinode's way: `{pub head:{webrtc:"started"}}` on a P2P topic starts a call whose record is
//! the calls table (the `CallStore` port); `{note what:"call"}` events are relayed to the other party as
//! `{info topic:"me" src what:"call"}`; each state change is one conditional update and, when it takes, a
//! replacement `{data}` (`head.replace`, `head.webrtc`, `webrtc-duration`) so both histories show the final
//! state. This module holds the `[calls]` settings, the `{hi}` ICE servers (TURN REST credentials) and the
//! node's call counters; `flow` holds the transitions (`Inner`'s call use cases); the `{note}` handler is
//! `handlers/call.rs`.

mod flow;

use palaver_core::ports::CallState;
use palaver_core::{MetricsSource, Seq, SessionId, TenantId};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;

/// `[calls]`: one-to-one call signalling.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CallConfig {
    /// Calls are served; off, `{pub head:{webrtc}}` and `{note what:"call"}` answer 501.
    pub enabled: bool,
    /// A call nobody accepts within this many milliseconds becomes `missed` (sent to clients as `callTimeout`,
    /// in seconds).
    pub ring_timeout_ms: u64,
    /// An accepted call still going after this many milliseconds is ended as `disconnected`: a call whose
    /// parties vanished without a hang-up cannot hold them busy for ever.
    pub max_duration_ms: u64,
    /// STUN/TURN servers for the `{hi}` reply's `iceServers`.
    pub ice_servers: Vec<IceServer>,
    /// How long the TURN REST credentials handed out in `{hi}` stay valid.
    pub turn_credential_ttl_seconds: u64,
    /// How often each node sweeps the live calls whose node died with their timers.
    pub sweep_interval_ms: u64,
}

impl Default for CallConfig {
    fn default() -> Self {
        CallConfig {
            enabled: true,
            ring_timeout_ms: 30_000,
            max_duration_ms: 4 * 3600 * 1000,
            ice_servers: Vec::new(),
            turn_credential_ttl_seconds: 86_400,
            sweep_interval_ms: 10_000,
        }
    }
}

/// One `[[calls.ice_servers]]` entry: fixed credentials, or a coturn `use-auth-secret` shared secret from which
/// each session gets time-limited ones.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct IceServer {
    /// `stun:host:3478`, `turn:host:3478?transport=udp`, `turns:host:5349`…
    pub urls: Vec<String>,
    /// Fixed credentials (ignored when `secret` is set).
    pub username: String,
    pub credential: String,
    /// coturn's `static-auth-secret`: username `<expiry>:<session>`, credential base64(HMAC-SHA1(secret,
    /// username)).
    pub secret: String,
}

impl CallConfig {
    /// The settings' own consistency, checked at start-up.
    pub fn validate(&self) -> Result<(), String> {
        if self.ring_timeout_ms < 1_000 || self.ring_timeout_ms > 300_000 {
            return Err("calls.ring_timeout_ms must be 1000–300000".into());
        }
        if self.max_duration_ms < self.ring_timeout_ms {
            return Err("calls.max_duration_ms must be at least calls.ring_timeout_ms".into());
        }
        if self.sweep_interval_ms < 100 {
            return Err("calls.sweep_interval_ms must be at least 100".into());
        }
        if self.turn_credential_ttl_seconds == 0 {
            return Err("calls.turn_credential_ttl_seconds must be positive".into());
        }
        if let Some(bad) = self.ice_servers.iter().find(|s| s.urls.is_empty()) {
            return Err(format!("calls.ice_servers: an entry has no urls ({bad:?})"));
        }
        Ok(())
    }

    /// The `{hi}` reply's `iceServers` for session `who` at `now_secs`, as WebRTC's `RTCIceServer` list.
    pub fn ice_servers_for(&self, who: &str, now_secs: u64) -> Value {
        let servers: Vec<Value> = self
            .ice_servers
            .iter()
            .map(|s| {
                if !s.secret.is_empty() {
                    let (username, credential) =
                        turn_credentials(&s.secret, who, now_secs + self.turn_credential_ttl_seconds);
                    json!({ "urls": s.urls, "username": username, "credential": credential })
                } else if !s.username.is_empty() {
                    json!({ "urls": s.urls, "username": s.username, "credential": s.credential })
                } else {
                    json!({ "urls": s.urls })
                }
            })
            .collect();
        Value::Array(servers)
    }
}

/// coturn's TURN REST credentials: username `<expiry>:<who>`, credential base64(HMAC-SHA1(secret, username)).
pub fn turn_credentials(secret: &str, who: &str, expiry_secs: u64) -> (String, String) {
    use base64::Engine;
    let username = format!("{expiry_secs}:{who}");
    // SHA-1 is what coturn's scheme prescribes; the secret never leaves the server.
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.as_bytes());
    let credential = base64::engine::general_purpose::STANDARD.encode(ring::hmac::sign(&key, username.as_bytes()));
    (username, credential)
}

impl crate::Service {
    /// Ends the tenant's live calls whose node died with their timers (ringing or accepted too long, or a party
    /// session on a node that is gone); `live_nodes` are the cluster's live node ids, `None` for a node on its
    /// own. Safe on every node at once: each end is a conditional update. Returns how many it ended.
    pub async fn sweep_calls(
        &self,
        tenant: TenantId,
        live_nodes: Option<&[String]>,
    ) -> crate::error::ServiceResult<usize> {
        self.inner.sweep_calls(tenant, live_nodes).await
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabel {
    event: String,
}

/// The events a refused transition is counted under.
const REFUSED_EVENTS: [&str; 6] = ["accept", "hang-up", "timeout", "disconnect", "max-duration", "node-lost"];

/// A call as a session's bookkeeping names it: tenant, stored topic, seq of its message.
type CallKey = (TenantId, String, Seq);

/// A node's call bookkeeping: the calls each local session is a party of (so a dropped connection ends
/// them), and the counters.
pub(crate) struct Calls {
    parties: parking_lot::Mutex<HashMap<SessionId, Vec<CallKey>>>,
    transitions: Family<StateLabel, Counter>,
    refused: Family<EventLabel, Counter>,
}

impl Calls {
    pub(crate) fn new() -> Calls {
        let calls = Calls { parties: Default::default(), transitions: Family::default(), refused: Family::default() };
        // Every known label starts at zero, so a dashboard sees the series before the first call.
        for s in CallState::ALL {
            let _ = calls.transitions.get_or_create(&StateLabel { state: s.as_str().into() });
        }
        for e in REFUSED_EVENTS {
            let _ = calls.refused.get_or_create(&EventLabel { event: e.into() });
        }
        calls
    }

    pub(crate) fn moved(&self, state: CallState) {
        self.transitions.get_or_create(&StateLabel { state: state.as_str().into() }).inc();
    }

    /// A conditional update that changed nothing: a late, repeated or out-of-order event.
    pub(crate) fn refused(&self, event: &str) {
        self.refused.get_or_create(&EventLabel { event: event.into() }).inc();
    }

    fn join(&self, sid: SessionId, call: CallKey) {
        self.parties.lock().entry(sid).or_default().push(call);
    }

    fn leave(&self, sid: SessionId, tenant: TenantId, topic: &str, seq: Seq) {
        let mut parties = self.parties.lock();
        if let Some(list) = parties.get_mut(&sid) {
            list.retain(|(t, tp, s)| !(*t == tenant && tp == topic && *s == seq));
            if list.is_empty() {
                parties.remove(&sid);
            }
        }
    }

    /// True if local session `sid` is a party of the call: a live session of this node that joined it.
    fn holds(&self, sid: SessionId, call: &CallKey) -> bool {
        self.parties.lock().get(&sid).is_some_and(|calls| calls.contains(call))
    }

    fn take(&self, sid: SessionId) -> Vec<CallKey> {
        self.parties.lock().remove(&sid).unwrap_or_default()
    }
}

impl MetricsSource for Calls {
    fn register(&self, r: &mut palaver_core::Registry) {
        r.register(
            "palaver_call_transitions",
            "Call state transitions that took, by new state",
            self.transitions.clone(),
        );
        r.register(
            "palaver_call_transition_refused",
            "Call transitions the conditional update refused (late or out-of-order events), by event",
            self.refused.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The credential is what coturn computes for `use-auth-secret` (checked against
    /// `echo -n "$user" | openssl dgst -binary -sha1 -hmac "$secret" | base64`).
    #[test]
    fn turn_rest_credentials_follow_coturn() {
        let (user, cred) = turn_credentials("north", "abc", 1_700_000_000);
        assert_eq!(user, "1700000000:abc");
        assert_eq!(cred, "g5HTmCBrPDhYXFpM/1dHUtfE+c4=");
    }

    #[test]
    fn ice_servers_render_each_kind() {
        let cfg = CallConfig {
            ice_servers: vec![
                IceServer { urls: vec!["stun:s:3478".into()], ..IceServer::default() },
                IceServer {
                    urls: vec!["turn:t:3478".into()],
                    username: "u".into(),
                    credential: "p".into(),
                    ..IceServer::default()
                },
                IceServer { urls: vec!["turn:r:3478".into()], secret: "north".into(), ..IceServer::default() },
            ],
            turn_credential_ttl_seconds: 100,
            ..CallConfig::default()
        };
        let v = cfg.ice_servers_for("abc", 1_699_999_900);
        assert_eq!(v[0], json!({ "urls": ["stun:s:3478"] }));
        assert_eq!(v[1], json!({ "urls": ["turn:t:3478"], "username": "u", "credential": "p" }));
        assert_eq!(v[2]["username"], "1700000000:abc");
        assert_eq!(v[2]["credential"], "g5HTmCBrPDhYXFpM/1dHUtfE+c4=");
        assert!(cfg.validate().is_ok());
        assert!(CallConfig { ring_timeout_ms: 10, ..CallConfig::default() }.validate().is_err());
    }
}
