//! Cluster rollouts of plugins, this node's side: an upload is checked (signature, the load gate), stored once
//! for every node, and rolled out; a rollout change is stored; and every second each node applies the rollouts
//! stored since the last one it applied and writes back what it runs, which the admin API shows per node.
//!
//! Order of an upload: check the signature, run the gate here, store the release, store the rollout, apply it
//! here. A release the gate refuses is never stored, so no node is ever asked to run it; a node whose own gate
//! refuses a stored release (another host version, say) keeps what it runs and reports why.

use palaver_api::Reason;
use palaver_api::bodies::admin as a;
use palaver_core::ports::{Canary, NodeReport, PluginRelease, PluginReleaseStore, PluginRollout};
use palaver_core::{StoreError, TenantId, now_millis};
use palaver_gateway::{AdminRefusal, PluginUpload};
use palaver_plugin_runtime::{Manifest, PluginRegistry, ReleaseRef, RolloutTarget};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A node rewrites an unchanged report this often, so that a node that stopped is seen by its report's age.
const REPORT_EVERY: Duration = Duration::from_secs(30);

/// The ed25519 public key in `b64` (32 bytes), if it is one.
pub(crate) fn public_key(b64: &str) -> Option<[u8; 32]> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?.try_into().ok()
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// What an upload's signature covers: both halves of the release, so that a signed component cannot be paired
/// with a manifest that grants it more.
pub(crate) fn signed_message(manifest: &str, component: &[u8]) -> String {
    format!("palaver-plugin-release:1\n{}\n{}\n", sha256_hex(manifest.as_bytes()), sha256_hex(component))
}

/// This node's side of plugin rollouts.
pub(crate) struct Rollouts {
    registry: Arc<PluginRegistry>,
    store: Arc<dyn PluginReleaseStore>,
    node: String,
    trusted: BTreeMap<String, [u8; 32]>,
    max_upload: usize,
    /// The current rollout of each plugin, as far as this node has applied them, and the highest revision seen.
    state: tokio::sync::Mutex<Applied>,
    /// What this node last reported per plugin, and when.
    reported: Mutex<(BTreeMap<String, NodeReport>, Option<Instant>)>,
}

#[derive(Default)]
struct Applied {
    revision: i64,
    rollouts: BTreeMap<String, PluginRollout>,
}

impl Rollouts {
    pub(crate) fn new(
        registry: Arc<PluginRegistry>,
        store: Arc<dyn PluginReleaseStore>,
        node: &str,
        trusted: &BTreeMap<String, String>,
        max_upload: usize,
    ) -> Rollouts {
        let trusted = trusted.iter().filter_map(|(id, k)| Some((id.clone(), public_key(k)?))).collect();
        let node = if node.is_empty() { "local".to_owned() } else { node.to_owned() };
        Rollouts {
            registry,
            store,
            node,
            trusted,
            max_upload,
            state: tokio::sync::Mutex::new(Applied::default()),
            reported: Mutex::new((BTreeMap::new(), None)),
        }
    }

    pub(crate) fn max_upload(&self) -> usize {
        self.max_upload
    }

    /// Applies every rollout stored since the last one applied, in revision order. A store fault is returned
    /// (the next tick retries from the same revision); a release this node's gate refuses is recorded on the
    /// plugin (`last_error`, reported) and the revision counts as applied, so it is not compiled again every
    /// second: the next rollout of that plugin tries again.
    pub(crate) async fn catch_up(&self) -> Result<(), String> {
        const PAGE: usize = 100;
        let mut state = self.state.lock().await;
        loop {
            let page =
                self.store.plugin_rollouts_since(state.revision, PAGE).await.map_err(|e| format!("rollouts: {e}"))?;
            for rollout in &page {
                self.apply(rollout).await?;
                state.revision = state.revision.max(rollout.revision);
                state.rollouts.insert(rollout.plugin.clone(), rollout.clone());
            }
            if page.len() < PAGE {
                return Ok(());
            }
        }
    }

