//! Cross-node presence: the user hash `presence:user:{uid}` (`online`, `node_id`, `session_count`,
//! `last_active_at`, `last_seen_at`, `device`, `ua`), the user's sessions `presence:user:{uid}:sessions`, the
//! node's users `presence:node:{node_id}:users`, and the group online-member sets.
//!
//! Sessions are a sorted set scored by the Redis clock at their last heartbeat, not a plain set: a node that
//! dies leaves its sessions behind, and while the user's other sessions keep the key alive only per-member
//! scores let those ghosts age out. Every script reads `TIME` itself, so expiry does not depend on node clocks.

use crate::client::RedisClient;
use async_trait::async_trait;
use palaver_core::ports::{PresenceStore, SessionBeat};
use palaver_core::{Presence, PresenceMeta, StoreResult, TenantId, UnixMillis, UserId};
use redis::Script;
use std::sync::Arc;
use tracing::Instrument;

/// The Redis clock in milliseconds, shared by the scripts below.
const CLOCK: &str =
    "local t = redis.call('TIME') local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";

/// KEYS: user hash, sessions, node users. ARGV: member, uid, node id, now, ttl, device, ua. Answers the live
/// session count and how many sessions it aged out (their TTL passed without a heartbeat: a crashed node's).
const MARK_ONLINE: &str = r"
local ttl = tonumber(ARGV[5])
local expired = redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', clock - ttl * 1000)
redis.call('ZADD', KEYS[2], clock, ARGV[1])
local count = redis.call('ZCARD', KEYS[2])
local last = tonumber(redis.call('HGET', KEYS[1], 'last_active_at') or '0')
redis.call('HSET', KEYS[1], 'online', 1, 'node_id', ARGV[3], 'session_count', count,
  'last_active_at', math.max(last, tonumber(ARGV[4])))
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'device', ARGV[6]) else redis.call('HDEL', KEYS[1], 'device') end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'ua', ARGV[7]) else redis.call('HDEL', KEYS[1], 'ua') end
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
redis.call('SADD', KEYS[3], ARGV[2])
return {count, expired}
";

/// KEYS: user hash, sessions. ARGV: member, node id, now, ttl. An unknown session is left alone, as the
/// in-memory store does: resurrecting it would undo a `mark_offline` that a late heartbeat raced.
const REFRESH: &str = r"
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
local ttl = tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], 'XX', clock, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', clock - ttl * 1000)
local now = tonumber(ARGV[3])
if now >= tonumber(redis.call('HGET', KEYS[1], 'last_active_at') or '0') then
  redis.call('HSET', KEYS[1], 'last_active_at', now, 'node_id', ARGV[2])
end
redis.call('HSET', KEYS[1], 'online', 1, 'session_count', redis.call('ZCARD', KEYS[2]))
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return 1
";

/// KEYS: user hash, sessions, node users. ARGV: member, uid, node member prefix, now, ttl, last-seen ttl.
/// Answers the live session count and how many sessions it aged out.
const MARK_OFFLINE: &str = r"
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
local expired = redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', clock - tonumber(ARGV[5]) * 1000)
local count = redis.call('ZCARD', KEYS[2])
local here = false
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if string.sub(m, 1, #ARGV[3]) == ARGV[3] then here = true break end
end
if not here then redis.call('SREM', KEYS[3], ARGV[2]) end
if count == 0 then
  if removed == 1 or redis.call('HGET', KEYS[1], 'online') == '1' then
    redis.call('HSET', KEYS[1], 'online', 0, 'session_count', 0, 'last_seen_at', ARGV[4])
    redis.call('EXPIRE', KEYS[1], ARGV[6])
  end
  redis.call('DEL', KEYS[2])
else
  redis.call('HSET', KEYS[1], 'session_count', count)
end
return {count, expired}
";

/// KEYS: user hash, sessions. ARGV: ttl. Answers live sessions, node, last activity, last seen.
const GET: &str = r"
local live = redis.call('ZCOUNT', KEYS[2], '(' .. (clock - tonumber(ARGV[1]) * 1000), '+inf')
local h = redis.call('HMGET', KEYS[1], 'node_id', 'last_active_at', 'last_seen_at')
return {live, h[1], h[2], h[3]}
";

/// Presence of one node's sessions, readable by every node. Cloning is cheap.
#[derive(Clone)]
pub struct RedisPresence {
    pub(crate) client: RedisClient,
    pub(crate) node_id: Arc<str>,
    pub(crate) scripts: Arc<Scripts>,
}

/// The presence scripts, loaded once per adapter; a `Script` holds only its source and SHA.
pub(crate) struct Scripts {
    online: Script,
    pub(crate) refresh: Script,
    offline: Script,
    get: Script,
    pub(crate) leave: Script,
    pub(crate) live_nodes: Script,
    pub(crate) topic_beat: Script,
    pub(crate) attached: Script,
}

impl std::fmt::Debug for RedisPresence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPresence").field("node_id", &self.node_id).finish_non_exhaustive()
    }
}

