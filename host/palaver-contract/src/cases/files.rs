//! Contract cases for the file record store (records, references, what garbage collection may remove) and for
//! the blob store (whole and ranged reads, a failed upload that leaves nothing, a multi-part object).
//! [`crate::file_contract_tests!`] and [`crate::blob_contract_tests!`] run them against any adapter.

use crate::Fixture;
use palaver_core::ports::{BlobError, BlobStore, ByteStream, FileRecord, FileStatus, FileStore};
use palaver_core::{SeqRange, StoreError, UserId};

fn record(id: &str, uploader: u64, created: i64) -> FileRecord {
    FileRecord {
        id: id.into(),
        uploader: UserId(uploader),
        size: 1234,
        mime: "image/png".into(),
        name: "cat ü.png".into(),
        sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
        status: FileStatus::Clean,
        public: false,
        created,
    }
}

/// A record reads back as written; a second record with the same id is a conflict; status and the public
/// mark change only the file named, and report a missing one.
pub async fn file_record_round_trips<S: FileStore>(f: Fixture<S>) {
    let s = &f.store;
    assert_eq!(s.get_file(f.tenant, "f1").await.unwrap(), None);
    let mut r = record("f1", 7, 1_000);
    s.create_file(f.tenant, &r).await.unwrap();
    s.create_file(f.tenant, &record("f2", 7, 1_001)).await.unwrap();
    assert_eq!(s.get_file(f.tenant, "f1").await.unwrap(), Some(r.clone()));
    let again = s.create_file(f.tenant, &r).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "a reused id must conflict: {again:?}");

    assert!(s.set_file_status(f.tenant, "f1", FileStatus::Blocked).await.unwrap());
    assert!(s.set_file_public(f.tenant, "f1").await.unwrap());
    r.status = FileStatus::Blocked;
    r.public = true;
    assert_eq!(s.get_file(f.tenant, "f1").await.unwrap(), Some(r));
    let other = s.get_file(f.tenant, "f2").await.unwrap().unwrap();
    assert_eq!((other.status, other.public), (FileStatus::Clean, false), "only the named file changes");
    assert!(!s.set_file_status(f.tenant, "nope", FileStatus::Clean).await.unwrap());
    assert!(!s.set_file_public(f.tenant, "nope").await.unwrap());
}

/// A scan's conclusion settles a pending file only: a file an operator decided on meanwhile, or a missing one, is
/// left alone.
pub async fn pending_files_settle_once<S: FileStore>(f: Fixture<S>) {
    let s = &f.store;
    let mut pending = record("p1", 7, 1_000);
    pending.status = FileStatus::Pending;
    s.create_file(f.tenant, &pending).await.unwrap();
    s.create_file(f.tenant, &FileRecord { id: "p2".into(), ..pending.clone() }).await.unwrap();
    s.create_file(f.tenant, &record("c1", 7, 1_000)).await.unwrap();

    assert!(s.settle_pending_file(f.tenant, "p1", FileStatus::Clean).await.unwrap());
    assert_eq!(s.get_file(f.tenant, "p1").await.unwrap().unwrap().status, FileStatus::Clean);
    assert!(!s.settle_pending_file(f.tenant, "p1", FileStatus::Blocked).await.unwrap(), "settled once");
    assert_eq!(s.get_file(f.tenant, "p1").await.unwrap().unwrap().status, FileStatus::Clean);

    assert!(s.set_file_status(f.tenant, "p2", FileStatus::Blocked).await.unwrap(), "an operator blocks it first");
    assert!(!s.settle_pending_file(f.tenant, "p2", FileStatus::Clean).await.unwrap());
    assert_eq!(s.get_file(f.tenant, "p2").await.unwrap().unwrap().status, FileStatus::Blocked);

    assert!(!s.settle_pending_file(f.tenant, "c1", FileStatus::Blocked).await.unwrap(), "a clean file stays");
    assert!(!s.settle_pending_file(f.tenant, "nope", FileStatus::Clean).await.unwrap());
}

