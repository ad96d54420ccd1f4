//! The registry's admin views as the admin API's typed bodies (`palaver_api::bodies::admin`): the gateway knows
//! only those, so that the OpenAPI document can describe them without the plugin runtime. Enumerations keep
//! their serde names, the ones the runtime's own listing uses.

use palaver_api::bodies::admin as a;
use palaver_plugin_runtime::{HookCounts, LoadOutcome, LoadReport, PluginInfo, PluginState};
use serde::Serialize;

/// A value's serde name (`"before-publish"`, `"warm"`, …).
pub(crate) fn word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn counts(c: HookCounts) -> a::HookCounts {
    a::HookCounts {
        calls: c.calls,
        faults: c.faults,
        skipped: c.skipped,
        faults_by_kind: c.faults_by_kind.into_iter().map(|(k, n)| (k.as_str().to_owned(), n)).collect(),
    }
}

/// One plugin as `GET /v1/admin/plugins` shows it.
pub(crate) fn plugin(p: PluginInfo) -> a::PluginInfo {
    a::PluginInfo {
        name: p.name,
        version: p.version,
        hash: p.hash,
        state: match p.state {
            PluginState::Active => a::PluginState::Active,
            PluginState::BreakerOpen => a::PluginState::BreakerOpen,
            PluginState::Failed => a::PluginState::Failed,
        },
        breaker: p.breaker.to_owned(),
        breakers_open: p.breakers_open as u64,
        last_error: p.last_error,
        previous_version: p.previous_version,
        last_fault: p.last_fault,
        managed: p.managed,
        canary_version: p.canary_version,
        canary_tenants: p.canary_tenants,
        world: p.world.as_ref().map(word),
        hooks: p.hooks.iter().map(|h| h.as_str().to_owned()).collect(),
        grants: p.grants.iter().map(|g| g.as_str().to_owned()).collect(),
        instance_mode: p.instance_mode.as_ref().map(word),
        priority: p.priority,
        enabled_by_default: p.enabled_by_default,
        loaded_at_ms: p.loaded_at_ms,
        source: p.source,
        calls: p.calls,
        faults: p.faults,
        before_publish: counts(p.before_publish),
        on_command: counts(p.on_command),
        before_push: counts(p.before_push),
        scan_file: counts(p.scan_file),
        loads: p.loads,
        load_refusals: p.load_refusals,
        instantiations: p.instantiations,
    }
}

/// What a rescan or reload did.
pub(crate) fn load_report(report: &LoadReport) -> a::LoadReport {
    let loaded = report
        .loaded
        .iter()
        .map(|o| match o {
            LoadOutcome::Loaded { name, version, hash, replaced } => a::PluginLoad {
                name: name.clone(),
                version: version.clone(),
                hash: Some(hash.clone()),
                replaced: replaced.clone(),
                changed: true,
            },
            LoadOutcome::Unchanged { name, version } => a::PluginLoad {
                name: name.clone(),
                version: version.clone(),
                hash: None,
                replaced: None,
                changed: false,
            },
        })
        .collect();
    let refused = report
        .refused
        .iter()
        .map(|(p, why)| a::LoadRefusal { manifest: p.display().to_string(), reason: why.clone() })
        .collect();
    a::LoadReport { loaded, refused }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_runtime::{FailurePolicy, Hook};

    #[test]
    fn names_are_the_serde_names() {
        assert_eq!(word(&Hook::BeforePublish), "before-publish");
        assert_eq!(word(&FailurePolicy::Closed), "closed");
    }

    #[test]
    fn a_report_keeps_every_outcome() {
        let report = LoadReport {
            loaded: vec![
                LoadOutcome::Loaded {
                    name: "m".into(),
                    version: "2".into(),
                    hash: "h".into(),
                    replaced: Some("1".into()),
                },
                LoadOutcome::Unchanged { name: "f".into(), version: "1".into() },
            ],
            refused: vec![("x/plugin.toml".into(), "bad".into())],
        };
        let r = load_report(&report);
        assert_eq!((r.loaded[0].changed, r.loaded[0].replaced.as_deref()), (true, Some("1")));
        assert_eq!((r.loaded[1].changed, r.loaded[1].hash.as_deref()), (false, None));
        assert_eq!((r.refused[0].manifest.as_str(), r.refused[0].reason.as_str()), ("x/plugin.toml", "bad"));
    }
}
