//! The node registry against a real Redis: one live holder per node id, takeover only after the claim
//! expired, release only by the holder, and the list of live nodes.

use crate as common;
use palaver_core::ports::{NodeError, NodeInfo, NodeRegistry};
use palaver_store_redis::{RedisConfig, RedisNodes};
use std::collections::HashMap;
use std::time::Duration;

fn info(node: &str, instance: &str) -> NodeInfo {
    NodeInfo {
        node_id: node.into(),
        instance: instance.into(),
        listen: format!("10.0.0.1:{}", 8000 + instance.len()),
        started_at: 1_788_861_600_000,
    }
}

#[tokio::test]
async fn one_live_holder_per_node_id() {
    let Some(client) = common::client("nodes-claim").await else { return };
    let nodes = RedisNodes::new(client.clone());
    let (first, second) = (info("n1", "i-1"), info("n1", "i-22"));
    nodes.register(&first).await.unwrap();
    nodes.register(&first).await.unwrap();
    nodes.heartbeat(&first).await.unwrap();
    match nodes.register(&second).await {
        Err(e @ NodeError::Taken { .. }) => {
            let NodeError::Taken { ref node_id, ref holder, ref listen, expires_in_ms } = e else { unreachable!() };
            assert_eq!((node_id.as_str(), holder.as_str(), listen.as_str()), ("n1", "i-1", first.listen.as_str()));
            assert!(expires_in_ms > 0 && expires_in_ms <= 15_000, "{expires_in_ms}");
            assert!(e.to_string().contains("\"n1\""), "{e}");
        }
        other => panic!("second instance claimed a held id: {other:?}"),
    }
    assert!(matches!(nodes.heartbeat(&second).await, Err(NodeError::Taken { .. })));
    nodes.register(&info("n2", "i-3")).await.unwrap();
    assert_eq!(nodes.live_nodes().await.unwrap(), vec!["n1".to_owned(), "n2".to_owned()]);

    let keys = client.keys();
    let claim: HashMap<String, String> = common::raw(&client, redis::cmd("HGETALL").arg(keys.node_claim("n1"))).await;
    assert_eq!(claim.get("instance").map(String::as_str), Some("i-1"));
    assert_eq!(claim.get("listen"), Some(&first.listen));
    assert_eq!(claim.get("started_at").map(String::as_str), Some("1788861600000"));
    let prefix = &client.config().key_prefix;
    assert_eq!(keys.node_claim("n1"), format!("{prefix}:0:node:n1"));
    let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(keys.node_claim("n1"))).await;
    assert!((1..=15).contains(&ttl), "{ttl}");

    nodes.deregister(&second).await.unwrap();
    assert_eq!(nodes.live_nodes().await.unwrap().len(), 2, "only the holder releases");
    nodes.deregister(&first).await.unwrap();
    assert_eq!(nodes.live_nodes().await.unwrap(), vec!["n2".to_owned()]);
    nodes.register(&second).await.unwrap();
}

#[tokio::test]
async fn an_expired_claim_can_be_taken_over() {
    let config = RedisConfig { node_ttl_seconds: 1, ..common::config("nodes-ttl") };
    let Some(client) = common::live(config).await else { return };
    let nodes = RedisNodes::new(client.clone());
    let (old, new) = (info("n1", "old"), info("n1", "new"));
    nodes.register(&old).await.unwrap();
    assert!(matches!(nodes.register(&new).await, Err(NodeError::Taken { .. })));
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(nodes.live_nodes().await.unwrap().is_empty(), "the old claim expired");
    let members: Vec<String> = common::raw(&client, redis::cmd("SMEMBERS").arg(client.keys().nodes())).await;
    assert!(members.is_empty(), "reading pruned the expired id");
    nodes.register(&new).await.unwrap();
    match nodes.heartbeat(&old).await {
        Err(NodeError::Taken { holder, .. }) => assert_eq!(holder, "new", "the old process learns it lost the id"),
        other => panic!("the old instance kept an id it lost: {other:?}"),
    }
    assert_eq!(nodes.live_nodes().await.unwrap(), vec!["n1".to_owned()]);
}
