//! The one place Redis keys are spelt. Every key is `{prefix}:{tenant_id}:…` with the documented names (presence,
//! topics, groups, relations), plus keys named here: the cache and failed-login keys, a few of Palaver's own, the
//! realtime bus's channels, the node claims (under the system tenant 0) and the session-control counters.
//!
//! User ids appear as their decimal `u64` (the history tables' `from_user BIGINT`), topics by their stored name
//! (`grp…`, `p2p…`, base64url, so never containing `:`). Client message ids come last in their key, so a `:`
//! inside one cannot make two different (sender, id) pairs collide.

use palaver_core::ports::EventKind;
use palaver_core::{Seq, TenantId, UserId};
use std::sync::Arc;

/// Builds keys for one prefix. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: Arc<str>,
}

impl Keys {
    /// Keys under `prefix` (`im` by default).
    pub fn new(prefix: &str) -> Self {
        Self { prefix: Arc::from(prefix) }
    }

    /// The prefix every key starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `{prefix}:{tenant}`, the head of every key of the tenant.
    pub fn tenant(&self, t: TenantId) -> String {
        format!("{}:{}", self.prefix, t.0)
    }

    /// `{prefix}:{tenant}:topic:`, the head the Lua scripts append a topic name to when they evict hot copies
    /// of topics other than the one they were called for.
    pub fn topic_base(&self, t: TenantId) -> String {
        format!("{}:topic:", self.tenant(t))
    }

    // Presence.

    pub fn presence_user(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:presence:user:{}", self.tenant(t), uid.0)
    }
    pub fn presence_user_sessions(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:presence:user:{}:sessions", self.tenant(t), uid.0)
    }
    pub fn presence_node_users(&self, t: TenantId, node_id: &str) -> String {
        format!("{}:presence:node:{node_id}:users", self.tenant(t))
    }

    // Large groups, seq, hot messages, idempotency, push dedup.

    pub fn topic_online_members(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:online_members", self.topic_base(t))
    }
    pub fn topic_node_online_members(&self, t: TenantId, topic: &str, node_id: &str) -> String {
        format!("{}{topic}:node:{node_id}:online_members", self.topic_base(t))
    }
    /// Palaver's own: the nodes that hold online members of the topic, so readers need no `SCAN`.
    pub fn topic_online_nodes(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:online_nodes", self.topic_base(t))
    }
    /// Palaver's own: the users with a session attached to the topic on one node, for the push workers.
    pub fn topic_node_attached(&self, t: TenantId, topic: &str, node_id: &str) -> String {
        format!("{}{topic}:node:{node_id}:attached", self.topic_base(t))
    }
    /// Palaver's own: the nodes with an attached set of the topic.
    pub fn topic_attached_nodes(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:attached_nodes", self.topic_base(t))
    }
    /// `{prefix}:{tenant}:topic:{topic}:node:`, the head scripts append a node id and `:online_members` (or
    /// `:attached`) to.
    pub fn topic_node_head(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:node:", self.topic_base(t))
    }
    pub fn topic_shard_members(&self, t: TenantId, topic: &str, shard_id: u32) -> String {
        format!("{}{topic}:shard:{shard_id}:members", self.topic_base(t))
    }
    pub fn topic_last_seq(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:last_seq", self.topic_base(t))
    }
    pub fn topic_hot_msg_seqs(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:hot_msg_seqs", self.topic_base(t))
    }
    pub fn topic_hot_msg(&self, t: TenantId, topic: &str, seq: Seq) -> String {
        format!("{}{topic}:hot_msg:{seq}", self.topic_base(t))
    }
    /// Palaver's own: per topic, the highest `hi` of hard deletions (field `all`) and of each user's soft
    /// deletions (field `{uid}`), so a hot read knows when it must not answer.
    pub fn topic_hot_msg_dels(&self, t: TenantId, topic: &str) -> String {
        format!("{}{topic}:hot_msg_dels", self.topic_base(t))
    }
    /// Palaver's own: every hot copy of the tenant by age, to enforce the per-tenant cap.
    pub fn hot_msg_index(&self, t: TenantId) -> String {
        format!("{}:hot_msg_index", self.tenant(t))
    }
    pub fn topic_uniq_msg(&self, t: TenantId, topic: &str, from: UserId, client_msg_id: &str) -> String {
        format!("{}{topic}:uniq:msg:{}:{client_msg_id}", self.topic_base(t), from.0)
    }
    pub fn push_dedup(&self, t: TenantId, topic: &str, seq: Seq, uid: UserId) -> String {
        format!("{}:push:dedup:{topic}:{seq}:{}", self.tenant(t), uid.0)
    }