impl RedisPresence {
    /// Presence for the sessions of node `node_id`. The node is part of each session's member because session
    /// ids are unique per node only, and `refresh`/`mark_offline` are not told which node a session is on.
    pub fn new(client: RedisClient, node_id: impl Into<String>) -> Self {
        let with_clock = |body: &str| Script::new(&format!("{CLOCK}{body}"));
        let scripts = Scripts {
            online: with_clock(MARK_ONLINE),
            refresh: with_clock(REFRESH),
            offline: with_clock(MARK_OFFLINE),
            get: with_clock(GET),
            leave: Script::new(crate::online::LEAVE),
            live_nodes: Script::new(crate::online::LIVE_NODES),
            topic_beat: Script::new(crate::online::TOPIC_BEAT),
            attached: Script::new(crate::online::ATTACHED),
        };
        Self { client, node_id: Arc::from(node_id.into()), scripts: Arc::new(scripts) }
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub(crate) fn member(&self, session: &str) -> String {
        format!("{}|{session}", self.node_id)
    }

    pub(crate) fn ttl(&self) -> u64 {
        self.client.config().presence_ttl_seconds
    }

    /// The users with a session on `node_id`, for diagnosis and node clean-up.
    pub async fn node_users(&self, tenant: TenantId, node_id: &str) -> StoreResult<Vec<UserId>> {
        let key = self.client.keys().presence_node_users(tenant, node_id);
        let members: Vec<u64> = self.client.query(redis::cmd("SMEMBERS").arg(&key)).await?;
        Ok(members.into_iter().map(UserId).collect())
    }

    async fn read(&self, tenant: TenantId, user: UserId) -> StoreResult<Presence> {
        let keys = self.client.keys();
        let (hash, sessions) = (keys.presence_user(tenant, user), keys.presence_user_sessions(tenant, user));
        let (live, node, active, seen): (u32, Option<String>, Option<i64>, Option<i64>) =
            self.client.script(self.scripts.get.key(&hash).key(&sessions).arg(self.ttl())).await?;
        Ok(if live > 0 {
            Presence::Online { sessions: live, node_id: node.unwrap_or_default(), last_active: active.unwrap_or(0) }
        } else {
            Presence::Offline { last_seen: seen }
        })
    }
}

#[async_trait]
impl PresenceStore for RedisPresence {
    async fn mark_online(
        &self,
        tenant: TenantId,
        user: UserId,
        session: &str,
        meta: &PresenceMeta,
    ) -> StoreResult<u32> {
        let span = tracing::debug_span!("redis.mark_online", tenant = tenant.0, user = user.0);
        async {
            let keys = self.client.keys();
            let mut call = self.scripts.online.key(keys.presence_user(tenant, user));
            call.key(keys.presence_user_sessions(tenant, user))
                .key(keys.presence_node_users(tenant, &self.node_id))
                .arg(self.member(session))
                .arg(user.0)
                .arg(&meta.node_id)
                .arg(meta.now)
                .arg(self.ttl())
                .arg(meta.device.as_deref().unwrap_or(""))
                .arg(meta.user_agent.as_deref().unwrap_or(""));
            let (count, expired): (u32, u64) = self.client.script(&call).await?;
            self.client.metrics().presence_expired(expired);
            Ok(count)
        }
        .instrument(span)
        .await
    }

    async fn refresh(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.refresh_presence", tenant = tenant.0, user = user.0);
        async {
            let keys = self.client.keys();
            let mut call = self.scripts.refresh.key(keys.presence_user(tenant, user));
            call.key(keys.presence_user_sessions(tenant, user))
                .arg(self.member(session))
                .arg(&*self.node_id)
                .arg(now)
                .arg(self.ttl());
            let _: i64 = self.client.script(&call).await?;
            Ok(())
        }
        .instrument(span)
        .await
    }

    async fn mark_offline(&self, tenant: TenantId, user: UserId, session: &str, now: UnixMillis) -> StoreResult<u32> {
        let span = tracing::debug_span!("redis.mark_offline", tenant = tenant.0, user = user.0);
        async {
            let keys = self.client.keys();
            let mut call = self.scripts.offline.key(keys.presence_user(tenant, user));
            call.key(keys.presence_user_sessions(tenant, user))
                .key(keys.presence_node_users(tenant, &self.node_id))
                .arg(self.member(session))
                .arg(user.0)
                .arg(format!("{}|", self.node_id))
                .arg(now)
                .arg(self.ttl())
                .arg(self.client.config().presence_last_seen_ttl_seconds);
            let (count, expired): (u32, u64) = self.client.script(&call).await?;
            self.client.metrics().presence_expired(expired);
            Ok(count)
        }
        .instrument(span)
        .await
    }

    async fn get_presence(&self, tenant: TenantId, user: UserId) -> Presence {
        let span = tracing::debug_span!("redis.get_presence", tenant = tenant.0, user = user.0);
        async {
            match self.read(tenant, user).await {
                Ok(presence) => presence,
                Err(e) => {
                    // Redis down: presence degrades to unknown; callers must not claim the user is online or offline.
                    tracing::warn!(error = %e, "presence read failed; answering unknown");
                    self.client.metrics().presence_unknown();
                    Presence::Unknown
                }
            }
        }
        .instrument(span)
        .await
    }

    async fn join_topics(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.join_topics", tenant = tenant.0, user = user.0, topics = topics.len());
        self.join_many(tenant, user, topics).instrument(span).await
    }

    async fn leave_topics(&self, tenant: TenantId, user: UserId, topics: &[String]) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.leave_topics", tenant = tenant.0, user = user.0, topics = topics.len());
        self.leave_many(tenant, user, topics).instrument(span).await
    }

    async fn heartbeat(&self, sessions: &[SessionBeat], topics: &[(TenantId, String)]) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.heartbeat", sessions = sessions.len(), topics = topics.len());
        self.beat(sessions, topics).instrument(span).await
    }

    async fn set_attached(&self, tenant: TenantId, topic: &str, node_id: &str, users: &[UserId]) -> StoreResult<()> {
        let span = tracing::debug_span!("redis.set_attached", tenant = tenant.0, users = users.len());
        self.put_attached(tenant, topic, node_id, users).instrument(span).await
    }

    async fn attached_users(&self, tenant: TenantId, topic: &str) -> StoreResult<Vec<UserId>> {
        let span = tracing::debug_span!("redis.attached_users", tenant = tenant.0);
        self.all_attached(tenant, topic).instrument(span).await
    }
}
