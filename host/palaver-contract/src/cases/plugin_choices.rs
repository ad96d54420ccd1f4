//! Contract cases for the plugin choice store (the tenants' plugin choices, versioned so that nodes catch up): puts
//! get rising versions, a catch-up read lists the current choices in version order from any version on and honours
//! its limit, a put replaces the key's earlier choice, tenants and plugins are separate keys, any JSON round-trips,
//! and concurrent puts get distinct versions that a reader following along sees without a gap.
//! [`crate::plugin_choice_contract_tests!`] runs them against any `PluginChoiceStore`.
//!
//! Versions are global to a store and a store may serve several cases, so each case uses plugin names of its own
//! (a prefix), looks only at its own choices, and asserts the order of its versions, not their numbers.

use crate::Fixture;
use palaver_core::TenantId;
use palaver_core::ports::{PluginChoice, PluginChoiceStore};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The page size [`all_since`] reads with.
const PAGE: usize = 100;

/// A choice of the shape the admin API shows, told apart by `n`.
fn choice(n: i64) -> Value {
    json!({"enabled": n % 2 == 0, "settings": {"n": n}, "failure": {"publish": "open"}})
}

/// Every choice above `after`, read page by page, checking that the versions rise strictly across all pages.
async fn all_since<S: PluginChoiceStore>(s: &S, after: i64) -> Vec<PluginChoice> {
    let (mut all, mut cursor) = (Vec::new(), after);
    loop {
        let page = s.plugin_choices_since(cursor, PAGE).await.unwrap();
        assert!(page.len() <= PAGE, "since({cursor}, {PAGE}) returned {} choices", page.len());
        for c in &page {
            assert!(c.version > cursor, "since({after}): version {} after {cursor}", c.version);
            cursor = c.version;
        }
        let done = page.len() < PAGE;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// This case's choices above `after` (their plugin names start with `prefix`), in version order.
async fn mine<S: PluginChoiceStore>(s: &S, after: i64, prefix: &str) -> Vec<PluginChoice> {
    all_since(s, after).await.into_iter().filter(|c| c.plugin.starts_with(prefix)).collect()
}

fn stored(tenant: TenantId, plugin: &str, choice: Value, version: i64) -> PluginChoice {
    PluginChoice { tenant, plugin: plugin.to_owned(), choice, version }
}

/// Each put answers a version above every one before it, whichever tenant and plugin it is for, a repeated put
/// included.
pub async fn plugin_choice_puts_get_rising_versions<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    let puts = [(f.tenant, "rise.a"), (f.tenant, "rise.b"), (f.other_tenant, "rise.a"), (f.tenant, "rise.a")];
    let mut last = 0;
    for (i, (tenant, plugin)) in puts.into_iter().enumerate() {
        let version = s.put_plugin_choice(tenant, plugin, &choice(i as i64)).await.unwrap();
        assert!(version > last, "put {i} ({tenant}, {plugin}): version {version} after {last}");
        last = version;
    }
}

/// A catch-up from 0 lists every current choice, each with the version its put answered, in version order.
pub async fn plugin_choice_since_zero_lists_current_in_order<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    assert!(mine(s, 0, "zero.").await.is_empty(), "nothing of this case before its puts");
    let va = s.put_plugin_choice(f.tenant, "zero.b", &choice(1)).await.unwrap();
    let vb = s.put_plugin_choice(f.other_tenant, "zero.a", &choice(2)).await.unwrap();
    let vc = s.put_plugin_choice(f.tenant, "zero.a", &choice(3)).await.unwrap();
    let expected = vec![
        stored(f.tenant, "zero.b", choice(1), va),
        stored(f.other_tenant, "zero.a", choice(2), vb),
        stored(f.tenant, "zero.a", choice(3), vc),
    ];
    assert_eq!(mine(s, 0, "zero.").await, expected, "in version order, not by tenant or name");
}

/// A second put for the same tenant and plugin replaces the first: one row, the new choice under the new version,
/// and the old version listed nowhere.
pub async fn plugin_choice_put_replaces_the_earlier<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    let old = s.put_plugin_choice(f.tenant, "repl.p", &choice(1)).await.unwrap();
    let other = s.put_plugin_choice(f.tenant, "repl.q", &choice(2)).await.unwrap();
    let new = s.put_plugin_choice(f.tenant, "repl.p", &choice(3)).await.unwrap();
    assert!(old < other && other < new, "{old} < {other} < {new}");
    assert_eq!(
        mine(s, 0, "repl.").await,
        vec![stored(f.tenant, "repl.q", choice(2), other), stored(f.tenant, "repl.p", choice(3), new)],
        "the replaced choice moved to its new version"
    );
    assert!(all_since(s, 0).await.iter().all(|c| c.version != old), "version {old} is no longer listed");
    let after_old = mine(s, old, "repl.").await;
    assert_eq!(after_old.len(), 2, "reading on from the old version finds both current choices: {after_old:?}");
    assert_eq!(mine(s, other, "repl.").await, vec![stored(f.tenant, "repl.p", choice(3), new)]);
}

