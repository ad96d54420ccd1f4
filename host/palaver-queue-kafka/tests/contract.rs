//! Runs the queue contract against a real Kafka broker (`PALAVER_TEST_KAFKA_BROKERS`, default 127.0.0.1:9092,
//! started by `scripts/lib/services.sh`'s `start_kafka`), each case on topics of its own.
//!
//! An unreachable broker fails the tests, so a broken environment never passes silently; set
//! `PALAVER_SKIP_KAFKA=1` to skip them with a notice instead.

use palaver_queue_kafka::{KafkaConfig, KafkaQueue, KafkaTopics};

/// A queue on fresh topics (a random prefix), two partitions each so order per key is really tested.
async fn fresh() -> KafkaQueue {
    let brokers = std::env::var("PALAVER_TEST_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let prefix = format!("pvt{:08x}.", rand_u32());
    let cfg = KafkaConfig {
        brokers: brokers.clone(),
        partitions: 2,
        topics: KafkaTopics::prefixed(&prefix),
        ..KafkaConfig::default()
    };
    match KafkaQueue::connect(cfg).await {
        Ok(q) => q,
        Err(err) => panic!(
            "cannot reach Kafka at {brokers} ({err}); start it with `. scripts/lib/services.sh && start_kafka`, \
             or set PALAVER_SKIP_KAFKA=1 to skip these tests"
        ),
    }
}

fn rand_u32() -> u32 {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    (n as u32) ^ std::process::id().rotate_left(16)
}

/// True (after printing a notice) when the Kafka tests are to be skipped.
fn skip() -> bool {
    let skip = std::env::var("PALAVER_SKIP_KAFKA").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("notice: PALAVER_SKIP_KAFKA=1, skipping a Kafka test");
    }
    skip
}

palaver_contract::queue_contract_tests!({
    if skip() {
        return;
    }
    fresh()
});
