//! The plugin release tables' shared parts: the rows both adapters select from `plugin_releases` and
//! `plugin_node_reports` and how they become domain values, the inserts both write (each adapter adds its own
//! upsert clause) with their binders, and what a release insert that a stored row kept out means. The rollouts'
//! row is [`RolloutColumns`](crate::columns::RolloutColumns).

use palaver_core::ports::{NodeReport, PluginRelease, ReleaseInfo};
use palaver_core::{StoreError, StoreResult, UnixMillis};

/// The stored sha256 of a release; binds its name and version.
pub const STORED_SHA256: &str = "SELECT sha256 FROM plugin_releases WHERE name = ? AND version = ?";

/// A release with its bytes; binds its name and version. Selects a [`ReleaseRow`].
pub const SELECT_RELEASE: &str = "SELECT sha256, manifest, component, signed_by, uploaded_at FROM plugin_releases \
                                  WHERE name = ? AND version = ?";

/// The rollouts changed after a revision, in revision order; binds the revision and a limit. Selects
/// [`RolloutColumns`](crate::columns::RolloutColumns).
pub const ROLLOUTS_SINCE: &str = "SELECT plugin, live, canary_version, canary_tenants, revision, updated_at \
                                  FROM plugin_rollouts WHERE revision > ? ORDER BY revision LIMIT ?";

/// Every node's reports, by plugin then node. Selects a [`ReportRow`].
pub const NODE_REPORTS: &str =
    "SELECT node, plugin, live, canary, error, revision, at FROM plugin_node_reports ORDER BY plugin, node";

/// The insert of a release, bound by [`bind_release!`](crate::bind_release), as a literal so that `concat!` can add
/// an adapter's conflict clause.
#[macro_export]
macro_rules! insert_release {
    () => {
        "INSERT INTO plugin_releases (name, version, sha256, manifest, component, signed_by, uploaded_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)"
    };
}

/// Binds a [`PluginRelease`]'s columns in the order of [`insert_release!`](crate::insert_release).
#[macro_export]
macro_rules! bind_release {
    ($query:expr, $release:expr) => {{
        let r = $release;
        $query
            .bind(&r.name)
            .bind(&r.version)
            .bind(&r.sha256)
            .bind(&r.manifest)
            .bind(&r.component)
            .bind(&r.signed_by)
            .bind(r.uploaded_at)
    }};
}

/// The insert of a rollout, bound by [`bind_rollout!`](crate::bind_rollout), as a literal so that `concat!` can add
/// an adapter's upsert clause.
#[macro_export]
macro_rules! insert_rollout {
    () => {
        "INSERT INTO plugin_rollouts (plugin, live, canary_version, canary_tenants, revision, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?)"
    };
}

/// Binds a [`PluginRollout`](palaver_core::ports::PluginRollout)'s columns under its new revision and time, in the
/// order of [`insert_rollout!`](crate::insert_rollout).
#[macro_export]
macro_rules! bind_rollout {
    ($query:expr, $rollout:expr, $revision:expr, $now:expr) => {{
        let r = $rollout;
        let (canary_version, canary_tenants) = $crate::columns::canary_cols(r.canary.as_ref());
        $query.bind(&r.plugin).bind(&r.live).bind(canary_version).bind(canary_tenants).bind($revision).bind($now)
    }};
}

/// The insert of a node's report, bound by [`bind_node_report!`](crate::bind_node_report), as a literal so that
/// `concat!` can add an adapter's upsert clause.
#[macro_export]
macro_rules! insert_node_report {
    () => {
        "INSERT INTO plugin_node_reports (node, plugin, live, canary, error, revision, at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    };
}

/// Binds a [`NodeReport`]'s columns in the order of [`insert_node_report!`](crate::insert_node_report).
#[macro_export]
macro_rules! bind_node_report {
    ($query:expr, $report:expr) => {{
        let r = $report;
        $query.bind(&r.node).bind(&r.plugin).bind(&r.live).bind(&r.canary).bind(&r.error).bind(r.revision).bind(r.at)
    }};
}

/// A release as [`SELECT_RELEASE`] selects it: `sha256, manifest, component, signed_by, uploaded_at`.
pub type ReleaseRow = (String, String, Vec<u8>, Option<String>, UnixMillis);

/// The release `name` `version` a row holds.
pub fn release_of(name: &str, version: &str, row: ReleaseRow) -> PluginRelease {
    let (sha256, manifest, component, signed_by, uploaded_at) = row;
    PluginRelease {
        name: name.to_owned(),
        version: version.to_owned(),
        sha256,
        manifest,
        component,
        signed_by,
        uploaded_at,
    }
}

/// A `plugin_releases` row without the bytes: `name, version, sha256, size, signed_by, uploaded_at`, the size
/// being the component's length in bytes.
pub type InfoRow = (String, String, String, i64, Option<String>, UnixMillis);

/// The release a row without its bytes describes.
pub fn info_of((name, version, sha256, size, signed_by, uploaded_at): InfoRow) -> ReleaseInfo {
    // A BLOB's length counts its bytes and is never negative.
    ReleaseInfo { name, version, sha256, size: size.unsigned_abs(), signed_by, uploaded_at }
}

/// A `plugin_node_reports` row as [`NODE_REPORTS`] selects it: `node, plugin, live, canary, error, revision, at`.
pub type ReportRow = (String, String, Option<String>, Option<String>, Option<String>, i64, UnixMillis);

/// The report a row holds.
pub fn report_of((node, plugin, live, canary, error, revision, at): ReportRow) -> NodeReport {
    NodeReport { node, plugin, live, canary, error, revision, at }
}

/// What an insert of `release` that a stored row kept out means, from the stored row's sha256 (releases are never
/// updated or deleted, so that row is as it was stored): the same bytes again are no change (`false`), other
/// bytes under the same version are a conflict, and no row at all is the database contradicting itself.
pub fn already_released(release: &PluginRelease, stored_sha256: Option<String>) -> StoreResult<bool> {
    match stored_sha256 {
        Some(sha256) if sha256 == release.sha256 => Ok(false),
        Some(sha256) => Err(StoreError::Conflict(format!(
            "plugin {} {} is already released with sha256 {sha256}",
            release.name, release.version
        ))),
        None => Err(StoreError::Internal(format!(
            "plugin_releases refused {} {} but holds no such row",
            release.name, release.version
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_out_release_is_the_same_one_or_a_conflict() {
        let release = release_of("p", "1.0.0", ("ab".into(), String::new(), vec![1], None, 5));
        assert!(!already_released(&release, Some("ab".into())).unwrap());
        assert!(matches!(already_released(&release, Some("cd".into())), Err(StoreError::Conflict(_))));
        assert!(matches!(already_released(&release, None), Err(StoreError::Internal(_))));
        assert_eq!(info_of(("p".into(), "1".into(), "ab".into(), 3, None, 5)).size, 3);
    }
}
