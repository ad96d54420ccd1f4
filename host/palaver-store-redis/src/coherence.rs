//! The Redis side of the decorators: reading and filling cached copies, and applying what each write changed.
//! One `Coherence` is shared by the decorators of a stack, so a message write can patch the cached topic and
//! subscription it affects (the topic's `seq`, `touched` and `del_id`, a soft-deleter's `del_id`).
//!
//! Every method returns the Redis outcome and leaves the policy to the caller: reads fall back to the inner
//! store, failed invalidations are logged and counted, and nothing here rolls back an inner write.

use crate::client::RedisClient;
use crate::codec::{self, decode_hot_json, decode_sub, decode_topic, encode_hot, encode_sub, encode_topic};
use crate::scripts::Scripts;
use palaver_core::{
    DeleteMessages, Message, MessageQuery, SeqRange, StoreResult, Subscription, TenantId, Topic, UserId,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The most hot copies one history read looks at before giving up and asking the inner store, so that a long
/// run of tombstones cannot make one script block Redis.
const MAX_READ_STEPS: usize = 2000;

/// Shared Redis access for the decorators of one stack.
#[derive(Clone)]
pub(crate) struct Coherence {
    pub(crate) client: RedisClient,
    scripts: Arc<Scripts>,
    /// Per topic, the stored messages whose Redis side waits in the copy writer: how many, and the highest seq
    /// and creation time among them. While a topic has any, this node reads its history from the inner store and
    /// raises the cached topic's `seq` and `touched` to them: a message acknowledged here is then always seen
    /// here, even before its copy and its raise of the cached `seq` land. Entries live only while messages wait,
    /// so the map holds at most the writer's queue and batch.
    waiting: Arc<parking_lot::Mutex<HashMap<(TenantId, String), Waiting>>>,
}

/// Stored messages of one topic whose Redis side has not been written yet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiting {
    count: u32,
    pub(crate) seq: palaver_core::Seq,
    pub(crate) created: i64,
}

/// Turns a half-open range the way the stores read it: `hi <= low` means the single seq `low`.
fn normalize(r: SeqRange) -> SeqRange {
    if r.hi <= r.low { SeqRange { low: r.low, hi: r.low + 1 } } else { r }
}

impl Coherence {
    pub(crate) fn new(client: RedisClient) -> Self {
        Self { client, scripts: Arc::new(Scripts::new()), waiting: Arc::default() }
    }

    /// Notes a stored message whose Redis side is queued in the copy writer.
    pub(crate) fn copy_queued(&self, tenant: TenantId, msg: &Message) {
        let mut waiting = self.waiting.lock();
        let w = waiting.entry((tenant, msg.topic.clone())).or_insert(Waiting {
            count: 0,
            seq: msg.seq,
            created: msg.created,
        });
        w.count += 1;
        w.seq = w.seq.max(msg.seq);
        w.created = w.created.max(msg.created);
    }

