//! One consumer-group member: a `StreamConsumer` subscribed to one topic, offsets committed by the caller.
//! librdkafka's statistics (every [`STATS_EVERY_MS`]) report each assigned partition's lag, which the
//! consumer's context copies into `palaver_kafka_consumer_lag`.

use crate::config::KafkaConfig;
use crate::kafka_error;
use async_trait::async_trait;
use palaver_core::ports::{Delivery, QueueConsumer, QueueRecord, QueueTopic};
use palaver_core::{StoreError, StoreResult};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use rdkafka::consumer::{CommitMode, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{ClientContext, Statistics};
use rdkafka::{Offset, TopicPartitionList};
use std::sync::Arc;
use std::time::Duration;

/// How often librdkafka reports its statistics (and so the lag).
const STATS_EVERY_MS: u32 = 5_000;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Partition {
    topic: String,
    partition: i32,
}

/// Every consumer's partitions of one queue.
pub(crate) type Lag = Family<Partition, Gauge>;

/// Copies the lag out of each statistics report.
pub(crate) struct LagContext(Lag);

impl ClientContext for LagContext {
    fn stats(&self, statistics: Statistics) {
        for (name, topic) in &statistics.topics {
            for (id, p) in &topic.partitions {
                // Partition -1 is librdkafka's internal "unassigned" one; a lag of -1 is not known yet.
                if *id >= 0 && p.consumer_lag >= 0 {
                    self.0.get_or_create(&Partition { topic: name.clone(), partition: *id }).set(p.consumer_lag);
                }
            }
        }
    }
}

impl ConsumerContext for LagContext {}

pub(crate) struct KafkaConsumer {
    consumer: Arc<StreamConsumer<LagContext>>,
    role: QueueTopic,
    name: String,
}

impl KafkaConsumer {
    pub(crate) fn join(cfg: &KafkaConfig, role: QueueTopic, group: &str, lag: Lag) -> StoreResult<KafkaConsumer> {
        let consumer: StreamConsumer<LagContext> = cfg
            .client()
            .set("group.id", group)
            // Offsets move only when the caller commits, after the record's effect.
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000")
            .set("statistics.interval.ms", STATS_EVERY_MS.to_string())
            .create_with_context(LagContext(lag))
            .map_err(kafka_error)?;
        let name = cfg.topics.name(role).to_owned();
        consumer.subscribe(&[&name]).map_err(kafka_error)?;
        Ok(KafkaConsumer { consumer: Arc::new(consumer), role, name })
    }
}

#[async_trait]
impl QueueConsumer for KafkaConsumer {
    async fn next(&mut self) -> StoreResult<Delivery> {
        loop {
            match self.consumer.recv().await {
                Ok(m) => {
                    let headers = m
                        .headers()
                        .map(|h| {
                            h.iter()
                                .map(|h| {
                                    let value = h.value.map(|v| String::from_utf8_lossy(v).into_owned());
                                    (h.key.to_owned(), value.unwrap_or_default())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let record = QueueRecord {
                        topic: self.role,
                        key: m.key().map(|k| String::from_utf8_lossy(k).into_owned()).unwrap_or_default(),
                        headers,
                        payload: m.payload().unwrap_or_default().to_vec(),
                    };
                    return Ok(Delivery { record, partition: m.partition(), offset: m.offset() });
                }
                // Brokers away or a topic not there yet: the client reconnects by itself; look again shortly
                // rather than leave the group.
                Err(err) => {
                    tracing::debug!(%err, topic = %self.name, "Kafka consumer error; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    async fn commit(&mut self, delivery: &Delivery) -> StoreResult<()> {
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset(&self.name, delivery.partition, Offset::Offset(delivery.offset + 1))
            .map_err(kafka_error)?;
        let consumer = self.consumer.clone();
        // A synchronous commit blocks its thread until the coordinator answers: off the async workers.
        tokio::task::spawn_blocking(move || consumer.commit(&offsets, CommitMode::Sync))
            .await
            .map_err(|e| StoreError::Internal(e.to_string()))?
            .map_err(kafka_error)
    }
}
