//! Contract cases for the plugin release store (uploaded releases, their rollouts versioned so that nodes catch up,
//! and what each node runs): a release is stored once and immutable (the same bytes again change nothing, other
//! bytes under its version conflict), its bytes come back exactly, and a plugin's releases are listed newest upload
//! first; rollout puts get rising revisions, a catch-up read lists the current rollouts in revision order from any
//! revision on and honours its limit, a put replaces the plugin's earlier rollout under the time it was given,
//! canaries and an empty `live` round-trip, and concurrent puts get distinct revisions that a reader following
//! along sees without a gap; a node report replaces that node's earlier one for the plugin, and reports are listed
//! by plugin then node. [`crate::plugin_release_contract_tests!`] runs them against any `PluginReleaseStore`.
//!
//! Revisions are global to a store, a store may serve several cases, and a release once stored stays, so each case
//! uses plugin names of its own, unique to the run (a prefix from [`unique`]), looks only at its own rows, and
//! asserts the order of its revisions, not their numbers. The store never checks a release's `sha256` against its
//! bytes, so the cases use made-up digests.

use crate::Fixture;
use crate::cases::assert_conflict;
use palaver_core::ports::{Canary, NodeReport, PluginRelease, PluginReleaseStore, PluginRollout, ReleaseInfo};
use palaver_core::{TenantId, UnixMillis};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The page size [`all_since`] reads with.
const PAGE: usize = 100;

/// A plugin name prefix no other case and no earlier run uses: `case`, the time, the process and a counter, in
/// lower-case letters, digits and dashes (what a plugin name may hold), short enough for a name column of 64.
fn unique(case: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{case}-{nanos:x}-{:x}-{n:x}-", std::process::id())
}

/// A made-up SHA-256: 64 lower-case hex digits told apart by `n`.
fn sha(n: u64) -> String {
    format!("{n:064x}")
}

fn release(name: &str, version: &str, n: u64, component: Vec<u8>, uploaded_at: UnixMillis) -> PluginRelease {
    PluginRelease {
        name: name.to_owned(),
        version: version.to_owned(),
        sha256: sha(n),
        manifest: format!("name = \"{name}\"\nversion = \"{version}\"\nworld = \"full\"\n"),
        component,
        signed_by: None,
        uploaded_at,
    }
}

fn info(r: &PluginRelease) -> ReleaseInfo {
    ReleaseInfo {
        name: r.name.clone(),
        version: r.version.clone(),
        sha256: r.sha256.clone(),
        size: r.component.len() as u64,
        signed_by: r.signed_by.clone(),
        uploaded_at: r.uploaded_at,
    }
}

/// A rollout to put, with a revision and time the store must ignore.
fn rollout(plugin: &str, live: Option<&str>, canary: Option<Canary>) -> PluginRollout {
    PluginRollout { plugin: plugin.to_owned(), live: live.map(str::to_owned), canary, revision: -7, updated_at: -9 }
}

/// `put` as the store holds it: under `revision`, updated at `now`.
fn stored(put: &PluginRollout, revision: i64, now: UnixMillis) -> PluginRollout {
    PluginRollout { revision, updated_at: now, ..put.clone() }
}

/// The live version of the `n`th put, so that puts can be told apart.
fn live(n: i64) -> Option<String> {
    Some(format!("1.{n}.0"))
}

fn numbered(plugin: &str, n: i64) -> PluginRollout {
    rollout(plugin, live(n).as_deref(), None)
}

fn canary(version: &str, tenants: &[u64]) -> Option<Canary> {
    Some(Canary { version: version.to_owned(), tenants: tenants.iter().copied().map(TenantId).collect() })
}

