//! Apache Kafka adapter for the task queue port (rdkafka over the bundled librdkafka).
//!
//! [`KafkaQueue::connect`] creates the configured topics that are missing (partitions and replication from the
//! config) and one idempotent producer (`enable.idempotence`, `acks=all`): `produce` returns `Ok` only once every
//! in-sync replica has the record, and retries inside librdkafka never reorder or duplicate a partition's records.
//! Records are keyed, so one key stays on one partition and in order.
//!
//! Each `subscribe` is one consumer-group member with `enable.auto.commit=false`: the caller commits a delivery
//! after its effect (a synchronous offset commit), so a member that dies first leaves the record for the next
//! member. A group without commits starts at the earliest record. Transient client errors (brokers down, a
//! rebalance) are `StoreError::Unavailable`, which callers retry.

mod config;
mod consumer;

pub use config::{KafkaConfig, KafkaTopics};

use async_trait::async_trait;
use palaver_core::ports::{QueueConsumer, QueueRecord, QueueTopic, TaskQueue};
use palaver_core::{StoreError, StoreResult};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use std::sync::Arc;
use std::time::Duration;

/// The queue on a Kafka cluster. Clones share the producer.
#[derive(Clone)]
pub struct KafkaQueue {
    cfg: Arc<KafkaConfig>,
    producer: FutureProducer,
    /// Each consumed partition's lag, as librdkafka's statistics last reported it.
    lag: consumer::Lag,
}

impl KafkaQueue {
    /// Builds the producer and creates the missing topics. `Unavailable` when no broker answers within the
    /// delivery timeout.
    pub async fn connect(cfg: KafkaConfig) -> StoreResult<KafkaQueue> {
        let queue = KafkaQueue::new(cfg)?;
        queue.ensure_topics().await?;
        Ok(queue)
    }

    /// Builds the producer without reaching a broker (librdkafka connects in the background); call
    /// [`KafkaQueue::ensure_topics`] before relying on the topics.
    pub fn new(cfg: KafkaConfig) -> StoreResult<KafkaQueue> {
        cfg.validate().map_err(StoreError::Internal)?;
        let producer: FutureProducer = cfg
            .client()
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", cfg.delivery_timeout_ms.to_string())
            .set("linger.ms", "2")
            .create()
            .map_err(kafka_error)?;
        Ok(KafkaQueue { cfg: Arc::new(cfg), producer, lag: consumer::Lag::default() })
    }

    /// The configuration the queue runs with.
    pub fn config(&self) -> &KafkaConfig {
        &self.cfg
    }

    /// Creates every configured topic that does not exist yet; existing topics are left alone.
    pub async fn ensure_topics(&self) -> StoreResult<()> {
        let admin: AdminClient<DefaultClientContext> = self.cfg.client().create().map_err(kafka_error)?;
        let topics: Vec<NewTopic<'_>> = QueueTopic::ALL
            .iter()
            .map(|role| {
                NewTopic::new(
                    self.cfg.topics.name(*role),
                    self.cfg.partitions,
                    TopicReplication::Fixed(self.cfg.replication),
                )
            })
            .collect();
        let wait = Duration::from_millis(self.cfg.delivery_timeout_ms);
        let opts = AdminOptions::new().operation_timeout(Some(wait)).request_timeout(Some(wait));
        let results = admin.create_topics(topics.iter(), &opts).await.map_err(kafka_error)?;
        for result in results {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((topic, code)) => {
                    return Err(StoreError::Unavailable(format!("creating Kafka topic {topic}: {code}")));
                }
            }
        }
        Ok(())
    }

    fn record<'a>(&'a self, r: &'a QueueRecord) -> FutureRecord<'a, str, [u8]> {
        let mut headers = OwnedHeaders::new_with_capacity(r.headers.len());
        for (key, value) in &r.headers {
            headers = headers.insert(Header { key, value: Some(value.as_str()) });
        }
        FutureRecord::to(self.cfg.topics.name(r.topic))
            .key(r.key.as_str())
            .payload(r.payload.as_slice())
            .headers(headers)
    }

    /// Hands a record to librdkafka, waiting while its local queue is full.
    async fn enqueue(&self, r: &QueueRecord) -> StoreResult<DeliveryFuture> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.cfg.delivery_timeout_ms);
        loop {
            match self.producer.send_result(self.record(r)) {
                Ok(delivery) => return Ok(delivery),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _))
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err((err, _)) => return Err(kafka_error(err)),
            }
        }
    }
}

