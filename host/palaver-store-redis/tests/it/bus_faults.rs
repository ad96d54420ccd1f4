//! The Redis bus when things go wrong: repeated event ids, envelopes on another tenant's channel, a full
//! queue in front of a Redis that is down, and a subscriber whose connection is killed under it.

use crate as common;
use crate::bus::{Recorder, T, envelope, marker, node, until};
use palaver_core::TenantId;
use palaver_core::ports::{BusTarget, RealtimeBus};
use palaver_store_redis::{BusConfig, RedisBus, RedisConfig, encode_envelope};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn a_repeated_event_id_is_delivered_once() {
    let Some(client) = common::client("bus-dedup").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    let to_b = || BusTarget::Session { node_id: "b".into(), session: "s".into() };
    a.bus.publish(envelope("same", "a", to_b())).unwrap();
    a.bus.publish(envelope("same", "a", to_b())).unwrap();
    a.bus.publish(envelope("other", "a", to_b())).unwrap();
    marker(&a, &b, "m").await;
    assert_eq!(b.got.ids(), vec!["same", "other", "m"]);
    assert_eq!(client.metrics().snapshot().bus_duplicate_dropped, 1);
}

#[tokio::test]
async fn an_envelope_on_another_tenants_channel_is_refused() {
    let Some(client) = common::client("bus-tenant").await else { return };
    let (a, b) = (node(&client, "a").await, node(&client, "b").await);
    let keys = client.keys();
    // Tenant 2's channel for node b, carrying an envelope that says tenant 1: a forgery or a bug.
    let forged = encode_envelope(&envelope("forged", "a", BusTarget::Topic("grpX".into()))).unwrap();
    let published: i64 =
        common::raw(&client, redis::cmd("PUBLISH").arg(keys.rt_node_channel(TenantId(2), "b")).arg(&forged)).await;
    assert_eq!(published, 1, "b's subscriber hears tenant 2's channel");
    let _: i64 =
        common::raw(&client, redis::cmd("PUBLISH").arg(keys.rt_node_channel(T, "b")).arg("{not an envelope")).await;
    marker(&a, &b, "m").await;
    assert_eq!(b.got.ids(), vec!["m"]);
    let m = client.metrics().snapshot();
    assert_eq!(m.bus_cross_tenant_dropped, 2, "the forgery and the garbage");
    assert_eq!(m.bus_received, 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_queue_refuses_and_a_failed_batch_is_counted() {
    let client = common::dead_client("bus-full");
    let bus = RedisBus::new(client.clone(), "a", BusConfig { queue: 4, ..BusConfig::default() });
    let to_b = || BusTarget::Session { node_id: "b".into(), session: "s".into() };
    // The publisher cannot run before this loop yields, so exactly the queue's capacity is taken.
    let refused = (0..50).filter(|i| bus.publish(envelope(&format!("e{i}"), "a", to_b())).is_err()).count();
    assert_eq!(refused, 46);
    assert_eq!(client.metrics().snapshot().bus_dropped_full, 46);
    for _ in 0..500 {
        if client.metrics().snapshot().bus_publish_errors == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let m = client.metrics().snapshot();
    assert_eq!((m.bus_publish_errors, m.bus_published), (4, 0), "the batch Redis refused is dropped, not retried");
    assert!(bus.publish(envelope("later", "a", to_b())).is_ok(), "the queue drained");
}

#[tokio::test]
async fn the_subscriber_reconnects_after_its_connection_is_killed() {
    let Some(admin) = common::client("bus-kill").await else { return };
    // A user of its own lets the test kill this bus's connections and no one else's.
    let user = format!("bus-kill-{:08x}", rand::random::<u32>());
    let _: String = common::raw(
        &admin,
        redis::cmd("ACL").arg("SETUSER").arg(&user).arg("on").arg(">pw-kill").arg("~*").arg("&*").arg("+@all"),
    )
    .await;
    let config = RedisConfig { username: user.clone(), password: "pw-kill".into(), ..admin.config().clone() };
    let Some(killable) = common::live(config).await else { return };
    let a = node(&admin, "a").await;
    let cfg = BusConfig { reconnect_min_ms: 20, reconnect_max_ms: 200, ..BusConfig::default() };
    let b = crate::bus::Node { bus: RedisBus::new(killable.clone(), "b", cfg), got: Arc::new(Recorder::default()) };
    b.bus.subscribe(b.got.clone());
    until(|| b.bus.subscriber_connected(), "b subscribes").await;
    marker(&a, &b, "before").await;

    let killed: i64 = common::raw(&admin, redis::cmd("CLIENT").arg("KILL").arg("USER").arg(&user)).await;
    assert!(killed >= 1, "the subscriber connection was killed");
    until(|| b.bus.reconnects() >= 1 && b.bus.subscriber_connected(), "b resubscribes").await;
    marker(&a, &b, "after").await;
    assert_eq!(b.got.ids(), vec!["before", "after"]);
    assert_eq!(killable.metrics().snapshot().bus_reconnects, b.bus.reconnects());
    let _: i64 = common::raw(&admin, redis::cmd("ACL").arg("DELUSER").arg(&user)).await;
}
