//! The `[kafka]` section: brokers, client and group ids, security passed to librdkafka, topic names (defaults from
//! `QueueTopic::default_name`), and how missing topics are created.

use palaver_core::ports::QueueTopic;
use serde::{Deserialize, Serialize};

/// How the node reaches Kafka.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// Bootstrap brokers, comma separated `host:port`.
    pub brokers: String,
    /// The client id the brokers see (`client.id`).
    pub client_id: String,
    /// The prefix of every consumer group the node joins; each consumer adds its own suffix (`palaver.audit`).
    pub group_id: String,
    /// librdkafka `security.protocol`: `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`.
    pub security_protocol: String,
    /// librdkafka `sasl.mechanism` (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`); empty: unset.
    pub sasl_mechanism: String,
    /// librdkafka `sasl.username`; empty: unset.
    pub sasl_username: String,
    /// librdkafka `sasl.password`; empty: unset.
    pub sasl_password: String,
    /// librdkafka `ssl.ca.location` (a PEM file); empty: unset.
    pub ssl_ca_location: String,
    /// librdkafka `ssl.certificate.location` (the client's PEM certificate); empty: unset.
    pub ssl_certificate_location: String,
    /// librdkafka `ssl.key.location` (the client's PEM key); empty: unset.
    pub ssl_key_location: String,
    /// librdkafka `ssl.key.password`; empty: unset.
    pub ssl_key_password: String,
    /// Partitions of each topic created at start (existing topics are left as they are).
    pub partitions: i32,
    /// Replication factor of each topic created at start.
    pub replication: i32,
    /// How long a produce may take, retries included, before it fails (librdkafka `message.timeout.ms`). Keep it
    /// below `outbox.lease_ms`.
    pub delivery_timeout_ms: u64,
    /// Broker topic names per role.
    pub topics: KafkaTopics,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            brokers: "127.0.0.1:9092".into(),
            client_id: "palaver".into(),
            group_id: "palaver".into(),
            security_protocol: "plaintext".into(),
            sasl_mechanism: String::new(),
            sasl_username: String::new(),
            sasl_password: String::new(),
            ssl_ca_location: String::new(),
            ssl_certificate_location: String::new(),
            ssl_key_location: String::new(),
            ssl_key_password: String::new(),
            partitions: 6,
            replication: 1,
            delivery_timeout_ms: 10_000,
            topics: KafkaTopics::default(),
        }
    }
}

/// The broker topic of each queue role.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaTopics {
    /// Admin commands to the nodes.
    pub admin_command: String,
    /// One result per admin command.
    pub admin_result: String,
    /// Summaries of state changes for the Admin side.
    pub admin_event: String,
    /// Audit events.
    pub audit: String,
    /// Offline push tasks.
    pub push: String,
    /// File security tasks.
    pub file_security: String,
    /// Events for the listening plugins.
    pub plugin_event: String,
    /// Dead letters.
    pub dead_letter: String,
}

impl Default for KafkaTopics {
    fn default() -> Self {
        let d = QueueTopic::default_name;
        KafkaTopics {
            admin_command: d(QueueTopic::AdminCommand).into(),
            admin_result: d(QueueTopic::AdminResult).into(),
            admin_event: d(QueueTopic::AdminEvent).into(),
            audit: d(QueueTopic::Audit).into(),
            push: d(QueueTopic::Push).into(),
            file_security: d(QueueTopic::FileSecurity).into(),
            plugin_event: d(QueueTopic::PluginEvent).into(),
            dead_letter: d(QueueTopic::DeadLetter).into(),
        }
    }
}

impl KafkaTopics {
    /// The broker topic of `role`.
    pub fn name(&self, role: QueueTopic) -> &str {
        match role {
            QueueTopic::AdminCommand => &self.admin_command,
            QueueTopic::AdminResult => &self.admin_result,
            QueueTopic::AdminEvent => &self.admin_event,
            QueueTopic::Audit => &self.audit,
            QueueTopic::Push => &self.push,
            QueueTopic::FileSecurity => &self.file_security,
            QueueTopic::PluginEvent => &self.plugin_event,
            QueueTopic::DeadLetter => &self.dead_letter,
        }
    }

