//! Contract cases for the tenant settings store: a document reads back as written (nested values, unicode,
//! numbers), a write replaces it whole, a removal leaves nothing, and tenants and names are isolated.
//! [`crate::settings_contract_tests!`] runs them against any `SettingsStore`.

use crate::Fixture;
use palaver_core::ports::SettingsStore;
use serde_json::json;

/// A document round trips exactly; a second write replaces it whole (no merge); `None` removes it and
/// removing what is not there is no error.
pub async fn settings_round_trip_and_replace<S: SettingsStore>(f: Fixture<S>) {
    let s = &f.store;
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), None);
    let first = json!({ "enabled": true, "webhook": { "url": "https://hooks.example/ü", "secret": "s" },
        "n": 12345678901234_i64, "list": [1, "two", null] });
    s.put_setting(f.tenant, "push", Some(&first)).await.unwrap();
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), Some(first));
    let second = json!({ "preview": false });
    s.put_setting(f.tenant, "push", Some(&second)).await.unwrap();
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), Some(second));
    s.put_setting(f.tenant, "push", None).await.unwrap();
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), None);
    s.put_setting(f.tenant, "push", None).await.unwrap();
}

/// One tenant's document is invisible to another, and one name's to another name.
pub async fn settings_tenants_and_names_are_isolated<S: SettingsStore>(f: Fixture<S>) {
    let s = &f.store;
    s.put_setting(f.tenant, "push", Some(&json!({ "who": "mine" }))).await.unwrap();
    s.put_setting(f.other_tenant, "push", Some(&json!({ "who": "theirs" }))).await.unwrap();
    s.put_setting(f.tenant, "files", Some(&json!({ "who": "files" }))).await.unwrap();
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), Some(json!({ "who": "mine" })));
    assert_eq!(s.get_setting(f.other_tenant, "push").await.unwrap(), Some(json!({ "who": "theirs" })));
    assert_eq!(s.get_setting(f.other_tenant, "files").await.unwrap(), None);
    s.put_setting(f.other_tenant, "push", None).await.unwrap();
    assert_eq!(s.get_setting(f.tenant, "push").await.unwrap(), Some(json!({ "who": "mine" })));
}