/// Every rollout above `after`, read page by page, checking that the revisions rise strictly across all pages.
async fn all_since<S: PluginReleaseStore>(s: &S, after: i64) -> Vec<PluginRollout> {
    let (mut all, mut cursor) = (Vec::new(), after);
    loop {
        let page = s.plugin_rollouts_since(cursor, PAGE).await.unwrap();
        assert!(page.len() <= PAGE, "since({cursor}, {PAGE}) returned {} rollouts", page.len());
        for r in &page {
            assert!(r.revision > cursor, "since({after}): revision {} after {cursor}", r.revision);
            cursor = r.revision;
        }
        let done = page.len() < PAGE;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// This case's rollouts above `after` (their plugin names start with `prefix`), in revision order.
async fn mine<S: PluginReleaseStore>(s: &S, after: i64, prefix: &str) -> Vec<PluginRollout> {
    all_since(s, after).await.into_iter().filter(|r| r.plugin.starts_with(prefix)).collect()
}

/// This case's node reports (their plugin names start with `prefix`), in the order the store lists them.
async fn my_reports<S: PluginReleaseStore>(s: &S, prefix: &str) -> Vec<NodeReport> {
    s.node_reports().await.unwrap().into_iter().filter(|r| r.plugin.starts_with(prefix)).collect()
}

/// A put stores the release and answers `true`; the same name, version and digest again answers `false` and
/// changes nothing, even with another manifest, signer and time; other versions and names are not there.
pub async fn plugin_release_put_once<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("rel-once");
    let name = format!("{p}a");
    let first = PluginRelease { signed_by: Some("ops".to_owned()), ..release(&name, "1.0.0", 1, vec![1, 2, 3], 100) };
    assert!(s.put_plugin_release(&first).await.unwrap(), "the first put stores");
    assert_eq!(s.plugin_release(&name, "1.0.0").await.unwrap(), Some(first.clone()));

    let again =
        PluginRelease { manifest: "name = \"other\"\n".to_owned(), signed_by: None, uploaded_at: 200, ..first.clone() };
    assert!(!s.put_plugin_release(&again).await.unwrap(), "the same digest again stores nothing");
    assert!(!s.put_plugin_release(&first).await.unwrap(), "nor does the very same release");
    assert_eq!(s.plugin_release(&name, "1.0.0").await.unwrap(), Some(first.clone()), "the first upload stands");
    assert_eq!(s.plugin_releases(&name).await.unwrap(), vec![info(&first)], "one release, not two");

    assert_eq!(s.plugin_release(&name, "1.0.1").await.unwrap(), None, "another version");
    assert_eq!(s.plugin_release(&name, "1.0").await.unwrap(), None, "a prefix of the version");
    assert_eq!(s.plugin_release(&format!("{p}b"), "1.0.0").await.unwrap(), None, "another plugin");
    assert_eq!(s.plugin_release(&p, "1.0.0").await.unwrap(), None, "a prefix of the name");
}

/// A released version is immutable: the same name and version with another digest is `Conflict` and leaves the
/// stored release alone, while the other digest under another version (or another plugin) is stored.
pub async fn plugin_release_other_digest_conflicts<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("rel-conf");
    let name = format!("{p}a");
    let first = release(&name, "1.0.0", 0xabc, vec![1; 10], 100);
    assert!(s.put_plugin_release(&first).await.unwrap());
    let rebuilt = release(&name, "1.0.0", 2, vec![2; 10], 200);
    assert_conflict(s.put_plugin_release(&rebuilt).await, "same version, other digest");
    let same_bytes = PluginRelease { sha256: sha(0xabc).to_uppercase(), ..first.clone() };
    assert_conflict(s.put_plugin_release(&same_bytes).await, "the digest compares exactly (upper-case hex)");
    assert_eq!(s.plugin_release(&name, "1.0.0").await.unwrap(), Some(first.clone()), "unchanged");
    assert_eq!(s.plugin_releases(&name).await.unwrap(), vec![info(&first)]);

    let next = PluginRelease { version: "1.0.1".to_owned(), uploaded_at: 300, ..rebuilt.clone() };
    assert!(s.put_plugin_release(&next).await.unwrap(), "the other digest under a version of its own");
    let elsewhere = PluginRelease { name: format!("{p}b"), ..rebuilt };
    assert!(s.put_plugin_release(&elsewhere).await.unwrap(), "the same version of another plugin");
    assert_eq!(s.plugin_release(&name, "1.0.1").await.unwrap(), Some(next));
}

