//! Contract cases for the plugin key-value store (the `kv` import): round trips, scopes isolated by tenant and
//! plugin, TTLs on the wall clock, compare-and-set, the quota of keys and bytes, exact usage figures, batches that
//! touch one key several times, concurrent commits that must not pass the quota together, arbitrary bytes and the
//! largest keys and values. [`crate::plugin_kv_contract_tests!`] runs them against any `PluginKv`.
//!
//! The TTL cases sleep: the durable adapters read the wall clock, so no case can move time for them.

use crate::Fixture;
use palaver_core::TenantId;
use palaver_core::ports::{KvError, KvOp, KvQuota, KvScope, KvUsage, PluginKv};
use std::time::{Duration, Instant};

/// A quota no case reaches unless it means to.
const ROOMY: KvQuota = KvQuota { max_keys: 1_000, max_bytes: 1 << 20 };

fn scope(tenant: TenantId, plugin: &str) -> KvScope<'_> {
    KvScope { tenant, plugin }
}

fn set(key: &str, value: &[u8]) -> KvOp {
    KvOp::Set { key: key.to_owned(), value: value.to_vec(), ttl_ms: None }
}

fn set_ttl(key: &str, value: &[u8], ttl_ms: u64) -> KvOp {
    KvOp::Set { key: key.to_owned(), value: value.to_vec(), ttl_ms: Some(ttl_ms) }
}

fn del(key: &str) -> KvOp {
    KvOp::Delete { key: key.to_owned() }
}

fn cas(key: &str, expected: Option<&[u8]>, value: Option<&[u8]>) -> KvOp {
    KvOp::CompareAndSet {
        key: key.to_owned(),
        expected: expected.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        ttl_ms: None,
    }
}

async fn get<S: PluginKv>(s: &S, sc: KvScope<'_>, key: &str) -> Option<Vec<u8>> {
    s.get(sc, key).await.unwrap()
}

async fn usage<S: PluginKv>(s: &S, sc: KvScope<'_>) -> KvUsage {
    s.usage(sc).await.unwrap()
}

fn used(keys: u64, bytes: u64) -> KvUsage {
    KvUsage { keys, bytes }
}

#[track_caller]
fn assert_quota(result: Result<(), KvError>, what: &str) {
    assert!(matches!(result, Err(KvError::Quota(_))), "{what}: expected Quota, got {result:?}");
}

/// A value reads back as set, a second set replaces it, a delete removes it, and deleting or reading a key that
/// is not there is no error; an empty batch changes nothing.
pub async fn kv_set_get_delete_round_trip<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    assert_eq!(get(s, sc, "a").await, None);
    assert_eq!(usage(s, sc).await, KvUsage::default());
    s.commit(sc, &[set("a", b"one"), set("b", b"two")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "a").await, Some(b"one".to_vec()));
    assert_eq!(get(s, sc, "b").await, Some(b"two".to_vec()));
    s.commit(sc, &[set("a", b"uno")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "a").await, Some(b"uno".to_vec()), "a set replaces");
    s.commit(sc, &[del("a")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "a").await, None);
    assert_eq!(get(s, sc, "b").await, Some(b"two".to_vec()), "a delete removes its key only");
    s.commit(sc, &[del("never")], &ROOMY).await.unwrap();
    s.commit(sc, &[], &ROOMY).await.unwrap();
    assert_eq!(usage(s, sc).await, used(1, 4));
}