    async fn apply(&self, rollout: &PluginRollout) -> Result<(), String> {
        let fetch = |version: String| async move {
            match self.store.plugin_release(&rollout.plugin, &version).await {
                Ok(Some(r)) => Ok(Some(r)),
                Ok(None) => {
                    tracing::warn!(plugin = %rollout.plugin, %version, "a rollout names a release that is not stored");
                    Ok(None)
                }
                Err(e) => Err(format!("release {}@{version}: {e}", rollout.plugin)),
            }
        };
        let live = match &rollout.live {
            Some(v) => fetch(v.clone()).await?,
            None => None,
        };
        let canary = match &rollout.canary {
            Some(c) => {
                fetch(c.version.clone()).await?.map(|r| (r, c.tenants.iter().copied().collect::<BTreeSet<TenantId>>()))
            }
            None => None,
        };
        if rollout.live.is_some() && live.is_none() {
            return Ok(());
        }
        // A node with trusted keys runs only releases the uploading node checked against one of them.
        if !self.trusted.is_empty() {
            for r in live.iter().chain(canary.as_ref().map(|(r, _)| r)) {
                if !r.signed_by.as_ref().is_some_and(|k| self.trusted.contains_key(k)) {
                    let why = format!("release {}@{} is not signed by a key this node trusts", r.name, r.version);
                    tracing::warn!(plugin = %r.name, version = %r.version, "{why}; the node keeps what it runs");
                    self.registry.refuse_release(&rollout.plugin, &why);
                    return Ok(());
                }
            }
        }
        let (registry, plugin) = (self.registry.clone(), rollout.plugin.clone());
        // Compiling a new version takes milliseconds to seconds: keep it off the async workers.
        let applied = tokio::task::spawn_blocking(move || -> Result<_, String> {
            // A manifest this host cannot read (a newer key, say) is a refusal like any other: recorded, reported.
            let parse = |r: &PluginRelease| {
                Manifest::parse(&r.manifest).map_err(|e| {
                    let why = format!("release {}@{}: {e}", r.name, r.version);
                    registry.refuse_release(&plugin, &why);
                    why
                })
            };
            let live_m = live.as_ref().map(parse).transpose()?;
            let canary_m = canary.as_ref().map(|(r, _)| parse(r)).transpose()?;
            let live_ref =
                live.as_ref().zip(live_m.as_ref()).map(|(r, m)| ReleaseRef { manifest: m, component: &r.component });
            let canary_ref = match (&canary, &canary_m) {
                (Some((r, tenants)), Some(m)) => {
                    Some((ReleaseRef { manifest: m, component: &r.component }, tenants.clone()))
                }
                _ => None,
            };
            let target = RolloutTarget { live: live_ref, canary: canary_ref };
            registry.apply_rollout(&plugin, &target).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?;
        if let Err(e) = applied {
            tracing::warn!(plugin = %rollout.plugin, revision = rollout.revision, error = %e, "rollout not applied on this node; it keeps what it runs");
        }
        Ok(())
    }

    /// Writes what this node runs of each plugin where it changed, and everything every [`REPORT_EVERY`].
    pub(crate) async fn report(&self) {
        let revisions: BTreeMap<String, i64> =
            self.state.lock().await.rollouts.iter().map(|(p, r)| (p.clone(), r.revision)).collect();
        let now = now_millis();
        let due = {
            let reported = self.reported.lock();
            reported.1.is_none_or(|at| at.elapsed() >= REPORT_EVERY)
        };
        let mut wrote_all = true;
        for info in self.registry.list() {
            let report = NodeReport {
                node: self.node.clone(),
                plugin: info.name.clone(),
                live: info.version.clone(),
                canary: info.canary_version.clone(),
                error: info.last_error.clone(),
                revision: revisions.get(&info.name).copied().unwrap_or(0),
                at: now,
            };
            let unchanged =
                self.reported.lock().0.get(&info.name).is_some_and(|r| NodeReport { at: now, ..r.clone() } == report);
            if unchanged && !due {
                continue;
            }
            match self.store.put_node_report(&report).await {
                Ok(()) => {
                    self.reported.lock().0.insert(info.name, report);
                }
                Err(e) => {
                    wrote_all = false;
                    tracing::warn!(plugin = %info.name, error = %e, "plugin status not reported; retrying");
                }
            }
        }
        if due && wrote_all {
            self.reported.lock().1 = Some(Instant::now());
        }
    }

    /// The rollouts this node has applied and every node's latest report, for `GET /v1/admin/plugins`.
    pub(crate) async fn cluster(&self) -> (Vec<a::PluginRolloutInfo>, Vec<a::NodePluginStatus>) {
        let rollouts = self.state.lock().await.rollouts.values().map(rollout_info).collect();
        let nodes = match self.store.node_reports().await {
            Ok(reports) => reports
                .into_iter()
                .map(|r| a::NodePluginStatus {
                    node: r.node,
                    plugin: r.plugin,
                    live: r.live,
                    canary: r.canary,
                    error: r.error,
                    revision: r.revision,
                    at_ms: r.at,
                })
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "node plugin reports unavailable");
                Vec::new()
            }
        };
        (rollouts, nodes)
    }