    // The realtime bus: Pub/Sub channels, which carry the tenant like keys do.

    /// The broadcast channel of one event kind, `{prefix}:{tenant}:rt:{kind}`.
    pub fn rt_channel(&self, t: TenantId, kind: EventKind) -> String {
        format!("{}:rt:{}", self.tenant(t), kind.as_str())
    }
    /// The channel of one node, `{prefix}:{tenant}:rt:node:{node_id}`.
    pub fn rt_node_channel(&self, t: TenantId, node_id: &str) -> String {
        format!("{}{node_id}", self.rt_node_head(t))
    }
    /// `{prefix}:{tenant}:rt:node:`, the head the routing script appends a node id to.
    pub fn rt_node_head(&self, t: TenantId) -> String {
        format!("{}:rt:node:", self.tenant(t))
    }
    /// The `PSUBSCRIBE` patterns of node `node_id`: its own channel and every broadcast channel, of every
    /// tenant. Glob characters in the prefix or the node id are escaped, so they match only themselves.
    pub fn rt_patterns(&self, node_id: &str) -> Vec<String> {
        let prefix = glob_escape(&self.prefix);
        let mut patterns = vec![format!("{prefix}:*:rt:node:{}", glob_escape(node_id))];
        for kind in [
            EventKind::Message,
            EventKind::TopicEvent,
            EventKind::UserEvent,
            EventKind::Presence,
            EventKind::SessionControl,
        ] {
            patterns.push(format!("{prefix}:*:rt:{}", kind.as_str()));
        }
        patterns
    }
    /// The tenant a bus channel of this prefix belongs to, or `None` for a channel that is not one.
    pub fn channel_tenant(&self, channel: &str) -> Option<TenantId> {
        let rest = channel.strip_prefix(&*self.prefix)?.strip_prefix(':')?;
        let (tenant, tail) = rest.split_once(':')?;
        tail.starts_with("rt:").then_some(())?;
        tenant.parse().ok().map(TenantId)
    }

    // Node claims: not tenant data, so under the system tenant 0.

    /// The claim of one node id, a hash of `instance`, `listen` and `started_at`.
    pub fn node_claim(&self, node_id: &str) -> String {
        format!("{}{node_id}", self.node_claim_head())
    }
    /// `{prefix}:0:node:`, the head the node scripts append a node id to.
    pub fn node_claim_head(&self) -> String {
        format!("{}:node:", self.tenant(TenantId(0)))
    }
    /// The ids of every node that claimed one, pruned of expired claims when read.
    pub fn nodes(&self) -> String {
        format!("{}:nodes", self.tenant(TenantId(0)))
    }

    // Session control: one version counter per user and per device.

    pub fn control_user_version(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:session_control:user:{}:version", self.tenant(t), uid.0)
    }
    pub fn control_device_version(&self, t: TenantId, uid: UserId, device_id: &str) -> String {
        format!("{}:session_control:device:{}:{device_id}:version", self.tenant(t), uid.0)
    }

    // Group governance and relations (read models of later work; named here so nobody spells them).

    pub fn group_profile(&self, t: TenantId, group_id: &str) -> String {
        format!("{}:group:{group_id}:profile", self.tenant(t))
    }
    pub fn group_settings(&self, t: TenantId, group_id: &str) -> String {
        format!("{}:group:{group_id}:settings", self.tenant(t))
    }
    pub fn group_members(&self, t: TenantId, group_id: &str) -> String {
        format!("{}:group:{group_id}:members", self.tenant(t))
    }
    pub fn group_admins(&self, t: TenantId, group_id: &str) -> String {
        format!("{}:group:{group_id}:admins", self.tenant(t))
    }
    pub fn group_muted(&self, t: TenantId, group_id: &str) -> String {
        format!("{}:group:{group_id}:muted", self.tenant(t))
    }
    pub fn relation_friends(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:relation:friends:{}", self.tenant(t), uid.0)
    }
    pub fn relation_blocklist(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:relation:blocklist:{}", self.tenant(t), uid.0)
    }

