//! Editing and recalling one's own messages, Tinode's way. An edit is a new message whose `head.replace` is
//! `":<seq>"` of the original (the SDK shows the newest version in the original's place, marked edited): only
//! the original's sender may send it, within `messages.edit_window_ms` of the original, and never for a deleted
//! message or another replacement. A recall is a sender's `{del hard:true}` of their own messages within
//! `messages.recall_window_ms`: it deletes them for everyone (as a deleter's hard delete does) and records who
//! recalled them; an admin (D) deletes for everyone at any time, as before.

use crate::error::{ServiceError, ServiceResult};
use crate::{Inner, now_millis};
use palaver_core::{Message, MessageQuery, Seq, SeqRange, TenantId, UserId};
use serde_json::{Map, Value};
use std::time::Duration;

/// The edit and recall settings (`[messages]`).
#[derive(Debug, Clone, Copy)]
pub struct EditConfig {
    /// How long after sending its sender may edit a message; zero: never.
    pub edit_window: Duration,
    /// How long after sending its sender may recall (delete for everyone) a message; zero: never.
    pub recall_window: Duration,
}

impl Default for EditConfig {
    fn default() -> Self {
        EditConfig { edit_window: Duration::from_secs(15 * 60), recall_window: Duration::from_secs(24 * 3600) }
    }
}

/// The most messages one recall may name: a recall reads each of them first.
const MAX_RECALL: i64 = 100;

/// The seq a `head.replace` names (`":123"`), if the head has one; a malformed one is refused.
fn replaced_seq(head: &Map<String, Value>) -> ServiceResult<Option<Seq>> {
    let Some(value) = head.get("replace") else { return Ok(None) };
    let seq = value.as_str().and_then(|s| s.strip_prefix(':')).and_then(|s| s.parse::<Seq>().ok());
    match seq {
        Some(seq) if seq > 0 => Ok(Some(seq)),
        _ => Err(ServiceError::Malformed("pub.head.replace must be \":<seq>\" of a message".into())),
    }
}

/// The edit and recall use cases of one tenant.
pub(crate) struct Edits<'a> {
    pub(super) svc: &'a Inner,
    pub(super) tenant: TenantId,
}

impl Edits<'_> {
    /// The one message `seq` of `topic` as `reader` sees it, if it exists and is not deleted.
    async fn message(&self, topic: &str, reader: UserId, seq: Seq) -> ServiceResult<Option<Message>> {
        let query = MessageQuery { since: Some(seq), before: Some(seq + 1), limit: 1 };
        let found = self.svc.ports.messages.list_messages(self.tenant, topic, reader, &query).await?;
        Ok(found.into_iter().find(|m| m.seq == seq))
    }

    /// Checks a message `me` is about to publish on `topic` with `head`: if it replaces another (an edit), that
    /// one must be `me`'s own, not deleted, not itself a replacement, and young enough.
    pub(crate) async fn check_edit(
        &self,
        me: UserId,
        topic: &str,
        head: Option<&Map<String, Value>>,
    ) -> ServiceResult<()> {
        let Some(seq) = head.map(replaced_seq).transpose()?.flatten() else { return Ok(()) };
        let window = self.svc.cfg.edits.edit_window;
        if window.is_zero() {
            return Err(ServiceError::Denied("messages cannot be edited here".into()));
        }
        let original = self.message(topic, me, seq).await?.ok_or(ServiceError::NotFound)?;
        if original.from != me {
            return Err(ServiceError::Denied("only its sender may edit a message".into()));
        }
        if original.head.as_ref().is_some_and(|h| h.contains_key("replace")) {
            return Err(ServiceError::Malformed("edit the original message, not one of its replacements".into()));
        }
        if original.created < now_millis() - window.as_millis() as i64 {
            let ms = window.as_millis();
            let span = if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") };
            return Err(ServiceError::Denied(format!("a message can be edited only within {span} of sending")));
        }
        Ok(())
    }

    /// Whether `me`, who may not delete others' messages, may recall every message in `ranges`: all that
    /// exist are `me`'s and young enough, and there are not too many. `Ok(false)` leaves the request a delete
    /// for `me` alone, as Tinode treats a hard delete without D.
    pub(crate) async fn may_recall(&self, me: UserId, topic: &str, ranges: &[SeqRange]) -> ServiceResult<bool> {
        let window = self.svc.cfg.edits.recall_window;
        let total: i64 = ranges.iter().map(|r| r.hi - r.low).sum();
        if window.is_zero() || total > MAX_RECALL {
            return Ok(false);
        }
        let oldest = now_millis() - window.as_millis() as i64;
        for r in ranges {
            let query = MessageQuery { since: Some(r.low), before: Some(r.hi), limit: (r.hi - r.low) as usize };
            let found = self.svc.ports.messages.list_messages(self.tenant, topic, me, &query).await?;
            if found.iter().any(|m| m.from != me || m.created < oldest) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replace_heads_name_one_seq() {
        let head = |v: Value| json!({ "replace": v }).as_object().cloned().unwrap();
        assert_eq!(replaced_seq(&head(json!(":12"))).unwrap(), Some(12));
        assert_eq!(replaced_seq(&Map::new()).unwrap(), None);
        for bad in [json!("12"), json!(":0"), json!(":x"), json!(12), json!(":-3")] {
            assert!(replaced_seq(&head(bad.clone())).is_err(), "{bad}");
        }
    }
}