/// The component comes back byte for byte, whatever the bytes and however many: a few hundred kilobytes that are
/// not UTF-8 (every byte value, NULs, invalid sequences), an empty component, a single byte; the manifest and the
/// signer round-trip too, and listings give each component's size.
pub async fn plugin_release_bytes_round_trip<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("rel-bytes");
    let name = format!("{p}a");
    let mut big = vec![0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0x00];
    big.extend((0..300 * 1024u32).map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8));
    big.extend([0x00, 0x00, 0xff]);
    assert!(std::str::from_utf8(&big).is_err(), "the component is not UTF-8");
    let manifest =
        "name = \"héllo 世界\"\n# \"quotes\", back\\slashes, tabs\t and 🎉\n\n[settings]\nx = '''\nmulti\nline\n'''\n";
    let releases = [
        PluginRelease {
            manifest: manifest.to_owned(),
            signed_by: Some("release-key 2025 ✓".to_owned()),
            ..release(&name, "1.0.0", 1, big, 100)
        },
        release(&name, "1.0.1", 2, Vec::new(), 200),
        release(&name, "1.0.2-rc.1+build.5", 3, vec![0], 300),
    ];
    for r in &releases {
        assert!(s.put_plugin_release(r).await.unwrap(), "{} stored", r.version);
    }
    for r in &releases {
        let got = s.plugin_release(&name, &r.version).await.unwrap().expect("stored");
        assert_eq!(got.component.len(), r.component.len(), "{}: size", r.version);
        assert!(got.component == r.component, "{}: the bytes differ", r.version);
        assert_eq!(got, *r, "{} round-trips", r.version);
    }
    let listed = s.plugin_releases(&name).await.unwrap();
    assert_eq!(listed.iter().map(|i| i.size).collect::<Vec<_>>(), vec![1, 0, 15 + 300 * 1024 + 3], "sizes");
    assert_eq!(listed, releases.iter().rev().map(info).collect::<Vec<_>>());
}

/// A plugin's releases are listed without their bytes, newest upload first, releases uploaded in the same
/// millisecond by version, highest first; another plugin's releases (a name with this one as prefix included)
/// are not listed, and a plugin without releases lists none.
pub async fn plugin_release_listing_newest_first<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("rel-list");
    let (name, longer) = (format!("{p}a"), format!("{p}a2"));
    assert!(s.plugin_releases(&name).await.unwrap().is_empty(), "nothing before the puts");
    let releases = [
        release(&name, "1.0.0", 1, vec![1; 1], 100),
        release(&name, "1.1.0", 2, vec![2; 2], 300),
        release(&name, "0.9.0", 3, vec![3; 3], 200),
        PluginRelease { signed_by: Some("ops".to_owned()), ..release(&name, "2.0.0", 4, vec![4; 4], 300) },
        release(&name, "3.0.0", 5, vec![5; 5], 50),
        release(&longer, "9.0.0", 6, vec![6; 6], 1_000),
    ];
    for r in &releases {
        assert!(s.put_plugin_release(r).await.unwrap());
    }
    let expected: Vec<ReleaseInfo> = [3, 1, 2, 0, 4].iter().map(|&i| info(&releases[i])).collect();
    assert_eq!(s.plugin_releases(&name).await.unwrap(), expected, "by upload time, then version, newest first");
    assert_eq!(s.plugin_releases(&longer).await.unwrap(), vec![info(&releases[5])]);
    assert!(s.plugin_releases(&p).await.unwrap().is_empty(), "a prefix of a name is not that plugin");
}

/// Each rollout put answers a revision above every one before it, whichever plugin it is for, a repeated put
/// included.
pub async fn plugin_release_rollout_puts_get_rising_revisions<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("rise");
    let plugins = ["a", "b", "a", "c", "a"];
    let mut last = 0;
    for (i, plugin) in plugins.into_iter().enumerate() {
        let revision = s.put_plugin_rollout(&numbered(&format!("{p}{plugin}"), i as i64), 1_000).await.unwrap();
        assert!(revision > last, "put {i} ({plugin}): revision {revision} after {last}");
        last = revision;
    }
}