    /// Notes that the writer is done with these messages' Redis side, applied or failed.
    pub(crate) fn copies_done<'m>(&self, done: impl IntoIterator<Item = (TenantId, &'m str)>) {
        let mut waiting = self.waiting.lock();
        for (tenant, topic) in done {
            let key = (tenant, topic.to_owned());
            if let Some(w) = waiting.get_mut(&key) {
                w.count = w.count.saturating_sub(1);
                if w.count == 0 {
                    waiting.remove(&key);
                }
            }
        }
    }

    /// The stored messages of the topic that still wait for their Redis side on this node, if any.
    pub(crate) fn copies_waiting(&self, tenant: TenantId, topic: &str) -> Option<Waiting> {
        let waiting = self.waiting.lock();
        if waiting.is_empty() {
            return None;
        }
        waiting.get(&(tenant, topic.to_owned())).copied()
    }

    fn cfg(&self) -> &crate::RedisConfig {
        self.client.config()
    }

    fn copy_head(&self, tenant: TenantId, topic: &str) -> String {
        format!("{}{topic}:hot_msg:", self.client.keys().topic_base(tenant))
    }

    /// Applies a stored message: raises the cached topic's `seq` and `touched`, and when `hot` writes the hot
    /// copy (unless it is too large), raising `last_seq` and evicting past the tenant's cap.
    pub(crate) async fn on_append(&self, tenant: TenantId, msg: &Message, hot: bool) -> StoreResult<()> {
        self.on_appends([(tenant, msg, hot)]).await
    }

    /// [`Coherence::on_append`] for many stored messages in one pipeline: one round trip however many. Every
    /// command is the append script, so a `NOSCRIPT` means none ran and the client's one retry repeats nothing.
    pub(crate) async fn on_appends<'m>(
        &self,
        stored: impl IntoIterator<Item = (TenantId, &'m Message, bool)>,
    ) -> StoreResult<()> {
        let keys = self.client.keys();
        let mut pipe = redis::pipe();
        for (tenant, msg, hot) in stored {
            let copy = if hot { encode_hot(msg) } else { String::new() };
            let hot = hot && copy.len() <= self.cfg().hot_message_max_bytes;
            pipe.cmd("EVALSHA")
                .arg(self.scripts.append.get_hash())
                .arg(6)
                .arg(keys.cache_topic(tenant, &msg.topic))
                .arg(keys.topic_last_seq(tenant, &msg.topic))
                .arg(keys.topic_hot_msg_seqs(tenant, &msg.topic))
                .arg(keys.topic_hot_msg(tenant, &msg.topic, msg.seq))
                .arg(keys.topic_hot_msg_dels(tenant, &msg.topic))
                .arg(keys.hot_msg_index(tenant))
                .arg(msg.seq)
                .arg(msg.created)
                .arg(self.cfg().cache_ttl_seconds)
                .arg(if hot { "1" } else { "0" })
                .arg(copy)
                .arg(self.cfg().hot_message_ttl_seconds)
                .arg(self.cfg().hot_max_messages_per_tenant)
                .arg(format!("{}|{}", msg.seq, msg.topic))
                .arg(keys.topic_base(tenant))
                .ignore();
        }
        self.client.script_pipeline::<()>(&[&self.scripts.append], &pipe).await
    }

    /// Answers a history window from hot copies, or `None` when they cannot answer it whole: no `last_seq`, a
    /// missing or expired copy, a soft deletion of the reader's that may reach into the window, or a message
    /// held for moderation that the reader did not send.
    pub(crate) async fn read_hot(
        &self,
        tenant: TenantId,
        topic: &str,
        reader: UserId,
        query: &MessageQuery,
    ) -> StoreResult<Option<Vec<Message>>> {
        let keys = self.client.keys();
        let low = query.since.unwrap_or(1).max(1);
        let before = query.before.unwrap_or(0).max(0);
        if query.before.is_some_and(|b| b <= low) {
            return Ok(Some(Vec::new()));
        }
        if query.limit > MAX_READ_STEPS {
            return Ok(None);
        }
        let mut call = self.scripts.read.key(keys.topic_last_seq(tenant, topic));
        call.key(keys.topic_hot_msg_dels(tenant, topic))
            .arg(self.copy_head(tenant, topic))
            .arg(low)
            .arg(before)
            .arg(query.limit)
            .arg(reader.0)
            .arg(MAX_READ_STEPS);
        let reply: Vec<String> = self.client.script(&call).await?;
        let mut reply = reply.into_iter();
        if reply.next().as_deref() != Some("1") {
            return Ok(None);
        }
        reply.map(|json| decode_hot_json(&json)).collect::<StoreResult<Vec<_>>>().map(Some)
    }

    /// Applies a deletion: raises the cached topic's `del_id`, drops a soft-deleter's cached subscription,
    /// tombstones hard-deleted hot copies, and records the deletion's reach for later reads and appends.
    pub(crate) async fn on_delete(
        &self,
        tenant: TenantId,
        topic: &str,
        request: &DeleteMessages,
        del_id: i64,
        hot: bool,
    ) -> StoreResult<()> {
        let keys = self.client.keys();
        let mut call = self.scripts.delete.key(keys.cache_topic(tenant, topic));
        call.key(keys.cache_topic_subs(tenant, topic))
            .key(keys.topic_hot_msg_seqs(tenant, topic))
            .key(keys.topic_hot_msg_dels(tenant, topic))
            .key(keys.topic_last_seq(tenant, topic))
            .arg(if request.hard { "1" } else { "0" })
            .arg(request.for_user.0)
            .arg(del_id)
            .arg(self.cfg().cache_ttl_seconds)
            .arg(self.cfg().hot_message_ttl_seconds)
            .arg(self.copy_head(tenant, topic))
            .arg(if hot { "1" } else { "0" })
            .arg(self.cfg().cache_invalidation_grace_ms);
        for range in request.ranges.iter().copied().map(normalize) {
            call.arg(range.low).arg(range.hi);
        }
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    /// Rewrites the hot copy of a message whose moderation state changed, if one exists.
    pub(crate) async fn on_set_audit(&self, tenant: TenantId, msg: &Message) -> StoreResult<()> {
        let key = self.client.keys().topic_hot_msg(tenant, &msg.topic, msg.seq);
        let _: i64 = self.client.script(self.scripts.set_audit.key(&key).arg(encode_hot(msg))).await?;
        Ok(())
    }

    /// Drops everything cached for a deleted topic: its record, memberships, hot copies and deletion marks.
    pub(crate) async fn on_delete_topic(&self, tenant: TenantId, topic: &str) -> StoreResult<()> {
        let keys = self.client.keys();
        let mut call = self.scripts.drop_topic.key(keys.cache_topic(tenant, topic));
        call.key(keys.cache_topic_subs(tenant, topic))
            .key(keys.topic_hot_msg_seqs(tenant, topic))
            .key(keys.topic_hot_msg_dels(tenant, topic))
            .arg(self.copy_head(tenant, topic))
            .arg(self.cfg().cache_invalidation_grace_ms);
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    /// The cached topic, its rising fields patched in; `None` on a miss.
    pub(crate) async fn get_topic(&self, tenant: TenantId, name: &str) -> StoreResult<Option<Topic>> {
        let key = self.client.keys().cache_topic(tenant, name);
        let fields: HashMap<String, String> = self.client.query(redis::cmd("HGETALL").arg(&key)).await?;
        let Some(json) = fields.get("json") else { return Ok(None) };
        let mut topic = decode_topic(json)?;
        let raised = |f: &str| fields.get(f).and_then(|v| v.parse::<i64>().ok()).unwrap_or(i64::MIN);
        topic.seq = topic.seq.max(raised("seq"));
        topic.touched = topic.touched.max(raised("touched"));
        topic.del_id = topic.del_id.max(raised("del_id"));
        Ok(Some(topic))
    }

    pub(crate) async fn fill_topic(&self, tenant: TenantId, topic: &Topic) -> StoreResult<()> {
        let key = self.client.keys().cache_topic(tenant, &topic.name);
        let mut call = self.scripts.fill_topic.key(&key);
        call.arg(encode_topic(topic)).arg(topic.seq).arg(topic.touched).arg(topic.del_id);
        call.arg(self.cfg().cache_ttl_seconds);
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    pub(crate) async fn invalidate_topic(&self, tenant: TenantId, name: &str) -> StoreResult<()> {
        let key = self.client.keys().cache_topic(tenant, name);
        let _: i64 = self
            .client
            .script(self.scripts.invalidate_topic.key(&key).arg(self.cfg().cache_invalidation_grace_ms))
            .await?;
        Ok(())
    }

    /// The cached subscription; `None` on a miss or while a tombstone stands.
    pub(crate) async fn get_sub(
        &self,
        tenant: TenantId,
        topic: &str,
        user: UserId,
    ) -> StoreResult<Option<Subscription>> {
        let key = self.client.keys().cache_topic_subs(tenant, topic);
        let (own, all): (Option<String>, Option<String>) =
            self.client.query(redis::cmd("HMGET").arg(&key).arg(user.0).arg("*")).await?;
        match own {
            Some(json) if !json.starts_with('!') && all.is_none() => decode_sub(&json).map(Some),
            _ => Ok(None),
        }
    }

    pub(crate) async fn fill_sub(&self, tenant: TenantId, sub: &Subscription) -> StoreResult<()> {
        let key = self.client.keys().cache_topic_subs(tenant, &sub.topic);
        let mut call = self.scripts.fill_sub.key(&key);
        call.arg(sub.user.0).arg(encode_sub(sub)).arg(self.cfg().cache_ttl_seconds);
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    pub(crate) async fn invalidate_sub(&self, tenant: TenantId, topic: &str, user: UserId) -> StoreResult<()> {
        let key = self.client.keys().cache_topic_subs(tenant, topic);
        let mut call = self.scripts.invalidate_sub.key(&key);
        call.arg(user.0).arg(self.cfg().cache_invalidation_grace_ms).arg(self.cfg().cache_ttl_seconds);
        let _: i64 = self.client.script(&call).await?;
        Ok(())
    }

    /// The cached user; `None` on a miss or while a tombstone stands.
    pub(crate) async fn get_user(&self, tenant: TenantId, id: UserId) -> StoreResult<Option<palaver_core::User>> {
        let key = self.client.keys().cache_user(tenant, id);
        let raw: Option<String> = self.client.query(redis::cmd("GET").arg(&key)).await?;
        match raw {
            Some(json) if !json.starts_with('!') => codec::decode_user(&json).map(Some),
            _ => Ok(None),
        }
    }

    /// Fills with `NX`, so a tombstone left by a concurrent write wins over this possibly older read.
    pub(crate) async fn fill_user(&self, tenant: TenantId, user: &palaver_core::User) -> StoreResult<()> {
        let key = self.client.keys().cache_user(tenant, user.id);
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key).arg(codec::encode_user(user)).arg("EX").arg(self.cfg().cache_ttl_seconds).arg("NX");
        let _: Option<String> = self.client.query(&cmd).await?;
        Ok(())
    }

    pub(crate) async fn invalidate_user(&self, tenant: TenantId, id: UserId) -> StoreResult<()> {
        let key = self.client.keys().cache_user(tenant, id);
        let _: () = self
            .client
            .query(redis::cmd("SET").arg(&key).arg("!").arg("PX").arg(self.cfg().cache_invalidation_grace_ms))
            .await?;
        Ok(())
    }
}
