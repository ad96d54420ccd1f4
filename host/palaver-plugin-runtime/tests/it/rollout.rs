//! Cluster rollouts as one registry applies them: a canary's tenants run its version while the rest run the live
//! one, a refused version changes nothing, versions already held are reused without the gate, and while a rollout
//! manages a plugin its directory cannot replace it (a rescan skips it, a file load is refused); handed back, the
//! directory's version loads again.

use crate::common::{artifact, env, rejected};
use palaver_core::TenantId;
use palaver_plugin_runtime::{LoadOutcome, RegistryError, ReleaseRef, RolloutTarget};
use serde_json::Value;
use std::collections::BTreeSet;

#[tokio::test]
async fn a_canary_runs_for_its_tenants_and_a_managed_plugin_ignores_its_directory() {
    let e = env();
    // The directory holds version 2.
    e.copy("ruled-2.0.0");
    e.registry.load_dir(e.dir.path());
    let (m1, c1) = artifact("ruled-1.0.0");
    let (m2, c2) = artifact("ruled-2.0.0");
    let live = |m, c| Some(ReleaseRef { manifest: m, component: c });
    let canary_7: BTreeSet<TenantId> = [TenantId(7)].into();

    let applied = e
        .registry
        .apply_rollout(
            "ruled",
            &RolloutTarget {
                live: live(&m1, &c1),
                canary: Some((ReleaseRef { manifest: &m2, component: &c2 }, canary_7.clone())),
            },
        )
        .unwrap();
    assert_eq!(
        (applied.live.as_deref(), applied.canary.as_deref(), applied.changed),
        (Some("1.0.0"), Some("2.0.0"), true)
    );
    let judge = |t: u64| e.publish_as(t, Value::String("alpha beta".into()));
    assert_eq!(rejected(&judge(1).await).1, "v1: alpha", "everyone else runs live");
    assert_eq!(rejected(&judge(7).await).1, "v2: beta", "the canary's tenant runs the canary");
    let info = e.info("ruled");
    assert_eq!((info.managed, info.canary_version.as_deref(), info.canary_tenants), (true, Some("2.0.0"), vec![7]));
    // The same rollout again changes nothing, and the held versions are reused, not gated again.
    let loads = info.loads;
    let again = e
        .registry
        .apply_rollout(
            "ruled",
            &RolloutTarget {
                live: live(&m1, &c1),
                canary: Some((ReleaseRef { manifest: &m2, component: &c2 }, canary_7)),
            },
        )
        .unwrap();
    assert!(!again.changed);
    assert_eq!(e.info("ruled").loads, loads);

    // The directory cannot take it back while the rollout manages it.
    let report = e.registry.rescan();
    assert!(report.loaded.is_empty() && report.refused.is_empty(), "{report:?}");
    assert!(matches!(e.registry.load_file(&e.dir.path().join("ruled-2.0.0.toml")), Err(RegistryError::Managed(_))));
    assert!(matches!(e.registry.rollback("ruled"), Err(RegistryError::Managed(_))));
    assert_eq!(rejected(&judge(1).await).1, "v1: alpha");

    // A version the gate refuses (its fixture expects another reason) changes nothing.
    let mut broken = m2.clone();
    broken.version = "3.0.0".into();
    broken.fixtures[0].expect =
        serde_json::from_value(serde_json::json!({ "verdict": "reject", "code": 422, "reason": "v9" })).unwrap();
    let refused = e.registry.apply_rollout("ruled", &RolloutTarget { live: live(&broken, &c2), canary: None });
    assert!(refused.is_err());
    assert_eq!(rejected(&judge(7).await).1, "v2: beta", "the canary stays");
    assert!(e.info("ruled").last_error.is_some_and(|why| why.contains("fixture")));

    // Promoted, then handed back: the directory's version loads again at the next scan.
    let promoted = e.registry.apply_rollout("ruled", &RolloutTarget { live: live(&m2, &c2), canary: None }).unwrap();
    assert_eq!((promoted.live.as_deref(), promoted.canary), (Some("2.0.0"), None));
    assert_eq!(rejected(&judge(1).await).1, "v2: beta");
    e.registry.apply_rollout("ruled", &RolloutTarget { live: None, canary: None }).unwrap();
    assert!(!e.info("ruled").managed);
    let report = e.registry.rescan();
    assert!(
        matches!(report.loaded.as_slice(), [LoadOutcome::Unchanged { .. } | LoadOutcome::Loaded { .. }]),
        "{report:?}"
    );
}
