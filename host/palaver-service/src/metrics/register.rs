//! The names, help texts and types under which the service's metrics appear in `/metrics` (`docs/metrics.md`
//! describes each). Counter names leave out `_total`: the encoder adds it.

use super::Metrics;
use palaver_core::{MetricsSource, Registry};

impl MetricsSource for Metrics {
    fn register(&self, r: &mut Registry) {
        r.register("palaver_sessions", "Live client sessions on this node", self.sessions.clone());
        r.register(
            "palaver_sessions_by_transport",
            "Live client sessions on this node, by transport (ws, lp)",
            self.sessions_by_transport.clone(),
        );
        r.register(
            "palaver_loaded_topics",
            "Topics loaded on this node (ordering lock, seq floor and caches), bounded by limits.max_loaded_topics",
            self.loaded_topics.clone(),
        );
        r.register("palaver_sessions_opened", "Client sessions opened", self.sessions_opened.clone());
        r.register("palaver_requests", "Client messages handled, by kind", self.requests.clone());
        r.register(
            "palaver_request_duration_seconds",
            "Time from a client message to its reply, by kind (pub: the publish ack, login: the login)",
            self.request_seconds.clone(),
        );
        r.register("palaver_requests_malformed", "Client frames that did not decode", self.malformed.clone());
        r.register("palaver_request_errors", "Requests answered with an error, by ctrl code", self.errors.clone());
        r.register("palaver_messages_stored", "Messages stored under a new seq", self.messages_stored.clone());
        r.register("palaver_files_uploaded", "Uploads stored (`/v0/file/u/`)", self.files_uploaded.clone());
        r.register("palaver_file_upload_bytes", "Bytes of the uploads stored", self.file_upload_bytes.clone());
        r.register(
            "palaver_files_collected",
            "Uploads removed because no message referenced them after the grace period",
            self.files_collected.clone(),
        );
        r.register(
            "palaver_files_scanned",
            "File-security tasks done, by outcome (clean, blocked, review, failed)",
            self.files_scanned.clone(),
        );
        r.register(
            "palaver_credential_codes",
            "Confirmation and reset codes asked for, by method, purpose and outcome (sent, limited, refused, failed)",
            self.codes_sent.clone(),
        );
        r.register(
            "palaver_credentials_confirmed",
            "Credentials confirmed with their code, by method",
            self.credentials_confirmed.clone(),
        );
        r.register(
            "palaver_message_retries",
            "Publishes answered from an earlier attempt (same client_mid)",
            self.message_retries.clone(),
        );
        r.register(
            "palaver_idempotency",
            "client_mid claims, by outcome (acquired, done, pending)",
            self.idempotency.clone(),
        );
        r.register(
            "palaver_seq_rebaselines",
            "Seq counters moved above the stored maximum after an append found its seq taken",
            self.seq_rebaselines.clone(),
        );
        r.register(
            "palaver_seq_run_messages",
            "Messages given seqs by one allocation (a topic's waiting messages take one run of seqs)",
            self.seq_runs.clone(),
        );
        r.register(
            "palaver_db_append_seconds",
            "Time to append one message to the store (with MySQL, the wait for its batch included)",
            self.db_append_seconds.clone(),
        );
        r.register(
            "palaver_conditional_update_failures",
            "Conditional database writes refused because the row had moved on, by what was written",
            self.conditional_failures.clone(),
        );
        r.register("palaver_fanout_frames", "Frames queued to sessions by fanout", self.fanout_frames.clone());
        r.register(
            "palaver_fanout_dropped",
            "Frames dropped because a session queue was full",
            self.fanout_dropped.clone(),
        );
        r.register(
            "palaver_fanout_delivery_seconds",
            "Time to apply one event to this node's sessions (local or from the bus)",
            self.fanout_seconds.clone(),
        );
        r.register(
            "palaver_bus_published",
            "Realtime envelopes published to other nodes, by kind",
            self.bus_published.clone(),
        );
        r.register(
            "palaver_bus_publish_failed",
            "Realtime envelopes the bus refused (queue full or closed)",
            self.bus_publish_failed.clone(),
        );
        r.register(
            "palaver_bus_received",
            "Realtime envelopes received from the bus, by outcome",
            self.bus_received.clone(),
        );
        r.register(
            "palaver_bus_fanout",
            "Remote events by what they found here (deliver, no_local_topic, no_local_session, hub_full)",
            self.bus_fanout.clone(),
        );
        r.register(
            "palaver_bus_latency_seconds",
            "Time from an event's publication on another node to its arrival here",
            self.bus_latency.clone(),
        );
        r.register(
            "palaver_sessions_controlled",
            "Sessions closed by a session control, by how it arrived (event, check)",
            self.sessions_controlled.clone(),
        );
        r.register(
            "palaver_business_commands",
            "Business commands (/v1/im/) run, by outcome (ok, refused, failed)",
            self.business_commands.clone(),
        );
        r.register(
            "palaver_admin_commands",
            "Admin commands settled, by outcome (succeeded, failed, rejected, repeat, retry, dead_letter)",
            self.admin_commands.clone(),
        );
        r.register(
            "palaver_business_command_microseconds",
            "Time spent running business commands, rules, storage and events included",
            self.business_micros.clone(),
        );
        r.register(
            "palaver_business_rule_seconds",
            "Time of each call to the business rules (the plugins' on-command hook), a part of the command time",
            self.rule_seconds.clone(),
        );
        r.register(
            "palaver_security_refused",
            "Requests refused by a protection, by reason (after_close, lp_total, lp_per_ip)",
            self.refused.clone(),
        );
        r.register(
            "palaver_connections",
            "Open client connections (HTTP, WebSocket) on the main listener",
            self.connections.clone(),
        );
        r.register(
            "palaver_connections_refused",
            "Connections answered 503 because server.max_connections were open",
            self.connections_refused.clone(),
        );
        r.register(
            "palaver_accept_errors",
            "Failed accepts (such as EMFILE); the listener backs off and goes on",
            self.accept_errors.clone(),
        );
        r.register(
            "palaver_accept_restarts",
            "Accept loops restarted after ending with an error or a panic",
            self.accept_restarts.clone(),
        );
        r.register(
            "palaver_connection_timeouts",
            "Connections closed by a timeout, by kind (header, http_idle, ws_handshake, write)",
            self.connection_timeouts.clone(),
        );
        r.register(
            "palaver_session_queue_overflows",
            "Sessions closed because a reply would have taken their queue past limits.session_queue_bytes",
            self.queue_overflows.clone(),
        );
        r.register(
            "palaver_heartbeat_failures",
            "Failed heartbeats, by what (presence, node)",
            self.heartbeat_failures.clone(),
        );
        r.register(
            "palaver_http_request_duration_seconds",
            "Time to answer an HTTP API request, by route",
            self.http_seconds.clone(),
        );
        r.register(
            "palaver_dependency_up",
            "Whether a dependency answered its last readiness check (1) or not (0), by dependency",
            self.dependency_up.clone(),
        );
        r.register(
            "palaver_config_refreshes",
            "Configuration refreshes (SIGHUP or the admin rescan of the plugins directory), by outcome",
            self.config_refreshes.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn renders_every_metric() {
        let m = Metrics::default();
        m.request("pub");
        m.request_done("pub", Duration::from_millis(3));
        m.error(404);
        m.fanout(false);
        m.admin_command("repeat");
        m.set_sessions(3);
        let _ws = m.session_opened("ws");
        let mut registry = Registry::default();
        m.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("palaver_admin_commands_total{outcome=\"repeat\"} 1"), "{text}");
        assert!(text.contains("palaver_sessions 3"), "{text}");
        assert!(text.contains("palaver_sessions_by_transport{transport=\"ws\"} 1"), "{text}");
        assert!(text.contains("palaver_requests_total{kind=\"pub\"} 1"), "{text}");
        assert!(text.contains("palaver_requests_total{kind=\"get\"} 0"), "{text}");
        assert!(text.contains("palaver_request_errors_total{code=\"404\"} 1"), "{text}");
        assert!(text.contains("palaver_fanout_dropped_total 1"), "{text}");
        assert!(text.contains("palaver_request_duration_seconds_bucket{le=\"0.005\",kind=\"pub\"} 1"), "{text}");
        assert!(text.contains("palaver_request_duration_seconds_bucket{le=\"0.0025\",kind=\"pub\"} 0"), "{text}");
        assert_eq!(m.dropped(), 1);
        drop(_ws);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("palaver_sessions_by_transport{transport=\"ws\"} 0"), "a closed session is gone: {text}");
    }
}