/// References: unknown ids are skipped, a repeated reference counts once, topics list in name order up to the
/// limit, and a referenced file is never removed.
pub async fn file_references_link_and_list<S: FileStore>(f: Fixture<S>) {
    let s = &f.store;
    s.create_file(f.tenant, &record("f1", 7, 1_000)).await.unwrap();
    let ids = vec!["f1".to_owned(), "missing".to_owned()];
    assert_eq!(s.link_files(f.tenant, "grpB", 3, &ids, 2_000).await.unwrap(), 1);
    assert_eq!(s.link_files(f.tenant, "grpB", 3, &ids, 2_001).await.unwrap(), 0, "the same reference again");
    assert_eq!(s.link_files(f.tenant, "grpB", 4, &ids, 2_002).await.unwrap(), 1, "another message");
    assert_eq!(s.link_files(f.tenant, "grpA", 9, &ids, 2_003).await.unwrap(), 1);
    assert_eq!(s.file_topics(f.tenant, "f1", 10).await.unwrap(), vec!["grpA".to_owned(), "grpB".to_owned()]);
    assert_eq!(s.file_topics(f.tenant, "f1", 1).await.unwrap(), vec!["grpA".to_owned()]);
    assert!(s.file_topics(f.tenant, "missing", 10).await.unwrap().is_empty());
    assert!(!s.delete_unreferenced_file(f.tenant, "f1").await.unwrap(), "a referenced file stays");
    assert!(s.get_file(f.tenant, "f1").await.unwrap().is_some());

    // Deleted messages forget their references: by range, then a whole topic.
    let ranges = [SeqRange { low: 1, hi: 4 }];
    assert_eq!(s.unlink_files(f.tenant, "grpB", Some(&ranges)).await.unwrap(), 1, "seq 3 of grpB, not seq 4");
    assert_eq!(s.unlink_files(f.other_tenant, "grpA", None).await.unwrap(), 0, "another tenant's topic of that name");
    assert_eq!(s.file_topics(f.tenant, "f1", 10).await.unwrap(), vec!["grpA".to_owned(), "grpB".to_owned()]);
    assert_eq!(s.unlink_files(f.tenant, "grpB", None).await.unwrap(), 1);
    assert_eq!(s.unlink_files(f.tenant, "grpA", None).await.unwrap(), 1);
    assert!(s.file_topics(f.tenant, "f1", 10).await.unwrap().is_empty());
    assert!(s.delete_unreferenced_file(f.tenant, "f1").await.unwrap(), "collectable once nothing references it");
}

/// What garbage collection sees and removes: files created before the bound that nothing references and that
/// are not public, oldest first, up to the limit; the removal itself refuses a referenced or public file.
pub async fn file_unreferenced_are_listed_oldest_first<S: FileStore>(f: Fixture<S>) {
    let s = &f.store;
    for (id, created) in [("old2", 200), ("old1", 100), ("linked", 150), ("avatar", 120), ("young", 900)] {
        s.create_file(f.tenant, &record(id, 7, created)).await.unwrap();
    }
    s.link_files(f.tenant, "grpA", 1, &["linked".to_owned()], 300).await.unwrap();
    s.set_file_public(f.tenant, "avatar").await.unwrap();
    let ids = |v: Vec<FileRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(s.unreferenced_files(f.tenant, 500, 10).await.unwrap()), ["old1", "old2"]);
    assert_eq!(ids(s.unreferenced_files(f.tenant, 500, 1).await.unwrap()), ["old1"]);
    assert_eq!(ids(s.unreferenced_files(f.tenant, 1_000, 10).await.unwrap()), ["old1", "old2", "young"]);
    assert!(s.unreferenced_files(f.tenant, 100, 10).await.unwrap().is_empty(), "the bound is exclusive");
    assert!(!s.delete_unreferenced_file(f.tenant, "linked").await.unwrap());
    assert!(!s.delete_unreferenced_file(f.tenant, "avatar").await.unwrap());
    assert!(s.delete_unreferenced_file(f.tenant, "old1").await.unwrap());
    assert!(!s.delete_unreferenced_file(f.tenant, "old1").await.unwrap(), "gone already");
    assert_eq!(s.get_file(f.tenant, "old1").await.unwrap(), None);
    assert_eq!(ids(s.unreferenced_files(f.tenant, 1_000, 10).await.unwrap()), ["old2", "young"]);
}

/// Uploads are counted per uploader from a time on; tenants never see each other's files.
pub async fn file_uploads_counted_and_tenants_isolated<S: FileStore>(f: Fixture<S>) {
    let s = &f.store;
    for (id, who, at) in [("a", 7, 100), ("b", 7, 200), ("c", 7, 300), ("d", 8, 300)] {
        s.create_file(f.tenant, &record(id, who, at)).await.unwrap();
    }
    assert_eq!(s.count_uploads(f.tenant, UserId(7), 200).await.unwrap(), 2);
    assert_eq!(s.count_uploads(f.tenant, UserId(7), 0).await.unwrap(), 3);
    assert_eq!(s.count_uploads(f.tenant, UserId(8), 0).await.unwrap(), 1);
    assert_eq!(s.get_file(f.other_tenant, "a").await.unwrap(), None);
    assert_eq!(s.count_uploads(f.other_tenant, UserId(7), 0).await.unwrap(), 0);
    s.create_file(f.other_tenant, &record("a", 9, 100)).await.unwrap();
    assert_eq!(s.get_file(f.tenant, "a").await.unwrap().unwrap().uploader, UserId(7), "same id, other tenant");
    s.link_files(f.other_tenant, "grpX", 1, &["a".to_owned()], 1).await.unwrap();
    assert!(s.file_topics(f.tenant, "a", 10).await.unwrap().is_empty());
    assert!(!s.unreferenced_files(f.tenant, 1_000, 10).await.unwrap().is_empty());
    assert!(s.unreferenced_files(f.other_tenant, 1_000, 10).await.unwrap().is_empty());
    s.create_file(f.other_tenant, &record("b", 9, 100)).await.unwrap();
    assert!(s.delete_unreferenced_file(f.other_tenant, "b").await.unwrap());
    assert!(s.get_file(f.tenant, "b").await.unwrap().is_some(), "the other tenant's removal leaves this one's");
}

