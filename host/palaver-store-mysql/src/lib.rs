//! MariaDB (and MySQL) adapter: the tenant registry and the four storage ports, one database per tenant.
//!
//! # Layout
//!
//! [`MysqlStore::connect`] opens the control database named by [`MysqlConfig::url`] (creating it if missing) and
//! applies `migrations/mysql/control`: the `tenants` registry (id, unique code, name, status, database name,
//! config JSON, schema version, times), the `api_keys` that resolve to tenants, the tenants' plugin choices
//! (`PluginChoiceStore`: one row per tenant and plugin, each under a version from the one-row sequence
//! `plugin_choice_version`, so every node catches up on them in version order), and the plugin releases
//! (`PluginReleaseStore`: the uploaded components by name and version, one rollout per plugin under a revision from
//! the one-row sequence `plugin_rollout_revision`, and what each node reports it runs). Through
//! [`palaver_core::ports::TenantStore`], creating a tenant creates its own database (`palaver_t_<code>` by
//! default, see [`MysqlConfig::tenant_database_prefix`]), applies `migrations/mysql/tenant` to it and only then
//! registers it, so a registered tenant always has a usable schema. At start the server calls
//! [`MysqlStore::ensure_default_tenant`] (the `default` tenant, id 1 when free, owning the demo API key) and
//! [`MysqlStore::migrate_all`] (every registered tenant brought up to date, failures reported per tenant).
//!
//! `UserStore`, `TopicStore`, `SubscriptionStore` and `MessageStore` run on the tenant's own database, whose tables
//! have no `tenant_id` column: the tenant id picks the database, so no query can reach another tenant's
//! rows. A disabled or unknown tenant is `NotFound` to every storage call. `RelationStore` (friend requests,
//! friendships, blocks), `NotificationStore` (each user's system notifications) and `GroupStore` (group roles,
//! mutes, settings, join requests, announcements) run on the same database's business tables, and so do
//! `CommandStore` (the admin command ledger) and `ReportStore` (abuse reports), whose writes append their queue
//! records to the same database's outbox in the same transaction. `DeviceStore` (push tokens) runs on its
//! `im_devices` table, `CallStore` (one-to-one calls) on `im_calls`, `CredentialStore` (the accounts' email addresses
//! and phone numbers, one confirmed owner each) on `credentials`, and `PluginKv` (the plugins' key-value store, one
//! scope per plugin) on `plugin_kv`, locking a scope's row of `plugin_kv_scopes` for each commit.
//!
//! # Pools
//!
//! A tenant's pool is opened on its first port call (connections themselves on first query), holds at most
//! [`MysqlConfig::max_connections_per_tenant`] connections, and is closed by a background reaper once unused for
//! [`MysqlConfig::idle_pool_timeout`]. At most [`MysqlConfig::max_tenant_pools`] pools are open; one more evicts
//! the least recently used idle pool. The reaper also rechecks the registry, so a tenant disabled on another node
//! stops being served here within a reaper period.
//!
//! # History and the batch writer
//!
//! Group history goes to `im_group_messages` (the documented table: every column, key and index), P2P history to
//! `im_messages` with the same shape. Appends pass through a per-tenant batch writer: up to
//! [`MysqlConfig::batch_max_rows`] messages gathered for at most [`MysqlConfig::batch_max_delay`] are stored with
//! multi-row inserts, together with the topics' `seq`/`touched_at` updates, in one transaction; each caller is
//! answered after the commit. A unique-key collision (or a missing topic) sends that batch down a row-by-row path in
//! one transaction, so each caller still gets its own `Stored`, `Duplicate { seq }`, `Conflict` or `NotFound`.
//!
//! Derived columns: `group_id` is the 64-bit id encoded in a canonical `grp` + 11-character base64url name
//! (little-endian, as user ids), otherwise the first 8 bytes of SHA-256 of the name (always for `p2p…` names).
//! `mentioned_user_ids`/`mention_all` come from `head.mentions` (and Drafty `MN` entities), `msg_type` and
//! `file_count` from Drafty attachment entities, `reply_seqid`/`root_seqid` from `head.reply`/`head.thread`,
//! `content_size` from the serialised content. Moderation flags live in an extra `risk_flags` JSON column next to
//! the documented `has_risk`.
//!
//! # Errors
//!
//! Unique violations are `Conflict`; refused connections, pool timeouts, deadlocks, lock waits and server shutdowns
//! are `Unavailable`; corrupt rows and everything else are `Internal`. Times of the port-backed tables are BIGINT
//! Unix milliseconds; the message tables hold UTC `DATETIME(3)`, converted in SQL independently of the session's
//! time zone.
//!
//! ```ignore
//! let store = MysqlStore::connect(MysqlConfig::new("mysql://palaver:palaver@127.0.0.1:3306/palaver_control")).await?;
//! store.ensure_default_tenant("AQEAAAABAAD_rAp4DJh05a1HAwFT3A6K").await?;
//! store.migrate_all().await?;
//! ```

mod append;
mod batch;
mod calls;
mod codec;
mod commands;
mod config;
mod credentials;
mod deletions;
mod derive;
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
mod pools;
mod relations;
mod reports;
mod schema;
mod settings;
mod store;
mod subs;
mod table;
mod tenants;
mod topics;
mod users;

pub use config::{ConfigError, MysqlConfig};
pub use store::{MigrationReport, MysqlStore};
pub use tenants::DEFAULT_TENANT_CODE;