/// Another plugin of the same tenant, and the same plugin of another tenant, see none of a scope's keys, count
/// none of its usage, and write under the same key without touching it.
pub async fn kv_scopes_are_isolated<S: PluginKv>(f: Fixture<S>) {
    let s = &f.store;
    let mine = scope(f.tenant, "p");
    let other_plugin = scope(f.tenant, "q");
    let prefix_plugin = scope(f.tenant, "p2");
    let upper_plugin = scope(f.tenant, "P");
    let other_tenant = scope(f.other_tenant, "p");
    s.commit(mine, &[set("k", b"mine"), set("only", b"1")], &ROOMY).await.unwrap();
    for sc in [other_plugin, prefix_plugin, upper_plugin, other_tenant] {
        assert_eq!(get(s, sc, "k").await, None, "{sc:?}");
        assert_eq!(usage(s, sc).await, KvUsage::default(), "{sc:?}");
    }
    s.commit(other_plugin, &[set("k", b"q's")], &ROOMY).await.unwrap();
    s.commit(other_tenant, &[set("k", b"theirs")], &ROOMY).await.unwrap();
    assert_eq!(get(s, mine, "k").await, Some(b"mine".to_vec()));
    assert_eq!(get(s, other_plugin, "k").await, Some(b"q's".to_vec()));
    assert_eq!(get(s, other_tenant, "k").await, Some(b"theirs".to_vec()));
    s.commit(other_tenant, &[del("k"), del("only")], &ROOMY).await.unwrap();
    assert_eq!(get(s, mine, "k").await, Some(b"mine".to_vec()), "another tenant's delete");
    assert_eq!(get(s, mine, "only").await, Some(b"1".to_vec()));
    // Each scope has a quota of its own.
    let one = KvQuota { max_keys: 1, max_bytes: 100 };
    s.commit(scope(f.tenant, "fresh"), &[set("x", b"")], &one).await.unwrap();
    s.commit(scope(f.other_tenant, "fresh"), &[set("x", b"")], &one).await.unwrap();
    assert_eq!(usage(s, mine).await, used(2, 10));
}

/// A key set with a TTL reads back until it runs out and is gone after (from `get`, from `usage` and from the
/// quota); a later set without a TTL keeps a key for good; a compare-and-set sees an expired key as absent.
pub async fn kv_values_expire_after_their_ttl<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    const TTL: u64 = 400;
    let started = Instant::now();
    s.commit(sc, &[set_ttl("gone", b"1", TTL), set_ttl("kept", b"2", TTL), set("plain", b"3")], &ROOMY).await.unwrap();
    s.commit(sc, &[set("kept", b"2")], &ROOMY).await.unwrap();
    let early = (get(s, sc, "gone").await, usage(s, sc).await);
    if started.elapsed() < Duration::from_millis(TTL) {
        assert_eq!(early, (Some(b"1".to_vec()), used(3, 16)), "live before its TTL");
    }
    tokio::time::sleep(Duration::from_millis(TTL + 300)).await;
    assert_eq!(get(s, sc, "gone").await, None, "expired");
    assert_eq!(get(s, sc, "kept").await, Some(b"2".to_vec()), "a set without a TTL keeps the key for good");
    assert_eq!(get(s, sc, "plain").await, Some(b"3".to_vec()));
    assert_eq!(usage(s, sc).await, used(2, 11), "an expired key counts for nothing");
    // An expired key neither conflicts with "absent" nor takes room under the quota.
    let two = KvQuota { max_keys: 2, max_bytes: 1_000 };
    s.commit(sc, &[set_ttl("brief", b"x", 100)], &KvQuota { max_keys: 3, ..two }).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_quota(s.commit(sc, &[set("third", b"x")], &two).await, "two live keys under a quota of 2");
    s.commit(sc, &[cas("gone", None, Some(b"again"))], &KvQuota { max_keys: 3, ..two }).await.unwrap();
    assert_eq!(get(s, sc, "gone").await, Some(b"again".to_vec()));
    assert_eq!(get(s, sc, "brief").await, None);
    assert_eq!(usage(s, sc).await, used(3, 20));
}