    /// `POST /v1/admin/plugins`.
    pub(crate) async fn upload(&self, u: PluginUpload) -> Result<a::PluginReleased, AdminRefusal> {
        let refuse = AdminRefusal::new;
        let manifest = Manifest::parse(&u.manifest).map_err(|e| refuse(Reason::BadUpload, e.to_string()))?;
        let signed_by = self.check_signature(&u)?;
        let (registry, m, component) = (self.registry.clone(), manifest.clone(), u.component.clone());
        let sha256 = tokio::task::spawn_blocking(move || registry.check_release(&m, &component))
            .await
            .map_err(|e| refuse(Reason::Internal, e.to_string()))?
            .map_err(|e| refuse(Reason::ReleaseRefused, e.to_string()))?;
        let release = PluginRelease {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            sha256: sha256.clone(),
            manifest: u.manifest,
            component: u.component,
            signed_by: signed_by.clone(),
            uploaded_at: now_millis(),
        };
        let size = release.component.len() as u64;
        let conflict = |what: &str| {
            refuse(
                Reason::ReleaseConflict,
                format!(
                    "{}@{} was uploaded before with another {what}; give the new one a new version",
                    release.name, release.version
                ),
            )
        };
        let stored = self.store.put_plugin_release(&release).await.map_err(|e| match e {
            StoreError::Conflict(_) => conflict("component"),
            e => unavailable(e),
        })?;
        // The same version again must be the same release: a manifest changed under an old version would be
        // gated here but never run (every node runs the stored one).
        let mut signed_by = signed_by;
        if !stored {
            match self.store.plugin_release(&release.name, &release.version).await.map_err(unavailable)? {
                Some(earlier) if earlier.manifest != release.manifest => return Err(conflict("manifest")),
                Some(earlier) => signed_by = earlier.signed_by,
                None => {}
            }
        }
        // Built on the latest stored rollouts, not on what this node applied a moment ago.
        if let Err(e) = self.catch_up().await {
            return Err(refuse(Reason::Unavailable, format!("the plugin store is unavailable: {e}")));
        }
        let current = self.state.lock().await.rollouts.get(&manifest.name).cloned();
        let rollout = match u.canary {
            // Its tenants run it first; everyone else keeps what runs now.
            Some(tenants) => PluginRollout {
                plugin: manifest.name.clone(),
                live: current.and_then(|c| c.live),
                canary: Some(Canary { version: manifest.version.clone(), tenants: tenant_list(&tenants)? }),
                revision: 0,
                updated_at: 0,
            },
            None => PluginRollout {
                plugin: manifest.name.clone(),
                live: Some(manifest.version.clone()),
                canary: None,
                revision: 0,
                updated_at: 0,
            },
        };
        let rollout = self.put(rollout).await?;
        tracing::info!(plugin = %release.name, version = %release.version, %sha256, stored, signed_by = ?signed_by, "plugin release uploaded");
        Ok(a::PluginReleased { name: release.name, version: release.version, sha256, size, signed_by, stored, rollout })
    }