/// A catch-up from version `n` lists only the choices stored after it.
pub async fn plugin_choice_since_lists_only_later<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    let va = s.put_plugin_choice(f.tenant, "later.a", &choice(1)).await.unwrap();
    let vb = s.put_plugin_choice(f.tenant, "later.b", &choice(2)).await.unwrap();
    let vc = s.put_plugin_choice(f.other_tenant, "later.c", &choice(3)).await.unwrap();
    let b = stored(f.tenant, "later.b", choice(2), vb);
    let c = stored(f.other_tenant, "later.c", choice(3), vc);
    assert_eq!(mine(s, va, "later.").await, vec![b, c.clone()]);
    assert_eq!(mine(s, vb, "later.").await, vec![c]);
    assert_eq!(mine(s, vc, "later.").await, Vec::new());
    assert!(all_since(s, vb).await.iter().all(|x| x.version > vb), "nothing at or below {vb}");
    // A version above every stored one is no error, just nothing yet.
    assert!(s.plugin_choices_since(i64::MAX, 10).await.unwrap().is_empty());
}

/// A catch-up returns at most `limit` choices, the lowest versions first, so paging by the last version seen reads
/// everything once; a limit of 0 returns nothing.
pub async fn plugin_choice_limit_is_honoured<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    let mut versions = Vec::new();
    for i in 0..5 {
        versions.push(s.put_plugin_choice(f.tenant, &format!("limit.{i}"), &choice(i)).await.unwrap());
    }
    let before = versions[0] - 1;
    assert!(s.plugin_choices_since(before, 0).await.unwrap().is_empty(), "limit 0");
    let one = s.plugin_choices_since(before, 1).await.unwrap();
    assert_eq!(one.len(), 1, "limit 1: {one:?}");
    let two = s.plugin_choices_since(before, 2).await.unwrap();
    assert_eq!(two.len(), 2, "limit 2: {two:?}");
    // The lowest versions first: nothing above `before` is listed ahead of this case's first choice.
    assert!(before < one[0].version && one[0].version <= versions[0], "{one:?}");
    assert!(before < two[0].version && two[0].version < two[1].version && two[0].version <= versions[0], "{two:?}");
    // Paging two at a time reads all of this case's choices, once each, in order.
    let (mut seen, mut cursor) = (Vec::new(), before);
    loop {
        let page = s.plugin_choices_since(cursor, 2).await.unwrap();
        assert!(page.len() <= 2, "{page:?}");
        let Some(last) = page.last() else { break };
        cursor = last.version;
        seen.extend(page.into_iter().filter(|c| c.plugin.starts_with("limit.")).map(|c| c.version));
    }
    assert_eq!(seen, versions);
}

/// Tenant and plugin together are the key: the same plugin of another tenant, another plugin of the same tenant
/// (names differing in case or by a suffix included) are separate choices that a put of one never touches.
pub async fn plugin_choice_tenants_and_plugins_are_separate<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    let (t, o) = (f.tenant, f.other_tenant);
    let keys = [(t, "sep.p"), (o, "sep.p"), (t, "sep.q"), (t, "sep.P"), (t, "sep.p2")];
    let mut expected = Vec::new();
    for (i, (tenant, plugin)) in keys.into_iter().enumerate() {
        let version = s.put_plugin_choice(tenant, plugin, &choice(i as i64)).await.unwrap();
        expected.push(stored(tenant, plugin, choice(i as i64), version));
    }
    assert_eq!(mine(s, 0, "sep.").await, expected, "five keys, five choices");
    let version = s.put_plugin_choice(t, "sep.p", &choice(10)).await.unwrap();
    expected.remove(0);
    expected.push(stored(t, "sep.p", choice(10), version));
    assert_eq!(mine(s, 0, "sep.").await, expected, "replacing one key left the others alone");
}

