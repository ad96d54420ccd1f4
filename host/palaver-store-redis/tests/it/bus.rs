//! The Redis bus's routing against a real Redis: two nodes on one prefix, each with a recording sink. Topic
//! envelopes follow the topic's online nodes (or broadcast without them), user envelopes follow presence
//! sessions, and a node never hears itself.
//!
//! "Nothing arrived" is checked with a marker: the publisher keeps order and the subscriber reads one
//! connection, so once a marker published after an envelope has arrived, the envelope never will.

use crate as common;
use palaver_core::ports::{BusSink, BusTarget, Envelope, EventKind, PresenceStore, RealtimeBus};
use palaver_core::{PresenceMeta, TenantId, UserId};
use palaver_store_redis::{BusConfig, RedisBus, RedisClient, RedisPresence};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const T: TenantId = TenantId(1);

/// A sink that keeps what it is given.
#[derive(Default)]
pub(crate) struct Recorder(Mutex<Vec<Envelope>>);

impl BusSink for Recorder {
    fn deliver(&self, envelope: Envelope) {
        self.0.lock().push(envelope);
    }
}

impl Recorder {
    pub(crate) fn ids(&self) -> Vec<String> {
        self.0.lock().iter().map(|e| e.event_id.clone()).collect()
    }
}

/// One node: its bus and what its sink received.
pub(crate) struct Node {
    pub(crate) bus: RedisBus,
    pub(crate) got: Arc<Recorder>,
}

/// Node `id` on `client`, subscribed and connected.
pub(crate) async fn node(client: &RedisClient, id: &str) -> Node {
    let bus = RedisBus::new(client.clone(), id, BusConfig::default());
    let got = Arc::new(Recorder::default());
    bus.subscribe(got.clone());
    until(|| bus.subscriber_connected(), "subscriber connects").await;
    Node { bus, got }
}

/// Polls `cond` every 10 ms for up to 20 s.
pub(crate) async fn until(mut cond: impl FnMut() -> bool, what: &str) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