    /// Every role's topic prefixed with `prefix` (tests use fresh topics this way).
    pub fn prefixed(prefix: &str) -> KafkaTopics {
        let d = |t: QueueTopic| format!("{prefix}{}", t.default_name());
        KafkaTopics {
            admin_command: d(QueueTopic::AdminCommand),
            admin_result: d(QueueTopic::AdminResult),
            admin_event: d(QueueTopic::AdminEvent),
            audit: d(QueueTopic::Audit),
            push: d(QueueTopic::Push),
            file_security: d(QueueTopic::FileSecurity),
            plugin_event: d(QueueTopic::PluginEvent),
            dead_letter: d(QueueTopic::DeadLetter),
        }
    }
}

/// A Kafka topic name: 1–249 of `[A-Za-z0-9._-]`.
fn valid_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

impl KafkaConfig {
    /// Checks what librdkafka would only reject later, or not at all.
    pub fn validate(&self) -> Result<(), String> {
        if self
            .brokers
            .split(',')
            .any(|b| b.trim().rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err()))
        {
            return Err(format!("kafka.brokers {:?} must be host:port[,host:port…]", self.brokers));
        }
        if self.client_id.is_empty() || self.group_id.is_empty() {
            return Err("kafka.client_id and kafka.group_id must not be empty".into());
        }
        let protocols = ["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"];
        if !protocols.contains(&self.security_protocol.to_ascii_lowercase().as_str()) {
            return Err(format!("kafka.security_protocol must be one of {protocols:?}"));
        }
        if self.partitions < 1 || self.replication < 1 {
            return Err("kafka.partitions and kafka.replication must be at least 1".into());
        }
        if self.delivery_timeout_ms < 1000 {
            return Err("kafka.delivery_timeout_ms must be at least 1000".into());
        }
        let mut seen = std::collections::HashSet::new();
        for role in QueueTopic::ALL {
            let name = self.topics.name(role);
            if !valid_topic(name) {
                return Err(format!(
                    "kafka.topics.{} {name:?} is not a Kafka topic name ([A-Za-z0-9._-])",
                    role.as_str()
                ));
            }
            if !seen.insert(name) {
                return Err(format!("kafka.topics.{} {name:?} names a topic another role uses", role.as_str()));
            }
        }
        Ok(())
    }

    /// The client settings every producer, consumer and admin client shares.
    pub(crate) fn client(&self) -> rdkafka::ClientConfig {
        let mut c = rdkafka::ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers).set("client.id", &self.client_id);
        c.set("security.protocol", &self.security_protocol);
        for (key, value) in [
            ("sasl.mechanism", &self.sasl_mechanism),
            ("sasl.username", &self.sasl_username),
            ("sasl.password", &self.sasl_password),
            ("ssl.ca.location", &self.ssl_ca_location),
            ("ssl.certificate.location", &self.ssl_certificate_location),
            ("ssl.key.location", &self.ssl_key_location),
            ("ssl.key.password", &self.ssl_key_password),
        ] {
            if !value.is_empty() {
                c.set(key, value);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        let ok = KafkaConfig::default();
        assert!(ok.validate().is_ok());
        assert_eq!(ok.topics.name(QueueTopic::Audit), "im.audit");
        let bad = |f: fn(&mut KafkaConfig)| {
            let mut c = KafkaConfig::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert!(bad(|c| c.brokers = "localhost".into()).contains("kafka.brokers"));
        assert!(bad(|c| c.group_id.clear()).contains("group_id"));
        assert!(bad(|c| c.security_protocol = "tls".into()).contains("security_protocol"));
        assert!(bad(|c| c.partitions = 0).contains("partitions"));
        assert!(bad(|c| c.topics.audit = "im audit".into()).contains("kafka.topics.audit"));
        assert!(bad(|c| c.topics.push = "im.audit".into()).contains("another role"));
    }
}
