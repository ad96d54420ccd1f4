//! Configuration of the MariaDB store: where the control database is, how large pools may grow, when idle tenant
//! pools close, and how the batch writer groups appends.

use std::fmt;
use std::time::Duration;

/// The longest database name MariaDB accepts.
const MAX_DATABASE_NAME: usize = 64;

/// The longest tenant code; a code is spliced into its database name after the prefix.
pub(crate) const MAX_CODE: usize = 32;

/// MariaDB refuses statements with more than 65,535 placeholders; a message row binds 22, so a batch stays well
/// below that at this many rows.
const MAX_BATCH_ROWS: usize = 2_000;

/// Settings of [`crate::MysqlStore`]. [`MysqlConfig::new`] fills in the defaults for everything but the URL.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlConfig {
    /// The control database, e.g. `mysql://palaver:palaver@127.0.0.1:3306/palaver_control`. It is created if
    /// missing; tenant databases live on the same server and are reached with the same credentials.
    pub url: String,
    /// The most connections one tenant's pool opens.
    pub max_connections_per_tenant: u32,
    /// The most connections the control database's pool opens.
    pub control_max_connections: u32,
    /// The most tenant pools open at once. Opening one more closes the least recently used idle pool; if every
    /// pool is in use, the call fails with `Unavailable`.
    pub max_tenant_pools: usize,
    /// A tenant pool unused for this long is closed (and reopened on the next call). Idle connections inside an
    /// open pool are closed after the same time.
    pub idle_pool_timeout: Duration,
    /// How long a port call waits for a free connection before failing with `Unavailable`.
    pub acquire_timeout: Duration,
    /// The most appends the batch writer stores in one transaction.
    pub batch_max_rows: usize,
    /// How long the batch writer waits, after the first append of a batch arrived, for more to join it.
    /// Zero writes whatever is queued at once.
    pub batch_max_delay: Duration,
    /// Tenant databases are named this prefix followed by the tenant's code: `palaver_t_acme`.
    pub tenant_database_prefix: String,
}

impl MysqlConfig {
    /// The defaults, with the control database at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections_per_tenant: 4,
            control_max_connections: 4,
            max_tenant_pools: 256,
            idle_pool_timeout: Duration::from_secs(300),
            acquire_timeout: Duration::from_secs(5),
            batch_max_rows: 200,
            batch_max_delay: Duration::from_millis(2),
            tenant_database_prefix: "palaver_t_".to_owned(),
        }
    }

    /// Checks the settings that would otherwise fail later, or silently misbehave.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections_per_tenant == 0 || self.control_max_connections == 0 {
            return Err(ConfigError::Invalid("pools need at least one connection"));
        }
        if self.max_tenant_pools == 0 {
            return Err(ConfigError::Invalid("max_tenant_pools must be at least 1"));
        }
        if self.idle_pool_timeout.is_zero() || self.acquire_timeout.is_zero() {
            return Err(ConfigError::Invalid("idle_pool_timeout and acquire_timeout must be positive"));
        }
        if !(1..=MAX_BATCH_ROWS).contains(&self.batch_max_rows) {
            return Err(ConfigError::Invalid("batch_max_rows must be between 1 and 2000"));
        }
        let prefix = &self.tenant_database_prefix;
        if prefix.is_empty() || !is_identifier(prefix) || prefix.len() + MAX_CODE > MAX_DATABASE_NAME {
            return Err(ConfigError::Invalid(
                "tenant_database_prefix must be 1 to 32 characters of [A-Za-z0-9_] (database names end at 64)",
            ));
        }
        Ok(())
    }
}

impl Default for MysqlConfig {
    /// The defaults against a local server, as `scripts/lib/services.sh` starts it.
    fn default() -> Self {
        Self::new("mysql://palaver:palaver@127.0.0.1:3306/palaver_control")
    }
}

impl fmt::Debug for MysqlConfig {
    /// Everything but the password, so configs can be logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlConfig")
            .field("url", &redact_password(&self.url))
            .field("max_connections_per_tenant", &self.max_connections_per_tenant)
            .field("control_max_connections", &self.control_max_connections)
            .field("max_tenant_pools", &self.max_tenant_pools)
            .field("idle_pool_timeout", &self.idle_pool_timeout)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("batch_max_rows", &self.batch_max_rows)
            .field("batch_max_delay", &self.batch_max_delay)
            .field("tenant_database_prefix", &self.tenant_database_prefix)
            .finish()
    }
}

/// A configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid MySQL store setting: {0}")]
    Invalid(&'static str),
    #[error("invalid MySQL URL: {0}")]
    Url(String),
}

/// True for names made of `[A-Za-z0-9_]` only: safe to splice, quoted, into DDL.
pub(crate) fn is_identifier(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// True for 1 to 32 characters of `[a-z0-9_-]`, the tenant codes the registry accepts. With the prefix checked by
/// [`MysqlConfig::validate`], the database name then needs no escaping beyond backquotes.
pub(crate) fn valid_code(code: &str) -> bool {
    (1..=MAX_CODE).contains(&code.len()) && code.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// The URL with the password between `user:` and `@` replaced, for logs.
fn redact_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let rest = &url[scheme_end..];
    let Some(at) = rest.find('@') else { return url.to_owned() };
    match rest[..at].find(':') {
        Some(colon) => format!("{}{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_do_not() {
        assert_eq!(MysqlConfig::default().validate(), Ok(()));
        let bad = MysqlConfig { batch_max_rows: 0, ..MysqlConfig::default() };
        assert!(bad.validate().is_err());
        let bad = MysqlConfig { tenant_database_prefix: "bad-prefix".into(), ..MysqlConfig::default() };
        assert!(bad.validate().is_err());
        let bad = MysqlConfig { tenant_database_prefix: "p".repeat(33), ..MysqlConfig::default() };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn codes_and_identifiers() {
        assert!(valid_code("acme") && valid_code("other-1") && valid_code("a_b"));
        assert!(!valid_code("") && !valid_code("Acme") && !valid_code("a`b") && !valid_code(&"a".repeat(33)));
        assert!(is_identifier("palaver_control") && !is_identifier("x;y") && !is_identifier(""));
    }

    #[test]
    fn debug_hides_the_password() {
        let shown = format!("{:?}", MysqlConfig::new("mysql://u:secret@h:3306/db"));
        assert!(shown.contains("mysql://u:***@h:3306/db") && !shown.contains("secret"));
        assert_eq!(redact_password("mysql://h/db"), "mysql://h/db");
    }
}