pub(crate) fn envelope(id: &str, source: &str, target: BusTarget) -> Envelope {
    Envelope {
        event_id: id.to_owned(),
        tenant: T,
        tenant_code: Some("acme".into()),
        kind: EventKind::Message,
        target,
        from: Some(UserId(7)),
        source_node: source.to_owned(),
        skip_session: None,
        dedup_key: None,
        occurred_at: 1_788_861_600_000,
        payload: format!(r#"{{"data":{{"id":"{id}"}}}}"#),
    }
}

/// Publishes a marker from `from` to node `to`'s channel and waits until `to` has it.
pub(crate) async fn marker(from: &Node, to: &Node, id: &str) {
    let target = BusTarget::Session { node_id: to.bus.node_id().to_owned(), session: "marker".into() };
    from.bus.publish(envelope(id, from.bus.node_id(), target)).unwrap();
    until(|| to.got.ids().iter().any(|got| got == id), "the marker arrives").await;
}

fn meta(node: &str) -> PresenceMeta {
    PresenceMeta { node_id: node.into(), device: Some("web".into()), user_agent: None, now: common::now() }
}

#[tokio::test]
async fn topic_envelopes_follow_the_topics_online_nodes() {
    let Some(client) = common::client("bus-topic").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    let (pa, pb) = (RedisPresence::new(client.clone(), "a"), RedisPresence::new(client.clone(), "b"));
    let topic = || BusTarget::Topic("grpT".into());

    pa.join_topics(T, UserId(1), &["grpT".into()]).await.unwrap();
    a.bus.publish(envelope("only-a", "a", topic())).unwrap();
    marker(&a, &b, "m1").await;
    assert_eq!(b.got.ids(), vec!["m1"], "the nodes set holds only a, so b hears nothing");

    pb.join_topics(T, UserId(2), &["grpT".into()]).await.unwrap();
    a.bus.publish(envelope("joined", "a", topic())).unwrap();
    marker(&a, &b, "m2").await;
    assert_eq!(b.got.ids(), vec!["m1", "joined", "m2"], "b joined, so b hears it");
    let got = b.got.0.lock()[1].clone();
    assert_eq!(got, envelope("joined", "a", topic()), "the envelope arrives whole");

    a.bus.publish(envelope("nobody-joined", "a", BusTarget::Topic("grpNone".into()))).unwrap();
    marker(&a, &b, "m3").await;
    assert_eq!(b.got.ids()[3], "nobody-joined", "a topic without a nodes set is broadcast");

    pb.leave_topics(T, UserId(2), &["grpT".into()]).await.unwrap();
    a.bus.publish(envelope("left", "a", topic())).unwrap();
    marker(&a, &b, "m4").await;
    assert_eq!(b.got.ids()[5..], ["m4"], "b left, so b hears nothing again");

    assert!(a.got.ids().is_empty(), "a never hears its own envelopes");
    assert!(client.metrics().snapshot().bus_loopback_dropped >= 1, "the broadcast came back to a and was dropped");
}

#[tokio::test]
async fn user_envelopes_follow_presence_sessions() {
    let Some(client) = common::client("bus-user").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    let (pa, pb) = (RedisPresence::new(client.clone(), "a"), RedisPresence::new(client.clone(), "b"));
    let (on_b, on_a, offline) = (UserId(10), UserId(11), UserId(12));
    pb.mark_online(T, on_b, "s1", &meta("b")).await.unwrap();
    pb.mark_online(T, on_b, "s2", &meta("b")).await.unwrap();
    pa.mark_online(T, on_a, "s1", &meta("a")).await.unwrap();

    let before = client.metrics().snapshot().bus_publish_commands;
    a.bus.publish(envelope("to-b", "a", BusTarget::User(on_b))).unwrap();
    a.bus.publish(envelope("dev-b", "a", BusTarget::Device { user: on_b, device: "web".into() })).unwrap();
    a.bus.publish(envelope("to-a", "a", BusTarget::User(on_a))).unwrap();
    a.bus.publish(envelope("offline", "a", BusTarget::User(offline))).unwrap();
    marker(&a, &b, "m").await;
    assert_eq!(b.got.ids(), vec!["to-b", "dev-b", "m"]);
    let spent = client.metrics().snapshot().bus_publish_commands - before;
    assert_eq!(spent, 3, "one PUBLISH per envelope for b (two sessions, one node) and the marker, none else");

    pb.mark_offline(T, on_b, "s1", common::now()).await.unwrap();
    pb.mark_offline(T, on_b, "s2", common::now()).await.unwrap();
    a.bus.publish(envelope("gone", "a", BusTarget::User(on_b))).unwrap();
    marker(&a, &b, "m2").await;
    assert_eq!(b.got.ids()[3..], ["m2"], "the user went offline");
    assert!(a.got.ids().is_empty());
}

#[tokio::test]
async fn user_lists_broadcast_and_sessions_go_to_their_node() {
    let Some(client) = common::client("bus-users").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    // A short list is routed by presence: user 2 is online on b, user 1 nowhere.
    let pb = RedisPresence::new(client.clone(), "b");
    pb.mark_online(T, UserId(2), "s9", &meta("b")).await.unwrap();
    a.bus.publish(envelope("pair", "a", BusTarget::Users(vec![UserId(1), UserId(2)]))).unwrap();
    a.bus.publish(envelope("nobody", "a", BusTarget::Users(vec![UserId(1), UserId(5)]))).unwrap();
    // A long list (a user's contacts) is one broadcast.
    a.bus.publish(envelope("contacts", "a", BusTarget::Users((100..117).map(UserId).collect()))).unwrap();
    let own = BusTarget::Session { node_id: "a".into(), session: "s".into() };
    a.bus.publish(envelope("own-session", "a", own)).unwrap();
    let theirs = BusTarget::Session { node_id: "b".into(), session: "s".into() };
    b.bus.publish(envelope("b-to-b", "b", theirs)).unwrap();
    marker(&a, &b, "m").await;
    marker(&b, &a, "m-a").await;
    assert_eq!(b.got.ids(), vec!["pair", "contacts", "m"]);
    assert_eq!(a.got.ids(), vec!["m-a"], "a session on the source node is not sent at all");
    let m = client.metrics().snapshot();
    assert_eq!(m.bus_published, 7, "every envelope counts as published, the unsent ones included");
    assert!(a.bus.is_shared());
}

#[tokio::test]
async fn a_burst_arrives_whole_and_in_order() {
    let Some(client) = common::client("bus-order").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    RedisPresence::new(client.clone(), "b").join_topics(T, UserId(3), &["grpO".into()]).await.unwrap();
    let sent: Vec<String> = (0..2000).map(|i| format!("e{i:04}")).collect();
    for (i, id) in sent.iter().enumerate() {
        // Three routes interleaved: they all end on b's one connection, in publish order.
        let target = match i % 3 {
            0 => BusTarget::Topic("grpO".into()),
            1 => BusTarget::Session { node_id: "b".into(), session: "s".into() },
            _ => BusTarget::Users((200..217).map(UserId).collect()),
        };
        a.bus.publish(envelope(id, "a", target)).unwrap();
    }
    until(|| b.got.ids().len() >= 2000, "the burst arrives").await;
    assert_eq!(b.got.ids(), sent);
    let m = client.metrics().snapshot();
    assert_eq!((m.bus_published, m.bus_dropped_full, m.bus_publish_errors), (2000, 0, 0));
    assert!(m.commands < 1000, "envelopes were batched: {} commands for 2000", m.commands);
}