    // Cache-aside copies of what `store.Users.Get / Topics.Get / Subs.Get` read.

    pub fn cache_user(&self, t: TenantId, uid: UserId) -> String {
        format!("{}:cache:user:{}", self.tenant(t), uid.0)
    }
    pub fn cache_topic(&self, t: TenantId, topic: &str) -> String {
        format!("{}:cache:topic:{topic}", self.tenant(t))
    }
    /// One hash per topic, one field per member, so deleting a topic drops every cached membership at once.
    pub fn cache_topic_subs(&self, t: TenantId, topic: &str) -> String {
        format!("{}:cache:topic:{topic}:subs", self.tenant(t))
    }

    /// Failed-login counter of one login or client address, by the SHA-256 of its name.
    pub fn login_fail(&self, t: TenantId, key_hash: &str) -> String {
        format!("{}:security:login_fail:{key_hash}", self.tenant(t))
    }

    /// A one-time code (its hash and the attempts used), by the digest the service builds of its purpose, account
    /// and address.
    pub fn verify_code(&self, t: TenantId, key_hash: &str) -> String {
        format!("{}:verify:code:{key_hash}", self.tenant(t))
    }
    /// The sends to one address in the current hour, by the digest of the purpose and the address.
    pub fn verify_limit(&self, t: TenantId, key_hash: &str) -> String {
        format!("{}:verify:limit:{key_hash}", self.tenant(t))
    }
}