/// Waits for one record's acknowledgement.
async fn delivered(delivery: DeliveryFuture) -> StoreResult<()> {
    match delivery.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((err, _))) => Err(kafka_error(err)),
        Err(_) => Err(StoreError::Unavailable("the Kafka producer was closed".into())),
    }
}

#[async_trait]
impl TaskQueue for KafkaQueue {
    async fn produce(&self, record: QueueRecord) -> StoreResult<()> {
        delivered(self.enqueue(&record).await?).await
    }

    /// All records are handed to librdkafka in order before any acknowledgement is awaited; the idempotent
    /// producer keeps each partition's records in that order.
    async fn produce_batch(&self, records: Vec<QueueRecord>) -> StoreResult<()> {
        let mut pending = Vec::with_capacity(records.len());
        for r in &records {
            pending.push(self.enqueue(r).await?);
        }
        let mut first_error = None;
        for delivery in pending {
            if let Err(err) = delivered(delivery).await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn subscribe(&self, topic: QueueTopic, group: &str) -> StoreResult<Box<dyn QueueConsumer>> {
        Ok(Box::new(consumer::KafkaConsumer::join(&self.cfg, topic, group, self.lag.clone())?))
    }
}

/// The consumers' lag in the node's registry.
impl palaver_core::MetricsSource for KafkaQueue {
    fn register(&self, registry: &mut palaver_core::Registry) {
        registry.register(
            "palaver_kafka_consumer_lag",
            "Records between a consumed partition's committed offset and its end, by topic and partition",
            self.lag.clone(),
        );
    }
}

/// Client errors as the port's: configuration and message-shape errors are `Internal`, the rest transient.
pub(crate) fn kafka_error(err: KafkaError) -> StoreError {
    use RDKafkaErrorCode as C;
    let code = err.rdkafka_error_code();
    match (&err, code) {
        (KafkaError::ClientConfig(..), _) | (KafkaError::ClientCreation(_), _) => StoreError::Internal(err.to_string()),
        (_, Some(C::MessageSizeTooLarge | C::InvalidTopic | C::TopicAuthorizationFailed | C::InvalidConfig)) => {
            StoreError::Internal(err.to_string())
        }
        _ => StoreError::Unavailable(err.to_string()),
    }
}

/// Kafka down delays what the outbox holds (chat goes on, the relay drains the backlog later), so it is
/// reported, not required. The check asks the cluster for its metadata, which needs a live broker.
#[async_trait]
impl palaver_core::ports::HealthCheck for KafkaQueue {
    fn name(&self) -> &'static str {
        "queue"
    }

    fn required(&self) -> bool {
        false
    }

    async fn check(&self) -> Result<(), String> {
        let producer = self.producer.clone();
        // librdkafka's metadata call blocks its thread.
        let metadata = tokio::task::spawn_blocking(move || {
            use rdkafka::producer::Producer;
            producer.client().fetch_metadata(None, Duration::from_millis(900)).map(|m| m.brokers().len())
        });
        match metadata.await {
            Ok(Ok(brokers)) if brokers > 0 => Ok(()),
            Ok(Ok(_)) => Err("Kafka: the cluster lists no broker".into()),
            Ok(Err(e)) => Err(format!("Kafka: {e}")),
            Err(e) => Err(format!("Kafka: the check did not finish: {e}")),
        }
    }
}