fn chunks(data: &[u8], size: usize) -> ByteStream {
    let parts: Vec<Result<bytes::Bytes, BlobError>> =
        data.chunks(size).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
    Box::pin(futures_util::stream::iter(parts))
}

async fn read_all<B: BlobStore>(store: &B, key: &str, range: Option<(u64, Option<u64>)>) -> (u64, u64, u64, Vec<u8>) {
    use futures_util::StreamExt;
    let mut read = store.get_blob(key, range).await.unwrap_or_else(|e| panic!("reading {key}: {e}"));
    let mut out = Vec::new();
    while let Some(chunk) = read.body.next().await {
        out.extend_from_slice(&chunk.expect("a chunk"));
    }
    (read.size, read.start, read.end, out)
}

/// A put reads back whole and by ranges (bounded, open, clamped at the end); a missing key is `NotFound`; a
/// delete removes it and deleting again is no error.
pub async fn blob_round_trip_and_ranges<B: BlobStore>(store: B) {
    let key = format!("1/rt-{}", std::process::id());
    let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    assert_eq!(store.put_blob(&key, chunks(&data, 777)).await.unwrap(), 10_000);
    assert_eq!(read_all(&store, &key, None).await, (10_000, 0, 10_000, data.clone()));
    assert_eq!(read_all(&store, &key, Some((2, Some(6)))).await, (10_000, 2, 6, data[2..6].to_vec()));
    assert_eq!(read_all(&store, &key, Some((9_990, None))).await, (10_000, 9_990, 10_000, data[9_990..].to_vec()));
    let clamped = read_all(&store, &key, Some((9_000, Some(20_000)))).await;
    assert_eq!((clamped.1, clamped.2, clamped.3.len()), (9_000, 10_000, 1_000), "an end past the size is clamped");
    let missing = store.get_blob("1/never-stored", None).await;
    assert!(matches!(missing, Err(BlobError::NotFound)), "{missing:?}");
    store.delete_blob(&key).await.unwrap();
    assert!(matches!(store.get_blob(&key, None).await, Err(BlobError::NotFound)));
    store.delete_blob(&key).await.unwrap();
}

/// A stream that fails part way stores nothing, also past the first part of a multi-part upload; the key is
/// free for a later upload.
pub async fn blob_failed_upload_leaves_nothing<B: BlobStore>(store: B) {
    use futures_util::StreamExt;
    let key = format!("1/failed-{}", std::process::id());
    for before_failing in [3usize, 7 * 1024 * 1024] {
        let good = chunks(&vec![1u8; before_failing], 64 * 1024);
        let bad: ByteStream = Box::pin(futures_util::stream::iter([Err(BlobError::Aborted("client left".into()))]));
        let result = store.put_blob(&key, Box::pin(good.chain(bad))).await;
        assert!(matches!(result, Err(BlobError::Aborted(_))), "{result:?}");
        let read = store.get_blob(&key, None).await;
        assert!(matches!(read, Err(BlobError::NotFound)), "after {before_failing} bytes: {read:?}");
    }
    assert_eq!(store.put_blob(&key, chunks(b"ok", 2)).await.unwrap(), 2);
    assert_eq!(read_all(&store, &key, None).await.3, b"ok");
    store.delete_blob(&key).await.unwrap();
}

/// An object larger than two S3 parts round trips byte for byte, and a range across a part boundary reads the
/// right bytes.
pub async fn blob_large_object_spans_parts<B: BlobStore>(store: B) {
    let key = format!("2/large-{}", std::process::id());
    let data: Vec<u8> = (0..12 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    assert_eq!(store.put_blob(&key, chunks(&data, 64 * 1024)).await.unwrap(), data.len() as u64);
    let (size, _, _, whole) = read_all(&store, &key, None).await;
    assert_eq!(size, data.len() as u64);
    assert!(whole == data, "the object must read back byte for byte");
    let at = 5 * 1024 * 1024 - 10;
    assert_eq!(read_all(&store, &key, Some((at, Some(at + 20)))).await.3, data[at as usize..at as usize + 20]);
    store.delete_blob(&key).await.unwrap();
}
