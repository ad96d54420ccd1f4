//! The in-process realtime bus: a hub that node handles connect to, fanning every envelope out to every sink.
//!
//! The embedded single-node mode uses one handle from [`MemoryBus::new`]; tests of multi-node behaviour connect
//! several handles to one [`MemoryHub`]. Every handle's sinks see every envelope, the publisher's own included:
//! dropping a node's own loopback is the consumer's job, exactly as with a real broker.

use palaver_core::ports::{BusError, BusSink, Envelope, RealtimeBus};
use parking_lot::Mutex;
use std::sync::Arc;

/// The shared switchboard of a set of in-process nodes. Cloning is cheap and clones are the same hub.
#[derive(Clone, Default)]
pub struct MemoryHub {
    sinks: Arc<Mutex<Vec<Arc<dyn BusSink>>>>,
}

/// One node's handle on a hub.
#[derive(Clone)]
pub struct MemoryBus {
    hub: MemoryHub,
    node_id: String,
    /// False for the single node of [`MemoryBus::new`], which then lets the service skip the bus entirely.
    shared: bool,
}

impl MemoryHub {
    /// A hub with no nodes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle for the node `node_id`, sharing this hub with every other handle connected to it.
    pub fn connect(&self, node_id: impl Into<String>) -> MemoryBus {
        MemoryBus { hub: self.clone(), node_id: node_id.into(), shared: true }
    }

    /// How many sinks are subscribed across all nodes.
    pub fn sink_count(&self) -> usize {
        self.sinks.lock().len()
    }
}

impl MemoryBus {
    /// A bus of one node, `local`, on a hub of its own.
    pub fn new() -> Self {
        MemoryBus { shared: false, ..MemoryHub::new().connect("local") }
    }

    /// A new hub to connect several node handles to.
    pub fn hub() -> MemoryHub {
        MemoryHub::new()
    }

    /// The node this handle belongs to.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryHub").field("sinks", &self.sink_count()).finish()
    }
}

impl std::fmt::Debug for MemoryBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBus").field("node_id", &self.node_id).field("hub", &self.hub).finish()
    }
}

impl RealtimeBus for MemoryBus {
    fn publish(&self, envelope: Envelope) -> Result<(), BusError> {
        // The sink list is copied out so that no sink runs under the lock: a sink may publish or subscribe in turn.
        let sinks: Vec<Arc<dyn BusSink>> = self.hub.sinks.lock().clone();
        if let Some((last, rest)) = sinks.split_last() {
            for sink in rest {
                sink.deliver(envelope.clone());
            }
            last.deliver(envelope);
        }
        Ok(())
    }

    fn subscribe(&self, sink: Arc<dyn BusSink>) {
        self.hub.sinks.lock().push(sink);
    }

    fn is_shared(&self) -> bool {
        self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_core::TenantId;
    use palaver_core::ports::{BusTarget, EventKind};

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Envelope>>);

    impl BusSink for Recorder {
        fn deliver(&self, envelope: Envelope) {
            self.0.lock().push(envelope);
        }
    }

    fn envelope(id: &str, node: &str) -> Envelope {
        Envelope {
            event_id: id.into(),
            tenant: TenantId(1),
            tenant_code: None,
            kind: EventKind::Message,
            target: BusTarget::Topic("grpA".into()),
            from: None,
            source_node: node.into(),
            skip_session: None,
            dedup_key: None,
            occurred_at: 1,
            payload: "{}".into(),
        }
    }

    #[test]
    fn fans_out_between_nodes_including_loopback() {
        let hub = MemoryBus::hub();
        let (a, b) = (hub.connect("a"), hub.connect("b"));
        let (ra, rb) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        a.subscribe(ra.clone());
        b.subscribe(rb.clone());
        assert_eq!(hub.sink_count(), 2);
        a.publish(envelope("e1", "a")).unwrap();
        b.publish(envelope("e2", "b")).unwrap();
        let ids = |r: &Recorder| r.0.lock().iter().map(|e| e.event_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&ra), ["e1", "e2"]);
        assert_eq!(ids(&rb), ["e1", "e2"]);
        assert_eq!(a.node_id(), "a");
    }

    #[test]
    fn separate_buses_do_not_share() {
        let (a, b) = (MemoryBus::new(), MemoryBus::new());
        let rb = Arc::new(Recorder::default());
        b.subscribe(rb.clone());
        a.publish(envelope("e1", "local")).unwrap();
        assert!(rb.0.lock().is_empty());
    }
}