/// A catch-up from 0 lists every current rollout, each under the revision its put answered and the time it was
/// given (not the revision and time in the rollout put), in revision order.
pub async fn plugin_release_rollout_since_zero_lists_current_in_order<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("zero");
    assert!(mine(s, 0, &p).await.is_empty(), "nothing of this case before its puts");
    let puts = [numbered(&format!("{p}b"), 1), numbered(&format!("{p}c"), 2), numbered(&format!("{p}a"), 3)];
    let mut expected = Vec::new();
    for (i, put) in puts.iter().enumerate() {
        let now = 5_000 - i as i64;
        let revision = s.put_plugin_rollout(put, now).await.unwrap();
        expected.push(stored(put, revision, now));
    }
    assert_eq!(mine(s, 0, &p).await, expected, "in revision order, not by name or time");
}

/// A second put for the same plugin replaces the first: one row, the new rollout under the new revision and time,
/// and the old revision listed nowhere.
pub async fn plugin_release_rollout_put_replaces_the_earlier<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let pre = unique("repl");
    let (p, q) = (format!("{pre}p"), format!("{pre}q"));
    let first = rollout(&p, Some("1.0.0"), canary("1.1.0", &[1]));
    let old = s.put_plugin_rollout(&first, 10).await.unwrap();
    let other = s.put_plugin_rollout(&numbered(&q, 2), 20).await.unwrap();
    let second = rollout(&p, Some("1.1.0"), None);
    let new = s.put_plugin_rollout(&second, 30).await.unwrap();
    assert!(old < other && other < new, "{old} < {other} < {new}");
    assert_eq!(
        mine(s, 0, &pre).await,
        vec![stored(&numbered(&q, 2), other, 20), stored(&second, new, 30)],
        "the replaced rollout moved to its new revision, without its canary"
    );
    assert!(all_since(s, 0).await.iter().all(|r| r.revision != old), "revision {old} is no longer listed");
    let after_old = mine(s, old, &pre).await;
    assert_eq!(after_old.len(), 2, "reading on from the old revision finds both current rollouts: {after_old:?}");
    assert_eq!(mine(s, other, &pre).await, vec![stored(&second, new, 30)]);
}

/// A catch-up from revision `n` lists only the rollouts stored after it.
pub async fn plugin_release_rollout_since_lists_only_later<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("later");
    let va = s.put_plugin_rollout(&numbered(&format!("{p}a"), 1), 1).await.unwrap();
    let vb = s.put_plugin_rollout(&numbered(&format!("{p}b"), 2), 2).await.unwrap();
    let vc = s.put_plugin_rollout(&numbered(&format!("{p}c"), 3), 3).await.unwrap();
    let b = stored(&numbered(&format!("{p}b"), 2), vb, 2);
    let c = stored(&numbered(&format!("{p}c"), 3), vc, 3);
    assert_eq!(mine(s, va, &p).await, vec![b, c.clone()]);
    assert_eq!(mine(s, vb, &p).await, vec![c]);
    assert_eq!(mine(s, vc, &p).await, Vec::new());
    assert!(all_since(s, vb).await.iter().all(|x| x.revision > vb), "nothing at or below {vb}");
    // A revision above every stored one is no error, just nothing yet.
    assert!(s.plugin_rollouts_since(i64::MAX, 10).await.unwrap().is_empty());
}

/// A catch-up returns at most `limit` rollouts, the lowest revisions first, so paging by the last revision seen
/// reads everything once; a limit of 0 returns nothing.
pub async fn plugin_release_rollout_limit_is_honoured<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("limit");
    let mut revisions = Vec::new();
    for i in 0..5 {
        revisions.push(s.put_plugin_rollout(&numbered(&format!("{p}{i}"), i), i).await.unwrap());
    }
    let before = revisions[0] - 1;
    assert!(s.plugin_rollouts_since(before, 0).await.unwrap().is_empty(), "limit 0");
    let one = s.plugin_rollouts_since(before, 1).await.unwrap();
    assert_eq!(one.len(), 1, "limit 1: {one:?}");
    let two = s.plugin_rollouts_since(before, 2).await.unwrap();
    assert_eq!(two.len(), 2, "limit 2: {two:?}");
    // The lowest revisions first: nothing above `before` is listed ahead of this case's first rollout.
    assert!(before < one[0].revision && one[0].revision <= revisions[0], "{one:?}");
    assert!(
        before < two[0].revision && two[0].revision < two[1].revision && two[0].revision <= revisions[0],
        "{two:?}"
    );
    // Paging two at a time reads all of this case's rollouts, once each, in order.
    let (mut seen, mut cursor) = (Vec::new(), before);
    loop {
        let page = s.plugin_rollouts_since(cursor, 2).await.unwrap();
        assert!(page.len() <= 2, "{page:?}");
        let Some(last) = page.last() else { break };
        cursor = last.revision;
        seen.extend(page.into_iter().filter(|r| r.plugin.starts_with(&p)).map(|r| r.revision));
    }
    assert_eq!(seen, revisions);
}

