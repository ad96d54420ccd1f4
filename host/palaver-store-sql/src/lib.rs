//! Support for the SQL adapters (SQLite and MariaDB/MySQL), which must not depend on each other: how domain
//! values are stored in columns, the rows both select and how they become domain values, and the pure logic
//! around their queries (the queue's rows in [`queue`]). No connection handling and no dialect-specific SQL: that
//! stays in each adapter.

pub mod bind;
pub mod calls;
pub mod columns;
pub mod credentials;
pub mod delayed;
pub mod dellog;
pub mod devices;
pub mod files;
pub mod ledger;
pub mod notifications;
pub mod plugin_releases;
pub mod queue;
pub mod relations;
pub mod rows;
pub mod settings;
pub mod subs;
pub mod users;
pub mod writes;
