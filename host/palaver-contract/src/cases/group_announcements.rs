//! Contract cases for announcements: versions bumped by edits, removals never listed again, the listing order,
//! read marks whose first time is kept (also under races), and content that round-trips as JSON.
//! [`crate::group_contract_tests!`] runs them against any `GroupStore`.

use super::assert_not_found;
use super::groups::{A, B, C, D, G, H};
use crate::data::T0;
use crate::{Fixture, GroupStorage};
use palaver_core::ports::{Announcement, AnnouncementDraft, AnnouncementView, GroupStore};
use palaver_core::{TenantId, UnixMillis, UserId};
use serde_json::json;

/// A draft whose title and text are `title`.
fn draft(title: &str, pinned: bool) -> AnnouncementDraft {
    AnnouncementDraft { title: Some(title.to_owned()), content: json!({ "txt": title }), pinned }
}

/// Adds an announcement by A.
async fn post<S: GroupStore>(
    s: &S,
    t: TenantId,
    topic: &str,
    title: &str,
    pinned: bool,
    at: UnixMillis,
) -> Announcement {
    s.add_announcement(t, topic, A, &draft(title, pinned), at).await.unwrap()
}

/// The ids of the group's announcements in listing order, as `viewer` sees them.
async fn listed<S: GroupStore>(s: &S, t: TenantId, topic: &str, viewer: UserId, limit: usize) -> Vec<i64> {
    let views = s.list_announcements(t, topic, viewer, limit).await.unwrap();
    views.into_iter().map(|v| v.announcement.id).collect()
}

/// A new announcement is version 1; every edit replaces its text and flags and bumps the version; a removed
/// one can be neither edited nor listed, and another group's id is never found.
pub async fn group_announcement_edit_and_remove<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let a = post(s, t, G, "Rules", false, T0).await;
    let want = Announcement {
        id: a.id,
        topic: G.to_owned(),
        author: A,
        title: Some("Rules".to_owned()),
        content: json!({ "txt": "Rules" }),
        pinned: false,
        version: 1,
        created: T0,
        updated: T0,
    };
    assert_eq!(a, want);
    let edit = AnnouncementDraft { title: None, content: json!("Be kind"), pinned: true };
    let edited = s.update_announcement(t, G, a.id, &edit, T0 + 5).await.unwrap();
    let v2 = Announcement { title: None, content: json!("Be kind"), pinned: true, version: 2, updated: T0 + 5, ..want };
    assert_eq!(edited, v2);
    let v3 = s.update_announcement(t, G, a.id, &draft("Rules v3", false), T0 + 6).await.unwrap();
    assert_eq!((v3.version, v3.title.as_deref(), v3.pinned, v3.created), (3, Some("Rules v3"), false, T0));
    assert_not_found(s.update_announcement(t, H, a.id, &edit, T0 + 7).await, "another group's id");
    assert!(!s.delete_announcement(t, H, a.id, T0 + 7).await.unwrap(), "another group's id");
    let views = s.list_announcements(t, G, B, 10).await.unwrap();
    assert_eq!(views, vec![AnnouncementView { announcement: v3, read: None, reads: 0 }]);

    assert!(s.delete_announcement(t, G, a.id, T0 + 9).await.unwrap());
    assert!(!s.delete_announcement(t, G, a.id, T0 + 10).await.unwrap(), "removed already");
    assert_not_found(s.update_announcement(t, G, a.id, &edit, T0 + 10).await, "a removed one");
    assert!(s.list_announcements(t, G, B, 10).await.unwrap().is_empty(), "a removed one is not listed");
    assert_not_found(s.update_announcement(t, G, a.id + 1000, &edit, T0 + 10).await, "an unknown id");
}

/// Pinned announcements come first, then the rest; each part newest first; the limit cuts the list.
pub async fn group_announcements_list_pinned_first<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let one = post(s, t, G, "one", false, T0).await;
    let two = post(s, t, G, "two", true, T0 + 1).await;
    let three = post(s, t, G, "three", false, T0 + 2).await;
    let four = post(s, t, G, "four", true, T0 + 3).await;
    let other = post(s, t, H, "other", true, T0 + 4).await;
    assert_eq!(listed(s, t, G, B, 10).await, vec![four.id, two.id, three.id, one.id]);
    assert_eq!(listed(s, t, G, B, 3).await, vec![four.id, two.id, three.id], "the limit");
    assert!(listed(s, t, G, B, 0).await.is_empty(), "a zero limit");
    s.update_announcement(t, G, one.id, &draft("one", true), T0 + 5).await.unwrap();
    assert_eq!(listed(s, t, G, B, 10).await, vec![four.id, two.id, one.id, three.id], "pinned by an edit");
    s.delete_announcement(t, G, four.id, T0 + 6).await.unwrap();
    assert_eq!(listed(s, t, G, C, 10).await, vec![two.id, one.id, three.id]);
    assert_eq!(listed(s, t, H, B, 10).await, vec![other.id], "only the group's own");
}