/// Any JSON value comes back equal to what was put: nested objects and arrays, unicode and escapes in keys and
/// strings, the extremes of the integers, floats, nulls and empty containers.
pub async fn plugin_choice_json_round_trips<S: PluginChoiceStore>(f: Fixture<S>) {
    let s = &f.store;
    // Deep, but within what MariaDB's JSON check accepts (32 levels).
    let mut deep = json!({"bottom": [1, {"x": null}]});
    for depth in 0..16 {
        let mut level = serde_json::Map::new();
        level.insert(format!("level{depth}"), deep);
        level.insert("list".to_owned(), json!([depth, [depth]]));
        deep = Value::Object(level);
    }
    let values = [
        json!({
            "enabled": null,
            "settings": {"greeting": "héllo 世界 🎉", "nested": {"list": [1, "two", 3.5, false, null, {}, []]}},
            "failure": {"publish": "closed", "push": "open"},
        }),
        json!({"ключ": "значение", "鍵": "値", "emoji 🧪": ["\u{1F600}", "\u{0}", "tab\tnew\nline", "quote\"back\\"]}),
        json!({
            "big": i64::MAX, "small": i64::MIN, "unsigned": u64::MAX,
            "float": 0.1, "small float": 1.5e-7, "neg": -2.5,
        }),
        json!({"enabled": true, "settings": null, "failure": {}}),
        json!({"": "", "empty": {}, "none": [], "zero": 0}),
        json!([1, "not an object", null]),
        json!("just a string"),
        deep,
    ];
    let mut expected = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let plugin = format!("json.{i}");
        let version = s.put_plugin_choice(f.tenant, &plugin, value).await.unwrap();
        expected.push(stored(f.tenant, &plugin, value.clone(), version));
    }
    let got = mine(s, 0, "json.").await;
    assert_eq!(got.len(), expected.len());
    for (got, expected) in got.iter().zip(&expected) {
        assert_eq!(got, expected, "{} round-trips", expected.plugin);
    }
}

/// Many tasks putting at once get distinct versions, and each key ends with the choice of its highest version; a
/// reader catching up in small pages while they put never finds a choice below a version it has already passed,
/// so what it applied in order equals what the store holds at the end.
pub async fn plugin_choice_concurrent_puts_in_order<S: PluginChoiceStore + Clone + 'static>(f: Fixture<S>) {
    const DISTINCT: i64 = 32;
    const SAME: i64 = 8;
    let s = f.store.clone();
    let start = s.put_plugin_choice(f.tenant, "conc.start", &choice(0)).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));

    // The reader: a node catching up, four choices at a time, applying each in order.
    let reader = {
        let (s, done) = (s.clone(), done.clone());
        tokio::spawn(async move {
            let (mut applied, mut cursor) = (BTreeMap::new(), start);
            loop {
                let finished = done.load(Ordering::SeqCst);
                let page = s.plugin_choices_since(cursor, 4).await.unwrap();
                for c in &page {
                    assert!(c.version > cursor, "version {} after {cursor}", c.version);
                    cursor = c.version;
                    applied.insert((c.tenant, c.plugin.clone()), (c.choice.clone(), c.version));
                }
                if page.is_empty() {
                    if finished {
                        return applied;
                    }
                    tokio::task::yield_now().await;
                }
            }
        })
    };

    let mut writers = Vec::new();
    for i in 0..DISTINCT + SAME {
        let s = s.clone();
        let tenant = if i % 2 == 0 { f.tenant } else { f.other_tenant };
        let plugin = if i < DISTINCT { format!("conc.{i}") } else { "conc.same".to_owned() };
        writers.push(tokio::spawn(async move {
            let version = s.put_plugin_choice(tenant, &plugin, &choice(i)).await.unwrap();
            (tenant, plugin, i, version)
        }));
    }
    let mut puts = Vec::new();
    for writer in writers {
        puts.push(writer.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let applied = reader.await.unwrap();

    let versions: HashSet<i64> = puts.iter().map(|p| p.3).collect();
    assert_eq!(versions.len(), puts.len(), "every put got a version of its own: {puts:?}");
    assert!(puts.iter().all(|p| p.3 > start), "all after the first put");

    // The expected end state: each key's choice from its highest version.
    let mut expected: BTreeMap<(TenantId, String), (Value, i64)> = BTreeMap::new();
    for (tenant, plugin, n, version) in &puts {
        let entry = expected.entry((*tenant, plugin.clone())).or_insert((choice(*n), *version));
        if *version > entry.1 {
            *entry = (choice(*n), *version);
        }
    }
    let end = mine(&s, start, "conc.").await;
    let end: BTreeMap<_, _> = end.into_iter().map(|c| ((c.tenant, c.plugin), (c.choice, c.version))).collect();
    assert_eq!(end.len(), DISTINCT as usize + 2, "the distinct keys and `conc.same` of both tenants");
    assert_eq!(end, expected, "each key holds the choice of its highest version");

    let applied: BTreeMap<_, _> = applied.into_iter().filter(|((_, plugin), _)| plugin.starts_with("conc.")).collect();
    assert_eq!(applied, expected, "the reader following along missed nothing and applied the latest of each key");
}