/// Escapes the characters a Redis glob pattern gives a meaning to.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills a documented literal pattern with the test values, the way a reader of the pattern would.
    fn fill(pattern: &str) -> String {
        pattern
            .replace("{tenant_id}", "7")
            .replace("{uid}", "42")
            .replace("{from_uid}", "42")
            .replace("{node_id}", "n1")
            .replace("{topic}", "grpAbC")
            .replace("{seq}", "12345")
            .replace("{client_msg_id}", "m-1")
            .replace("{shard_id}", "3")
            .replace("{group_id}", "grpAbC")
    }

    #[test]
    fn builders_match_the_documented_patterns_literally() {
        let k = Keys::new("im");
        let (t, u, topic) = (TenantId(7), UserId(42), "grpAbC");
        let cases = [
            ("im:{tenant_id}:presence:user:{uid}", k.presence_user(t, u)),
            ("im:{tenant_id}:presence:user:{uid}:sessions", k.presence_user_sessions(t, u)),
            ("im:{tenant_id}:presence:node:{node_id}:users", k.presence_node_users(t, "n1")),
            ("im:{tenant_id}:topic:{topic}:online_members", k.topic_online_members(t, topic)),
            ("im:{tenant_id}:topic:{topic}:node:{node_id}:online_members", k.topic_node_online_members(t, topic, "n1")),
            ("im:{tenant_id}:topic:{topic}:shard:{shard_id}:members", k.topic_shard_members(t, topic, 3)),
            ("im:{tenant_id}:topic:{topic}:last_seq", k.topic_last_seq(t, topic)),
            ("im:{tenant_id}:topic:{topic}:hot_msg_seqs", k.topic_hot_msg_seqs(t, topic)),
            ("im:{tenant_id}:topic:{topic}:hot_msg:{seq}", k.topic_hot_msg(t, topic, 12345)),
            ("im:{tenant_id}:topic:{topic}:uniq:msg:{from_uid}:{client_msg_id}", k.topic_uniq_msg(t, topic, u, "m-1")),
            ("im:{tenant_id}:push:dedup:{topic}:{seq}:{uid}", k.push_dedup(t, topic, 12345, u)),
            ("im:{tenant_id}:group:{group_id}:profile", k.group_profile(t, topic)),
            ("im:{tenant_id}:group:{group_id}:settings", k.group_settings(t, topic)),
            ("im:{tenant_id}:group:{group_id}:members", k.group_members(t, topic)),
            ("im:{tenant_id}:group:{group_id}:admins", k.group_admins(t, topic)),
            ("im:{tenant_id}:group:{group_id}:muted", k.group_muted(t, topic)),
            ("im:{tenant_id}:relation:friends:{uid}", k.relation_friends(t, u)),
            ("im:{tenant_id}:relation:blocklist:{uid}", k.relation_blocklist(t, u)),
            ("im:{tenant_id}:session_control:user:{uid}:version", k.control_user_version(t, u)),
            ("im:{tenant_id}:session_control:device:{uid}:web-1:version", k.control_device_version(t, u, "web-1")),
            ("im:{tenant_id}:rt:message", k.rt_channel(t, EventKind::Message)),
            ("im:{tenant_id}:rt:session_control", k.rt_channel(t, EventKind::SessionControl)),
            ("im:{tenant_id}:rt:node:{node_id}", k.rt_node_channel(t, "n1")),
            ("im:0:node:{node_id}", k.node_claim("n1")),
            ("im:0:nodes", k.nodes()),
        ];
        for (pattern, built) in cases {
            assert_eq!(built, fill(pattern), "pattern {pattern}");
        }
    }

    #[test]
    fn every_key_carries_prefix_and_tenant() {
        let k = Keys::new("px");
        let (a, b) = (TenantId(1), TenantId(2));
        let u = UserId(9);
        let built = [
            (k.cache_user(a, u), k.cache_user(b, u)),
            (k.cache_topic(a, "grpX"), k.cache_topic(b, "grpX")),
            (k.cache_topic_subs(a, "grpX"), k.cache_topic_subs(b, "grpX")),
            (k.topic_online_nodes(a, "grpX"), k.topic_online_nodes(b, "grpX")),
            (k.topic_hot_msg_dels(a, "grpX"), k.topic_hot_msg_dels(b, "grpX")),
            (k.hot_msg_index(a), k.hot_msg_index(b)),
            (k.login_fail(a, "ab"), k.login_fail(b, "ab")),
            (k.verify_code(a, "ab"), k.verify_code(b, "ab")),
            (k.verify_limit(a, "ab"), k.verify_limit(b, "ab")),
            (k.rt_channel(a, EventKind::Presence), k.rt_channel(b, EventKind::Presence)),
            (k.rt_node_channel(a, "n1"), k.rt_node_channel(b, "n1")),
            (k.control_user_version(a, u), k.control_user_version(b, u)),
            (k.control_device_version(a, u, "d"), k.control_device_version(b, u, "d")),
        ];
        for (in_a, in_b) in built {
            assert!(in_a.starts_with("px:1:") && in_b.starts_with("px:2:"), "{in_a} / {in_b}");
            assert_ne!(in_a, in_b);
        }
        assert_eq!(k.topic_hot_msg(a, "grpX", 5), format!("{}grpX:hot_msg:5", k.topic_base(a)));
    }

    #[test]
    fn bus_channels_name_their_tenant_and_patterns_escape_globs() {
        let k = Keys::new("im");
        assert_eq!(k.channel_tenant(&k.rt_node_channel(TenantId(12), "n1")), Some(TenantId(12)));
        assert_eq!(k.channel_tenant(&k.rt_channel(TenantId(3), EventKind::Message)), Some(TenantId(3)));
        assert_eq!(k.channel_tenant("im:x:rt:message"), None);
        assert_eq!(k.channel_tenant("other:3:rt:message"), None);
        assert_eq!(k.channel_tenant("im:3:topic:grpX"), None);
        let patterns = k.rt_patterns("n1");
        assert_eq!(patterns.len(), 6);
        assert_eq!(patterns[0], "im:*:rt:node:n1");
        assert!(patterns.contains(&"im:*:rt:session_control".to_owned()));
        assert_eq!(Keys::new("a*b").rt_patterns("n?")[0], "a\\*b:*:rt:node:n\\?");
    }
}
