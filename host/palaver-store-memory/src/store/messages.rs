//! The message port of the in-memory store: history, idempotent appends and the deletion log.

use super::{DelLogEntry, History, MemoryStore, StoredMessage};
use palaver_core::ports::{MessageStore, OwedFor};
use palaver_core::{
    AppendOutcome, AuditStatus, DeleteMessages, Deletions, Message, MessageQuery, Seq, SeqRange, StoreError,
    StoreResult, TenantId, UserId,
};

impl History {
    /// The ranges hidden from `reader`: those deleted for everyone and those the reader deleted for themself.
    fn ranges_for(&self, reader: UserId) -> impl Iterator<Item = &DelLogEntry> {
        self.dellog.iter().filter(move |e| e.deleted_for.is_none() || e.deleted_for == Some(reader))
    }
}

#[async_trait::async_trait]
impl MessageStore for MemoryStore {
    async fn append(&self, tenant: TenantId, msg: &Message) -> StoreResult<AppendOutcome> {
        self.with_tenant(tenant, |t| {
            // Appending to a topic that does not exist would leave history no topic row accounts for, so it is
            // refused the way a foreign key would refuse it.
            let topic = t.topics.get_mut(&msg.topic).ok_or(StoreError::NotFound)?;
            let history = t.history.entry(msg.topic.clone()).or_default();
            // The idempotency key is checked before the seq so that a retry which was handed a fresh seq still
            // resolves to the copy already stored.
            if let Some(mid) = &msg.client_mid
                && let Some(&seq) = history.by_client_mid.get(&(msg.from, mid.clone()))
            {
                return Ok(AppendOutcome::Duplicate { seq });
            }
            if history.messages.contains_key(&msg.seq) {
                return Err(StoreError::Conflict(format!("seq {} of {} is already stored", msg.seq, msg.topic)));
            }
            if let Some(mid) = &msg.client_mid {
                history.by_client_mid.insert((msg.from, mid.clone()), msg.seq);
            }
            history.messages.insert(msg.seq, StoredMessage { message: msg.clone(), deleted_at: None });
            topic.seq = topic.seq.max(msg.seq);
            topic.touched = topic.touched.max(msg.created);
            Ok(AppendOutcome::Stored)
        })
    }

    async fn find_by_client_mid(
        &self,
        tenant: TenantId,
        topic: &str,
        from: UserId,
        client_mid: &str,
    ) -> StoreResult<Option<Seq>> {
        Ok(self.with_tenant(tenant, |t| {
            t.history.get(topic).and_then(|h| h.by_client_mid.get(&(from, client_mid.to_owned())).copied())
        }))
    }

    async fn max_seq(&self, tenant: TenantId, topic: &str) -> StoreResult<Seq> {
        // Hard-deleted stubs count: their seqs are taken and must never be handed out again.
        Ok(self.with_tenant(tenant, |t| {
            t.history.get(topic).and_then(|h| h.messages.keys().next_back().copied()).unwrap_or(0)
        }))
    }

    async fn list_messages(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Vec<Message>> {
        Ok(self.with_tenant(tenant, |t| {
            let Some(history) = t.history.get(topic) else {
                return Vec::new();
            };
            let hidden: Vec<SeqRange> = history.ranges_for(reader).map(|e| e.range).collect();
            let low = query.since.unwrap_or(Seq::MIN);
            let high = query.before.unwrap_or(Seq::MAX);
            if low >= high {
                return Vec::new();
            }
            history
                .messages
                .range(low..high)
                .rev()
                .filter(|(seq, m)| m.deleted_at.is_none() && !hidden.iter().any(|r| r.contains(**seq)))
                // A message moderation has not passed is held back from everyone but its sender, who must still
                // see what they sent.
                .filter(|(_, m)| m.message.audit == AuditStatus::Pass || m.message.from == reader)
                .take(query.limit)
                .map(|(_, m)| m.message.clone())
                .collect()
        }))
    }

    async fn delete_messages(&self, tenant: TenantId, topic: &str, request: &DeleteMessages) -> StoreResult<i64> {
        self.with_tenant(tenant, |t| {
            let stored = t.topics.get_mut(topic).ok_or(StoreError::NotFound)?;
            stored.del_id += 1;
            let del_id = stored.del_id;
            let history = t.history.entry(topic.to_owned()).or_default();
            let deleted_for = (!request.hard).then_some(request.for_user);
            for range in request.ranges.iter().copied().map(SeqRange::normalized) {
                history.dellog.push(DelLogEntry { del_id, deleted_for, range });
                if request.hard {
                    for (_, m) in history.messages.range_mut(range.low..range.hi) {
                        m.deleted_at = Some(request.when);
                        m.message.content = serde_json::Value::Null;
                        m.message.head = None;
                    }
                }
            }
            if !request.hard
                && let Some(sub) = t.subs.get_mut(&(topic.to_owned(), request.for_user))
            {
                sub.del_id = del_id;
            }
            Ok(del_id)
        })
    }

    async fn set_audit(
        &self,
        tenant: TenantId,
        topic: &str,
        seq: Seq,
        audit: AuditStatus,
        owed: OwedFor<'_>,
    ) -> StoreResult<Message> {
        let message = self.with_tenant(tenant, |t| {
            let stored = t.history.get_mut(topic).and_then(|h| h.messages.get_mut(&seq)).ok_or(StoreError::NotFound)?;
            // A hard-deleted stub has no content left to review, so it counts as no message at all; the SQL
            // adapters skip such rows the same way.
            if stored.deleted_at.is_some() {
                return Err(StoreError::NotFound);
            }
            stored.message.audit = audit;
            Ok(stored.message.clone())
        })?;
        self.owe(tenant, &owed(&message)).await?;
        Ok(message)
    }

    async fn list_deletions(&self, tenant: TenantId, topic: &str, reader: UserId) -> StoreResult<Deletions> {
        Ok(self.with_tenant(tenant, |t| {
            let Some(history) = t.history.get(topic) else {
                return Deletions::default();
            };
            let entries: Vec<&DelLogEntry> = history.ranges_for(reader).collect();
            Deletions {
                clear: entries.iter().map(|e| e.del_id).max().unwrap_or(0),
                ranges: SeqRange::merge(entries.iter().map(|e| e.range).collect()),
            }
        }))
    }
}