/// The first read is kept: a second read reports false and changes nothing; each viewer sees their own mark and
/// everyone sees how many read it. Only a live announcement of the group can be marked.
pub async fn group_announcement_read_marks<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let a = post(s, t, G, "a", false, T0).await;
    let b = post(s, t, G, "b", false, T0 + 1).await;
    assert!(s.mark_announcement_read(t, G, a.id, B, T0 + 10).await.unwrap(), "the first read");
    assert!(!s.mark_announcement_read(t, G, a.id, B, T0 + 20).await.unwrap(), "read already");
    assert!(s.mark_announcement_read(t, G, a.id, C, T0 + 30).await.unwrap());
    let seen = |views: Vec<AnnouncementView>| views.into_iter().map(|v| (v.announcement.id, v.read, v.reads)).collect();
    let as_b: Vec<_> = seen(s.list_announcements(t, G, B, 10).await.unwrap());
    assert_eq!(as_b, vec![(b.id, None, 0), (a.id, Some(T0 + 10), 2)], "the first time is kept");
    let as_c: Vec<_> = seen(s.list_announcements(t, G, C, 10).await.unwrap());
    assert_eq!(as_c, vec![(b.id, None, 0), (a.id, Some(T0 + 30), 2)]);
    let as_d: Vec<_> = seen(s.list_announcements(t, G, D, 10).await.unwrap());
    assert_eq!(as_d, vec![(b.id, None, 0), (a.id, None, 2)], "an unread viewer still sees the count");

    assert_not_found(s.mark_announcement_read(t, H, a.id, B, T0 + 40).await, "another group's id");
    assert_not_found(s.mark_announcement_read(t, G, b.id + 1000, B, T0 + 40).await, "an unknown id");
    s.delete_announcement(t, G, b.id, T0 + 41).await.unwrap();
    assert_not_found(s.mark_announcement_read(t, G, b.id, B, T0 + 42).await, "a removed one");
    let edited = s.update_announcement(t, G, a.id, &draft("a, edited", false), T0 + 43).await.unwrap();
    let views = s.list_announcements(t, G, B, 10).await.unwrap();
    assert_eq!(views, vec![AnnouncementView { announcement: edited, read: Some(T0 + 10), reads: 2 }]);
}

/// Two first reads by the same member racing: exactly one reports the first read, and one mark is stored.
pub async fn group_announcement_concurrent_reads_mark_once<S: GroupStorage>(fx: Fixture<S>) {
    let t = fx.tenant;
    for round in 0..6 {
        let a = post(&fx.store, t, G, "race", false, T0 + round).await;
        let race = [T0 + 10, T0 + 20].map(|at| {
            let s = fx.store.clone();
            tokio::spawn(async move { (at, s.mark_announcement_read(t, G, a.id, B, at).await.unwrap()) })
        });
        let mut first = Vec::new();
        for task in race {
            let (at, was_first) = task.await.unwrap();
            if was_first {
                first.push(at);
            }
        }
        assert_eq!(first.len(), 1, "one first read in round {round}");
        let views = fx.store.list_announcements(t, G, B, 100).await.unwrap();
        let view = views.into_iter().find(|v| v.announcement.id == a.id).expect("listed");
        assert_eq!((view.read, view.reads), (Some(first[0]), 1), "the winner's time, stored once");
    }
}

/// Content is stored as JSON and read back equal, whatever its shape: Drafty with nested objects, unicode,
/// escapes, numbers, nulls and empty containers, or a plain string.
pub async fn group_announcement_content_round_trips<S: GroupStorage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    let drafty = json!({
        "txt": "Hello 世界 👋 \"quoted\" \\ back\nslash",
        "fmt": [{ "at": 0, "len": 5, "tp": "ST" }, { "at": 6, "len": 2, "key": 0 }],
        "ent": [{ "tp": "LN", "data": { "url": "https://example.com/?a=1&b=2" } }],
        "n": -1.5,
        "big": 9_007_199_254_740_993_i64,
        "nested": { "empty": {}, "list": [], "null": null, "yes": true }
    });
    let first =
        AnnouncementDraft { title: Some("Ünïcødé title".to_owned()), content: drafty.clone(), pinned: true };
    let a = s.add_announcement(t, G, A, &first, T0).await.unwrap();
    assert_eq!((a.content.clone(), a.title.as_deref()), (drafty.clone(), Some("Ünïcødé title")));
    let listed = s.list_announcements(t, G, B, 10).await.unwrap();
    assert_eq!(listed[0].announcement, a, "read back equal");

    let plain = AnnouncementDraft { title: None, content: json!("just text"), pinned: false };
    let edited = s.update_announcement(t, G, a.id, &plain, T0 + 1).await.unwrap();
    assert_eq!(edited.content, json!("just text"));
    let listed = s.list_announcements(t, G, B, 10).await.unwrap();
    assert_eq!(listed[0].announcement, edited, "the edit read back equal");
}