/// A compare-and-set writes when the current value is the expected one (`None`: absent) and deletes when its
/// value is `None`; when it does not hold, the batch fails with `Conflict` naming the key and none of it is
/// written, not even the operations before it.
pub async fn kv_compare_and_set_success_and_conflict<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    s.commit(sc, &[cas("n", None, Some(b"1"))], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "n").await, Some(b"1".to_vec()), "created where absent");
    s.commit(sc, &[cas("n", Some(b"1"), Some(b"2"))], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "n").await, Some(b"2".to_vec()), "replaced where it matched");

    let stale = [set("other", b"x"), del("n"), cas("n2", None, Some(b"new")), cas("n", Some(b"1"), Some(b"3"))];
    let err = s.commit(sc, &stale, &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("n".to_owned()));
    assert_eq!(get(s, sc, "other").await, None, "nothing of a conflicting batch is written");
    assert_eq!(get(s, sc, "n2").await, None);
    assert_eq!(get(s, sc, "n").await, Some(b"2".to_vec()));
    assert_eq!(usage(s, sc).await, used(1, 2));

    let err = s.commit(sc, &[cas("n", None, Some(b"9"))], &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("n".to_owned()), "expected absent, but present");
    let err = s.commit(sc, &[cas("missing", Some(b""), Some(b"9"))], &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("missing".to_owned()), "an empty value is not absence");
    s.commit(sc, &[set("empty", b"")], &ROOMY).await.unwrap();
    let err = s.commit(sc, &[cas("empty", None, Some(b"9"))], &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("empty".to_owned()), "absence is not an empty value");
    s.commit(sc, &[cas("empty", Some(b""), None), cas("n", Some(b"2"), None)], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "n").await, None, "a compare-and-set to None deletes");
    assert_eq!(get(s, sc, "empty").await, None);
    assert_eq!(usage(s, sc).await, KvUsage::default());
}

/// A batch that would take the scope past its key count fails with `Quota` and writes nothing; replacing a key
/// keeps the count; a delete frees a slot.
pub async fn kv_quota_on_keys<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    let q = KvQuota { max_keys: 3, max_bytes: 1_000 };
    s.commit(sc, &[set("a", b"1"), set("b", b"2"), set("c", b"3")], &q).await.unwrap();
    assert_quota(s.commit(sc, &[set("a", b"11"), set("d", b"4")], &q).await, "a fourth key");
    assert_eq!(get(s, sc, "a").await, Some(b"1".to_vec()), "nothing of a refused batch is written");
    assert_eq!(get(s, sc, "d").await, None);
    assert_eq!(usage(s, sc).await, used(3, 6));
    s.commit(sc, &[set("a", b"11")], &q).await.unwrap();
    assert_eq!(get(s, sc, "a").await, Some(b"11".to_vec()), "a replacement keeps the count");
    // Within one batch, only what the whole batch leaves counts.
    s.commit(sc, &[set("d", b"4"), del("c")], &q).await.unwrap();
    assert_eq!(usage(s, sc).await, used(3, 7));
    assert_quota(s.commit(sc, &[set("e", b"5")], &q).await, "still three keys");
    s.commit(sc, &[del("d")], &q).await.unwrap();
    s.commit(sc, &[set("e", b"5")], &q).await.unwrap();
    assert_eq!(usage(s, sc).await, used(3, 7));
}

/// A batch that would take the scope past its bytes (keys and values) fails with `Quota` and writes nothing; a
/// scope above a lowered quota can still delete and shrink, but not grow.
pub async fn kv_quota_on_bytes<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    let q = KvQuota { max_keys: 100, max_bytes: 20 };
    s.commit(sc, &[set("a", b"123456789"), set("b", b"123456789")], &q).await.unwrap();
    assert_eq!(usage(s, sc).await, used(2, 20), "exactly at the quota");
    assert_quota(s.commit(sc, &[set("c", b"")], &q).await, "one byte over (the key)");
    assert_quota(s.commit(sc, &[set("a", b"1234567890")], &q).await, "a longer replacement");
    assert_eq!(get(s, sc, "a").await, Some(b"123456789".to_vec()));
    assert_eq!(get(s, sc, "c").await, None);
    assert_eq!(usage(s, sc).await, used(2, 20));

    // Lowered below what the scope holds: no growth, but shrinking and deleting work.
    let tight = KvQuota { max_keys: 1, max_bytes: 5 };
    assert_quota(s.commit(sc, &[set("c", b"")], &tight).await, "growth above a lowered quota");
    s.commit(sc, &[set("a", b"1")], &tight).await.unwrap();
    assert_eq!(usage(s, sc).await, used(2, 12), "a shrinking replacement above the quota");
    s.commit(sc, &[del("b")], &tight).await.unwrap();
    assert_eq!(usage(s, sc).await, used(1, 2), "a delete above the quota");
    assert_eq!(get(s, sc, "b").await, None);
}