/// Every shape of rollout comes back as put: no live version (the plugin handed back to the nodes' directories)
/// with or without a canary, a live version with or without one, a canary of no tenants, of one, of the extreme
/// ids and of many, and versions with pre-release and build parts.
pub async fn plugin_release_rollout_canary_and_live_round_trip<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let p = unique("shape");
    let many: Vec<u64> = (1..=200).map(|i| i * 1_000_003).collect();
    let puts = [
        rollout(&format!("{p}0"), None, None),
        rollout(&format!("{p}1"), Some("1.0.0"), None),
        rollout(&format!("{p}2"), None, canary("2.0.0-rc.1", &[7])),
        rollout(
            &format!("{p}3"),
            Some("1.0.0"),
            canary("1.1.0", &[0, 1, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX]),
        ),
        rollout(&format!("{p}4"), Some("1.0.0+build.7"), canary("1.1.0", &[])),
        rollout(&format!("{p}5"), Some("1.0.0"), canary("1.2.0", &many)),
    ];
    let mut expected = Vec::new();
    for (i, put) in puts.iter().enumerate() {
        let revision = s.put_plugin_rollout(put, 100 + i as i64).await.unwrap();
        expected.push(stored(put, revision, 100 + i as i64));
    }
    let got = mine(s, 0, &p).await;
    assert_eq!(got.len(), expected.len());
    for (got, expected) in got.iter().zip(&expected) {
        assert_eq!(got, expected, "{} round-trips", expected.plugin);
    }
    // Replacing a canary rollout with a plain one drops the canary.
    let plain = rollout(&format!("{p}3"), Some("1.1.0"), None);
    let revision = s.put_plugin_rollout(&plain, 999).await.unwrap();
    assert_eq!(mine(s, revision - 1, &p).await, vec![stored(&plain, revision, 999)]);
}

