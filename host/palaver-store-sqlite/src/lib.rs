//! SQLite adapter for the storage ports (users, topics, subscriptions, messages) through sqlx.
//!
//! [`SqliteStore`] opens (or creates) one database file in WAL mode, applies the embedded migrations from
//! `migrations/sqlite`, and implements `UserStore`, `TopicStore`, `SubscriptionStore` and `MessageStore`, plus
//! `RelationStore` (friend requests, friendships and blocks, from migration 0002) and `NotificationStore`
//! (each user's system notifications, from migration 0003) and `GroupStore` (group roles, mutes, settings, join
//! requests and announcements, from migration 0004), `CommandStore` (the admin command ledger) and `ReportStore`
//! (abuse reports), from migration 0007. Group history lives in `im_group_messages` and P2P history in
//! `im_messages`; the table is picked from the topic name. `OutboxStore` (records owed to the task queue, and
//! the relay's lease) and `AuditStore` (the audit log) come from migrations 0005 and 0006, and [`SqliteQueue`] is
//! the embedded task queue (kept in a file of its own by the server, `queue.db`, with the same schema).
//! `DeviceStore` (push tokens) comes from migration 0008 (its delayed pushes from 0011), `CallStore` (one-to-one calls) from
//! 0009 (the sweep index from 0010). `CredentialStore` (the accounts' email addresses and phone numbers, one
//! confirmed owner each per tenant) comes from migration 0017, and `PluginKv` (the plugins' key-value store, one
//! scope per tenant and plugin) from 0018. `PluginChoiceStore` (the tenants' plugin choices, each under a version
//! from one sequence, so nodes catch up by version) comes from 0019, and `PluginReleaseStore` (plugin releases,
//! their rollouts under revisions from one sequence, and what each node runs) from 0020.
//!
//! Every write that touches more than one row runs in one `BEGIN IMMEDIATE` transaction: taking the write lock up
//! front lets SQLite's busy timeout queue concurrent writers instead of failing one of them mid-transaction.

mod batch;
mod calls;
mod codec;
mod commands;
mod credentials;
mod deletions;
mod devices;
mod error;
mod files;
mod groups;
mod messages;
mod notifications;
mod outbox;
mod plugin_choices;
mod plugin_kv;
mod plugin_releases;
mod queue;
mod relations;
mod reports;
mod settings;
mod store;
mod subs;
mod topics;
mod users;

pub use queue::{Adopted, DEFAULT_RETENTION, POLL_FALLBACK, SqliteQueue};
pub use store::SqliteStore;