/// `usage` counts live keys and the bytes of their keys and values exactly: UTF-8 bytes of the key, not
/// characters.
pub async fn kv_usage_is_exact<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    s.commit(sc, &[set("a", b""), set("bb", b"xyz"), set("ключ", &[0xFF; 10]), set("€", b"\x00")], &ROOMY)
        .await
        .unwrap();
    // 1 + 0, 2 + 3, 8 + 10, 3 + 1.
    assert_eq!(usage(s, sc).await, used(4, 28));
    s.commit(sc, &[set("bb", b"x"), del("a")], &ROOMY).await.unwrap();
    assert_eq!(usage(s, sc).await, used(3, 25));
    // The byte quota counts the same way: "ключ" is 8 bytes, so this leaves 25 - 18 + 22 = 29.
    let q = KvQuota { max_keys: 10, max_bytes: 28 };
    assert_quota(s.commit(sc, &[set("ключ", &[0xFF; 14])], &q).await, "29 bytes under 28");
    s.commit(sc, &[set("ключ", &[0xFF; 14])], &KvQuota { max_bytes: 29, ..q }).await.unwrap();
    assert_eq!(usage(s, sc).await, used(3, 29));
}

/// Several operations on one key in a batch: the last one stands, each compare-and-set is checked against what
/// the operations before it leave, and a key set then deleted in the batch is not written at all.
pub async fn kv_batch_with_several_ops_on_one_key<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    s.commit(sc, &[set("a", b"1"), set("a", b"22"), del("a"), set("a", b"333")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "a").await, Some(b"333".to_vec()));
    s.commit(sc, &[set("b", b"x"), del("b")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "b").await, None);
    assert_eq!(usage(s, sc).await, used(1, 4));
    s.commit(sc, &[cas("a", Some(b"333"), Some(b"4")), cas("a", Some(b"4"), Some(b"5")), set("c", b"x")], &ROOMY)
        .await
        .unwrap();
    assert_eq!(get(s, sc, "a").await, Some(b"5".to_vec()));
    s.commit(sc, &[del("c"), cas("c", None, Some(b"y")), cas("c", Some(b"y"), Some(b"z"))], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "c").await, Some(b"z".to_vec()));
    // A compare-and-set against the stored value after an earlier op of the batch changed it conflicts.
    let err = s.commit(sc, &[set("a", b"6"), cas("a", Some(b"5"), Some(b"7"))], &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("a".to_owned()));
    assert_eq!(get(s, sc, "a").await, Some(b"5".to_vec()));
    // The quota sees what the batch leaves: many sets of one key count once.
    let q = KvQuota { max_keys: 3, max_bytes: 100 };
    s.commit(sc, &[set("d", b"1"), set("d", b"2"), set("d", b"3")], &q).await.unwrap();
    assert_eq!(usage(s, sc).await, used(3, 6));
}

