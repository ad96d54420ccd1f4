//! Delivery: how what one session does reaches every other session it concerns, on this node and on others.
//!
//! - [`hub`] is the node's registry of sessions and their attachments, with each session's bounded queue;
//! - [`topics`] owns each loaded topic's ordering lock and caches (readers, publish gate, roster);
//! - [`event`] is what travels between nodes: each delivery as an [`event::Event`], and where it is routed;
//! - [`dispatch`] is where every delivery enters: it applies an event here and publishes it to other nodes
//!   (`dispatch`, `fan_out`, `control`, `emit_business`), and receives theirs;
//! - [`local`] applies an event to this node's sessions (the one place that picks them);
//! - [`fanout`] delivers a stored message to attached readers and tells unattached members;
//! - [`notify`] sends the `{pres}` on `me` and membership events a change causes (access, gone, evicted);
//! - [`control`] closes sessions for evictions and revoked credentials, on every node; [`control_state`] is what
//!   each session is judged by, held by the hub;
//! - [`attached`] tells the shared presence who is attached to which topic here, for other nodes' push workers.
//!
//! Imports and calls run one way, with no cycle: `dispatch` uses `local`, which uses `fanout`, `control` and
//! `notify`'s helpers; every one of them reads `event`, which reads none; `attached` reads only `hub`; `hub` uses
//! only `control_state`; `topics` imports none of the others (it holds the business layer's gate and roster
//! types, and the business layer uses `dispatch`). `scripts/module-cycles.py host/palaver-service --methods`
//! checks it.

pub(crate) mod attached;
pub(crate) mod control;
pub(crate) mod control_state;
pub(crate) mod dispatch;
pub(crate) mod event;
pub(crate) mod fanout;
pub(crate) mod hub;
pub(crate) mod local;
pub(crate) mod notify;
pub(crate) mod topics;