    /// The key that signed the upload; with trusted keys configured a signature by one of them is required.
    fn check_signature(&self, u: &PluginUpload) -> Result<Option<String>, AdminRefusal> {
        let refuse = |m: &str| AdminRefusal::new(Reason::SignatureInvalid, m);
        let Some(sig) = &u.signature else {
            return if self.trusted.is_empty() {
                Ok(None)
            } else {
                Err(refuse("this cluster takes only signed releases: add `signature` (plugins.trusted_keys)"))
            };
        };
        let message = signed_message(&u.manifest, &u.component);
        let by = self.trusted.iter().find(|(_, key)| {
            ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &key[..])
                .verify(message.as_bytes(), sig)
                .is_ok()
        });
        match by {
            Some((id, _)) => Ok(Some(id.clone())),
            None => Err(refuse("the signature is not by a trusted key over this manifest and component")),
        }
    }

    /// `PUT /v1/admin/plugins/{name}/rollout`.
    pub(crate) async fn set_rollout(
        &self,
        name: &str,
        change: &a::RolloutChange,
    ) -> Result<a::PluginRolloutInfo, AdminRefusal> {
        let canary = match &change.canary {
            None => None,
            Some(c) => {
                let (Some(version), Some(tenants)) = (&c.version, &c.tenants) else {
                    return Err(AdminRefusal::new(Reason::BadArgument, "a canary needs `version` and `tenants`"));
                };
                Some(Canary { version: version.clone(), tenants: tenant_list(tenants)? })
            }
        };
        if change.live.is_none() && canary.is_none() {
            // Handing a plugin back to the directories is for a plugin a rollout manages.
            let known = self.state.lock().await.rollouts.contains_key(name);
            let uploaded = !self.store.plugin_releases(name).await.map_err(unavailable)?.is_empty();
            if !known && !uploaded {
                return Err(AdminRefusal::new(Reason::ReleaseNotFound, format!("no release of {name:?} was uploaded")));
            }
        }
        for version in change.live.iter().chain(canary.as_ref().map(|c| &c.version)) {
            match self.store.plugin_release(name, version).await {
                Ok(Some(r))
                    if !self.trusted.is_empty()
                        && !r.signed_by.as_ref().is_some_and(|k| self.trusted.contains_key(k)) =>
                {
                    return Err(AdminRefusal::new(
                        Reason::SignatureInvalid,
                        format!("{name}@{version} is not signed by a trusted key (plugins.trusted_keys)"),
                    ));
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    return Err(AdminRefusal::new(
                        Reason::ReleaseNotFound,
                        format!("{name}@{version} was never uploaded"),
                    ));
                }
                Err(e) => return Err(unavailable(e)),
            }
        }
        let rollout =
            PluginRollout { plugin: name.to_owned(), live: change.live.clone(), canary, revision: 0, updated_at: 0 };
        self.put(rollout).await
    }

    /// A rollback of a plugin a rollout manages: the rollout's live version becomes the one before it (the version
    /// this node ran before, else the release uploaded before it), for every node, and stays after restarts.
    /// `None`: the plugin is the directory's, rolled back on this node alone.
    pub(crate) async fn rollback(&self, name: &str) -> Option<Result<a::RolledBack, String>> {
        // From the latest stored rollout, not from what this node applied a moment ago.
        if let Err(e) = self.catch_up().await {
            tracing::warn!(error = %e, "rolling back from the rollouts this node has applied");
        }
        let current = self.state.lock().await.rollouts.get(name).cloned()?;
        let from = current.live.clone()?;
        let releases = match self.store.plugin_releases(name).await {
            Ok(list) => list,
            Err(e) => return Some(Err(format!("the plugin store is unavailable, nothing changed: {e}"))),
        };
        // Only an uploaded version can run on every node (a directory's copy may exist on this node alone).
        let stored = |v: &String| *v != from && releases.iter().any(|r| r.version == *v);
        let previous = self.registry.info(name).and_then(|i| i.previous_version).filter(stored);
        // Else, newest first, the first release uploaded before `from`.
        let to =
            previous.or_else(|| releases.iter().skip_while(|r| r.version != from).nth(1).map(|r| r.version.clone()));
        let Some(to) = to else {
            return Some(Err(format!("plugin {name:?} has no release before {from} to roll back to")));
        };
        let rollout =
            PluginRollout { plugin: name.to_owned(), live: Some(to.clone()), canary: None, revision: 0, updated_at: 0 };
        Some(self.put(rollout).await.map(|_| a::RolledBack { name: name.to_owned(), from, to }).map_err(|e| e.message))
    }

    /// Stores a rollout, then applies it here at once (other nodes within a second).
    async fn put(&self, rollout: PluginRollout) -> Result<a::PluginRolloutInfo, AdminRefusal> {
        let revision = self.store.put_plugin_rollout(&rollout, now_millis()).await.map_err(unavailable)?;
        if let Err(e) = self.catch_up().await {
            tracing::warn!(error = %e, "the stored rollout is not applied here yet; the next tick retries");
        }
        self.report().await;
        let applied = self.state.lock().await.rollouts.get(&rollout.plugin).cloned();
        Ok(rollout_info(&applied.unwrap_or(PluginRollout { revision, updated_at: now_millis(), ..rollout })))
    }
}

fn tenant_list(ids: &[u64]) -> Result<Vec<TenantId>, AdminRefusal> {
    let set: BTreeSet<u64> = ids.iter().copied().collect();
    if set.is_empty() {
        return Err(AdminRefusal::new(Reason::BadArgument, "a canary names at least one tenant"));
    }
    Ok(set.into_iter().map(TenantId).collect())
}

fn unavailable(e: StoreError) -> AdminRefusal {
    AdminRefusal::new(Reason::Unavailable, format!("the plugin store is unavailable, nothing changed: {e}"))
}

fn rollout_info(r: &PluginRollout) -> a::PluginRolloutInfo {
    a::PluginRolloutInfo {
        plugin: r.plugin.clone(),
        live: r.live.clone(),
        canary: r
            .canary
            .as_ref()
            .map(|c| a::CanaryInfo { version: c.version.clone(), tenants: c.tenants.iter().map(|t| t.0).collect() }),
        revision: r.revision,
        updated_at_ms: r.updated_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_message_covers_both_halves() {
        let m = signed_message("name = \"a\"", b"\0asm");
        assert!(m.starts_with("palaver-plugin-release:1\n"));
        assert_ne!(m, signed_message("name = \"b\"", b"\0asm"), "another manifest");
        assert_ne!(m, signed_message("name = \"a\"", b"\0asn"), "another component");
        assert_eq!(m.lines().nth(1).map(str::len), Some(64));
    }

    #[test]
    fn public_keys_are_32_bytes_of_base64() {
        assert!(public_key("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").is_some());
        assert!(public_key("AAAA").is_none());
        assert!(public_key("not base64!").is_none());
    }
}