/// Two commits to one scope at once, each adding 6 new keys under a quota of 10: exactly one succeeds and the
/// other fails with `Quota`, over several rounds (a new scope, and one that already holds a key).
pub async fn kv_concurrent_commits_respect_the_quota<S: PluginKv>(f: Fixture<S>) {
    let s = &f.store;
    let q = KvQuota { max_keys: 10, max_bytes: 1 << 20 };
    let batch = |side: &str| -> Vec<KvOp> { (0..6).map(|i| set(&format!("{side}{i}"), b"v")).collect() };
    let (left, right) = (batch("l"), batch("r"));
    for round in 0..6 {
        let plugin = format!("race{round}");
        let sc = scope(f.tenant, &plugin);
        let held = if round % 2 == 1 {
            s.commit(sc, &[set("seed", b"")], &q).await.unwrap();
            1
        } else {
            0
        };
        let (a, b) = tokio::join!(s.commit(sc, &left, &q), s.commit(sc, &right, &q));
        let won = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: exactly one wins: {a:?} {b:?}");
        assert!([&a, &b].iter().any(|r| matches!(r, Err(KvError::Quota(_)))), "round {round}: {a:?} {b:?}");
        let u = usage(s, sc).await;
        assert_eq!(u.keys, held + 6, "round {round}");
        let winner = if a.is_ok() { "l" } else { "r" };
        for i in 0..6 {
            assert_eq!(get(s, sc, &format!("{winner}{i}")).await, Some(b"v".to_vec()));
        }
    }
}

/// Values are bytes, not text: NUL, 0xFF, every byte value and the empty value read back exactly.
pub async fn kv_values_with_arbitrary_bytes_round_trip<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    let every: Vec<u8> = (0..=255).collect();
    let values: [(&str, &[u8]); 6] = [
        ("nul", &[0x00]),
        ("ff", &[0xFF]),
        ("mixed", &[0x00, 0xFF, 0x00, 0x80, 0xC3]),
        ("every", &every),
        ("empty", &[]),
        ("not utf-8", b"\xC3\x28 \xED\xA0\x80"),
    ];
    let ops: Vec<KvOp> = values.iter().map(|(k, v)| set(k, v)).collect();
    s.commit(sc, &ops, &ROOMY).await.unwrap();
    for (k, v) in values {
        assert_eq!(get(s, sc, k).await.as_deref(), Some(v), "{k}");
    }
    s.commit(sc, &[cas("every", Some(&every), Some(&[0x00, 0x00]))], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "every").await, Some(vec![0x00, 0x00]), "compared byte for byte");
    let err = s.commit(sc, &[cas("nul", Some(&[0x00, 0x00]), None)], &ROOMY).await.unwrap_err();
    assert_eq!(err, KvError::Conflict("nul".to_owned()), "a trailing NUL makes another value");
}

/// The largest key (256 bytes, ASCII or multi-byte) and value (64 KiB) are stored and counted whole; keys are
/// compared byte for byte.
pub async fn kv_largest_keys_and_values_fit<S: PluginKv>(f: Fixture<S>) {
    let (s, sc) = (&f.store, scope(f.tenant, "p"));
    let ascii = "k".repeat(256);
    let wide = "é".repeat(128);
    let big: Vec<u8> = (0..64 << 10).map(|i: u32| (i % 251) as u8).collect();
    s.commit(sc, &[set(&ascii, &big), set(&wide, b"w")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, &ascii).await, Some(big.clone()));
    assert_eq!(get(s, sc, &wide).await, Some(b"w".to_vec()));
    assert_eq!(usage(s, sc).await, used(2, 256 + 65_536 + 256 + 1));
    assert_eq!(get(s, sc, &"k".repeat(255)).await, None, "a prefix is another key");
    assert_eq!(get(s, sc, "K").await, None);
    s.commit(sc, &[set("Key", b"upper"), set("key", b"lower"), set("key ", b"space")], &ROOMY).await.unwrap();
    assert_eq!(get(s, sc, "Key").await, Some(b"upper".to_vec()), "keys are case-sensitive");
    assert_eq!(get(s, sc, "key").await, Some(b"lower".to_vec()));
    assert_eq!(get(s, sc, "key ").await, Some(b"space".to_vec()), "a trailing space makes another key");
    // Exactly the largest value under an exactly fitting byte quota.
    let exact = KvQuota { max_keys: 10, max_bytes: 256 + 65_536 + 256 + 1 + 3 + 5 + 3 + 5 + 4 + 5 };
    s.commit(sc, &[set(&ascii, &big)], &exact).await.unwrap();
    assert_quota(s.commit(sc, &[set("x", b"")], &exact).await, "one byte past an exact fit");
}