/// Many tasks putting at once get distinct revisions, and each plugin ends with the rollout of its highest
/// revision; a reader catching up in small pages while they put never finds a rollout below a revision it has
/// already passed, so what it applied in order equals what the store holds at the end.
pub async fn plugin_release_rollout_concurrent_puts_in_order<S: PluginReleaseStore + Clone + 'static>(f: Fixture<S>) {
    const DISTINCT: i64 = 32;
    const SAME: i64 = 8;
    let s = f.store.clone();
    let p = unique("conc");
    let start = s.put_plugin_rollout(&numbered(&format!("{p}start"), 0), 0).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));

    // The reader: a node catching up, four rollouts at a time, applying each in order.
    let reader = {
        let (s, done) = (s.clone(), done.clone());
        tokio::spawn(async move {
            let (mut applied, mut cursor) = (BTreeMap::new(), start);
            loop {
                let finished = done.load(Ordering::SeqCst);
                let page = s.plugin_rollouts_since(cursor, 4).await.unwrap();
                for r in &page {
                    assert!(r.revision > cursor, "revision {} after {cursor}", r.revision);
                    cursor = r.revision;
                    applied.insert(r.plugin.clone(), (r.live.clone(), r.revision));
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
        let plugin = if i < DISTINCT { format!("{p}{i}") } else { format!("{p}same") };
        writers.push(tokio::spawn(async move {
            let revision = s.put_plugin_rollout(&numbered(&plugin, i), i).await.unwrap();
            (plugin, i, revision)
        }));
    }
    let mut puts = Vec::new();
    for writer in writers {
        puts.push(writer.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let applied = reader.await.unwrap();

    let revisions: HashSet<i64> = puts.iter().map(|p| p.2).collect();
    assert_eq!(revisions.len(), puts.len(), "every put got a revision of its own: {puts:?}");
    assert!(puts.iter().all(|p| p.2 > start), "all after the first put");

    // The expected end state: each plugin's rollout from its highest revision.
    let mut expected: BTreeMap<String, (Option<String>, i64)> = BTreeMap::new();
    for (plugin, n, revision) in &puts {
        let entry = expected.entry(plugin.clone()).or_insert((live(*n), *revision));
        if *revision > entry.1 {
            *entry = (live(*n), *revision);
        }
    }
    let end = mine(&s, start, &p).await;
    let end: BTreeMap<_, _> = end.into_iter().map(|r| (r.plugin, (r.live, r.revision))).collect();
    assert_eq!(end.len(), DISTINCT as usize + 1, "the distinct plugins and `same`");
    assert_eq!(end, expected, "each plugin holds the rollout of its highest revision");

    let applied: BTreeMap<_, _> = applied.into_iter().filter(|(plugin, _)| plugin.starts_with(&p)).collect();
    assert_eq!(applied, expected, "the reader following along missed nothing and applied the latest of each plugin");
}

/// A node's report replaces its earlier report for the same plugin only: other nodes' reports for the plugin and
/// the node's reports for other plugins stay, and every field round-trips (none set, all set).
pub async fn plugin_release_node_report_replaces_per_node_and_plugin<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let pre = unique("node");
    let (p, q) = (format!("{pre}p"), format!("{pre}q"));
    let report = |node: &str, plugin: &str, revision: i64| NodeReport {
        node: node.to_owned(),
        plugin: plugin.to_owned(),
        live: Some("1.0.0".to_owned()),
        canary: None,
        error: None,
        revision,
        at: 1_000 + revision,
    };
    let (n1p, n2p, n1q) = (report("node-1", &p, 1), report("node-2", &p, 1), report("node-1", &q, 2));
    for r in [&n1p, &n2p, &n1q] {
        s.put_node_report(r).await.unwrap();
    }
    assert_eq!(my_reports(s, &pre).await, vec![n1p.clone(), n2p.clone(), n1q.clone()]);

    let failing = NodeReport {
        live: None,
        canary: Some("1.1.0-rc.1".to_owned()),
        error: Some("refused: import \"kv\" not granted — «quota» 🎉".to_owned()),
        ..report("node-1", &p, 5)
    };
    s.put_node_report(&failing).await.unwrap();
    assert_eq!(my_reports(s, &pre).await, vec![failing.clone(), n2p.clone(), n1q.clone()], "node-1's p replaced");

    let recovered = NodeReport { canary: Some("1.1.0".to_owned()), ..report("node-1", &p, 6) };
    s.put_node_report(&recovered).await.unwrap();
    assert_eq!(my_reports(s, &pre).await, vec![recovered, n2p, n1q], "the error cleared by the next report");
}

/// Reports are listed by plugin, then by node, whatever order they came in.
pub async fn plugin_release_node_reports_by_plugin_then_node<S: PluginReleaseStore>(f: Fixture<S>) {
    let s = &f.store;
    let pre = unique("order");
    let report = |node: &str, plugin: &str| NodeReport {
        node: node.to_owned(),
        plugin: format!("{pre}{plugin}"),
        live: Some(format!("{node}/{plugin}")),
        canary: None,
        error: None,
        revision: 1,
        at: 1,
    };
    let puts = [
        report("node-2", "b"),
        report("node-10", "a"),
        report("node-1", "b"),
        report("node-2", "a"),
        report("node-1", "a"),
        report("node-10", "b"),
    ];
    for r in &puts {
        s.put_node_report(r).await.unwrap();
    }
    let listed: Vec<(String, String)> = my_reports(s, &pre).await.into_iter().map(|r| (r.plugin, r.node)).collect();
    let mut expected: Vec<(String, String)> = puts.iter().map(|r| (r.plugin.clone(), r.node.clone())).collect();
    expected.sort();
    assert_eq!(listed, expected, "by plugin, then node (node-1 < node-10 < node-2, as bytes compare)");
}
