//! MariaDB (and MySQL) adapter: the tenant registry and the four storage ports, one database per tenant.
//!
//! [`MysqlStore::connect`] opens the control database (creating it if missing) and applies its migrations from
//! `migrations/mysql/control`: the `tenants` registry and the `api_keys` that resolve to tenants. Through
//! [`palaver_core::ports::TenantStore`], creating a tenant creates its own database (`palaver_t_<code>` by
//! default), applies `migrations/mysql/tenant` to it and only then registers it. [`MysqlStore::migrate_all`]
//! brings every registered tenant database up to date at start; [`MysqlStore::ensure_default_tenant`] makes sure
//! the `default` tenant exists and owns the demo API key.
//!
//! `UserStore`, `TopicStore`, `SubscriptionStore` and `MessageStore` run on the tenant's database, whose tables
//! have no `tenant_id` column (seed §8): the tenant id picks the database. Tenant pools open lazily on first use,
//! are bounded (connections per tenant, and a cap on open pools), and close when idle; a disabled or unknown
//! tenant is `NotFound` to every storage call.
//!
//! History goes to the seed's `im_group_messages` (groups) and to `im_messages` (P2P, same shape). Appends pass
//! through a per-tenant batch writer that stores up to `batch_max_rows` messages, gathered for at most
//! `batch_max_delay`, with one multi-row insert and the topics' seq updates in one transaction, then answers each
//! caller; a unique-key collision sends that batch down a row-by-row path so each caller still gets its own
//! `Duplicate` or `Conflict`.
//!
//! `group_id` is derived from the topic name: the 64-bit id encoded in a canonical `grp` + 11-character base64url
//! name (little-endian, as user ids), otherwise the first 8 bytes of SHA-256 of the name (always for `p2p…`).
//! Moderation flags are kept in an extra `risk_flags` JSON column next to the seed's `has_risk`.

mod append;
mod batch;
mod codec;
mod config;
mod deletions;
mod derive;
mod error;
mod messages;
mod pools;
mod ranges;
mod schema;
mod store;
mod subs;
mod table;
mod tenants;
mod topics;
mod users;

pub use config::{ConfigError, MysqlConfig};
pub use store::{MigrationReport, MysqlStore};
pub use tenants::DEFAULT_TENANT_CODE;
