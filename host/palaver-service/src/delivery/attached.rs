//! Who is attached to which topic on this node, told to the shared presence so that every node's push worker
//! knows who saw a message live (a user attached only on another node is not pushed). Only with a shared bus:
//! an embedded node's worker reads its own hub.
//!
//! One task owns the writes: the hub notes each topic whose attached sessions change, and the task writes the
//! topic's current attached users (this node's set, replaced whole) as soon as it wakes, skipping a topic whose
//! users did not change since its last write. Changes that arrive while it writes are picked up on the next
//! round, so the set a worker reads lags a `{sub}` or `{leave}` by one Redis round trip. The heartbeat refreshes
//! the sets' TTL with the topic's online members; a node that dies takes its sets with it when they expire.

use crate::Inner;
use crate::delivery::hub::TopicKey;
use palaver_core::UserId;
use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

/// Writes attachment changes to the shared presence until the service is dropped.
pub(crate) async fn sync(inner: Weak<Inner>) {
    let mut written: HashMap<TopicKey, Vec<UserId>> = HashMap::new();
    loop {
        let Some(signal) = inner.upgrade().map(|i| i.hub.attach_signal()) else { return };
        // The wait holds only the signal, so a dropped service ends the task within a second.
        let _ = tokio::time::timeout(Duration::from_secs(1), signal.notified()).await;
        let Some(inner) = inner.upgrade() else { return };
        let changes = inner.hub.take_attach_changes();
        for (tenant, topic) in changes {
            let users = inner.hub.attached_users(tenant, &topic);
            let key = (tenant, topic);
            if written.get(&key).map_or(users.is_empty(), |w| *w == users) {
                continue;
            }
            let node = &inner.cfg.node_id;
            match inner.ports.presence.set_attached(tenant, &key.1, node, &users).await {
                Ok(()) if users.is_empty() => {
                    written.remove(&key);
                }
                Ok(()) => {
                    written.insert(key, users);
                }
                // Noted as changed again, so the next round (within a second) writes it: a detach that stayed
                // in Redis would silence the user's pushes.
                Err(e) => {
                    tracing::debug!(error = %e, topic = %key.1, "attached users not written; retried");
                    inner.hub.note_attach_change(key);
                }
            }
        }
    }
}
