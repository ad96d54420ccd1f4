//! A group's member list, paged with a stable cursor from a cached snapshot, and its announcements.
//!
//! The snapshot sits beside the topic's cached members and is dropped with them by every membership, role
//! and mute change on every node, so a page never shows a role or mute older than the change that was
//! answered. Nothing in a page depends on who looks yet, so one snapshot per group serves every viewer. The
//! cursor is the last user id of the previous page: members joining or leaving meanwhile shift nothing.

use super::group::{Group, load};
use super::{BizError, BizResult, Cx, body, next_cursor, time};
use palaver_api::bodies as b;
use palaver_api::facts::{AnnouncementFacts, DraftEditFacts, DraftFacts};
use palaver_api::{CommandName as C, Facts, Reason};
use palaver_core::ports::{Announcement, AnnouncementDraft, AnnouncementView};
use palaver_core::{AccessMode, StoreError, UnixMillis, UserId};
use serde_json::{Value, json};
use std::sync::Arc;

/// The largest announcement content the host stores, in bytes of JSON, whatever the rules allow.
const MAX_ANNOUNCEMENT: usize = 32 * 1024;

/// One member in the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct RosterEntry {
    user: UserId,
    joined: UnixMillis,
    mode: AccessMode,
}

pub(super) async fn list(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let (cursor, limit) = (cx.user_cursor()?, cx.limit()?);
    cx.ask(Facts::GroupMemberList(g.only(cx))).await?;
    let roster = roster(cx, &g).await?;
    let start = match cursor {
        Some(c) => roster.partition_point(|e| e.user <= c),
        None => 0,
    };
    let gate = cx.svc.gate(cx.tenant, g.name()).await?;
    let rows = &roster[start..roster.len().min(start + limit)];
    let members = rows
        .iter()
        .map(|e| {
            let mute = gate.mute_of(e.user, cx.now);
            b::Member {
                user: e.user.to_string(),
                // Roles are read fresh for every command, so a page never shows a role older than the answer.
                role: g.role_of(e.user).as_str().to_owned(),
                joined: time(e.joined),
                mode: e.mode.to_string(),
                muted: mute.is_some(),
                muted_until: mute.and_then(|m| m.until).map(time),
            }
        })
        .collect();
    let next = next_cursor(rows.len(), limit, rows.last().map(|e| e.user.to_string()));
    Ok(body(&b::MemberPage { members, next_cursor: next, total: roster.len() as u64 }))
}

/// The group's members sorted by user id, from the cache or the store.
async fn roster(cx: &Cx<'_>, g: &Group) -> BizResult<Arc<Vec<RosterEntry>>> {
    let topic = cx.svc.topics.get(cx.tenant, g.name());
    let gov = cx.svc.governance(cx.tenant, g.name());
    let fresh = |at: i64| gov.snapshot_fresh(at, cx.now);
    let generation = match topic.cached(|c| &mut c.roster, fresh) {
        Ok(roster) => return Ok(roster),
        Err(generation) => generation,
    };
    let subs = gov.subscriptions().await?;
    let mut entries: Vec<RosterEntry> =
        subs.iter().map(|s| RosterEntry { user: s.user, joined: s.created, mode: s.mode() }).collect();
    entries.sort_by_key(|e| e.user);
    let r = Arc::new(entries);
    topic.store(|c| &mut c.roster, generation, r.clone(), cx.now);
    Ok(r)
}

pub(super) async fn announcements(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let store = cx.svc.governance(cx.tenant, g.name());
    let not_found = |id: i64| BizError::new(Reason::AnnouncementNotFound, format!("no announcement {id}"));
    match cx.command {
        C::GroupAnnouncementList => {
            let limit = cx.limit()?;
            cx.ask(Facts::GroupAnnouncementList(g.only(cx))).await?;
            let list = store.announcements(cx.actor, limit).await?;
            Ok(body(&b::AnnouncementList { announcements: list.iter().map(view_body).collect() }))
        }
        C::GroupAnnouncementCreate => {
            let draft = draft(cx)?;
            let (content_chars, content_bytes) = draft_size(&draft);
            let facts = DraftFacts { group: g.facts(cx), content_chars, content_bytes, pinned: draft.pinned };
            cx.ask(Facts::GroupAnnouncementCreate(facts)).await?;
            let a = store.announce(cx.actor, &draft, cx.now).await?;
            let a = body(&announcement_body(&a));
            cx.to_topic(g.name(), "group.announcement.created", &json!({ "topic": g.name(), "announcement": a }));
            Ok(a)
        }
        C::GroupAnnouncementUpdate => {
            let id = cx.need_id("id")?;
            let draft = draft(cx)?;
            let (content_chars, content_bytes) = draft_size(&draft);
            let group = g.facts(cx);
            let facts =
                DraftEditFacts { group, announcement_id: id, content_chars, content_bytes, pinned: draft.pinned };
            cx.ask(Facts::GroupAnnouncementUpdate(facts)).await?;
            let a = match store.update_announcement(id, &draft, cx.now).await {
                Ok(a) => a,
                Err(StoreError::NotFound) => return Err(not_found(id)),
                Err(e) => return Err(e.into()),
            };
            let a = body(&announcement_body(&a));
            cx.to_topic(g.name(), "group.announcement.updated", &json!({ "topic": g.name(), "announcement": a }));
            Ok(a)
        }
        C::GroupAnnouncementDelete => {
            let id = cx.need_id("id")?;
            cx.ask(Facts::GroupAnnouncementDelete(AnnouncementFacts { group: g.facts(cx), announcement_id: id }))
                .await?;
            if !store.delete_announcement(id, cx.now).await? {
                return Err(not_found(id));
            }
            cx.to_topic(g.name(), "group.announcement.deleted", &json!({ "topic": g.name(), "id": id }));
            Ok(body(&b::AnnouncementDeleted { deleted: id }))
        }
        C::GroupAnnouncementRead => {
            let id = cx.need_id("id")?;
            cx.ask(Facts::GroupAnnouncementRead(AnnouncementFacts { group: g.facts(cx), announcement_id: id })).await?;
            let first = match store.mark_announcement_read(id, cx.actor, cx.now).await {
                Ok(f) => f,
                Err(StoreError::NotFound) => return Err(not_found(id)),
                Err(e) => return Err(e.into()),
            };
            // A read mark is the reader's own: it reaches their other devices, not the group.
            if first {
                cx.to_user(cx.actor, "group.announcement.read", &json!({ "topic": g.name(), "id": id }));
            }
            Ok(body(&b::AnnouncementRead { id, first_read: first }))
        }
        other => Err(super::unknown(other)),
    }
}

fn draft(cx: &Cx<'_>) -> BizResult<AnnouncementDraft> {
    let content = match cx.args.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => Value::String(s.clone()),
        Some(v @ Value::Object(_)) => v.clone(),
        _ => return Err(BizError::new(Reason::ArgumentRequired, "`content` is text or a Drafty object")),
    };
    if content.to_string().len() > MAX_ANNOUNCEMENT {
        return Err(BizError::new(
            Reason::AnnouncementTooLarge,
            format!("an announcement is at most {MAX_ANNOUNCEMENT} bytes"),
        ));
    }
    let title = cx.str_arg("title").map(str::to_owned);
    if title.as_ref().is_some_and(|t| t.chars().count() > 255) {
        return Err(BizError::new(Reason::TitleTooLong, "a title is at most 255 characters"));
    }
    let pinned = cx.bool_arg("pinned")?.unwrap_or(false);
    Ok(AnnouncementDraft { title, content, pinned })
}

/// The content's length in characters (of its text) and in bytes of JSON, for the rules.
fn draft_size(d: &AnnouncementDraft) -> (u64, u64) {
    let chars = match &d.content {
        Value::String(s) => s.chars().count(),
        v => v.get("txt").and_then(Value::as_str).map_or(0, |t| t.chars().count()),
    };
    (chars as u64, d.content.to_string().len() as u64)
}

fn announcement_body(a: &Announcement) -> b::Announcement {
    b::Announcement {
        id: a.id,
        topic: a.topic.clone(),
        author: a.author.to_string(),
        title: a.title.clone(),
        content: a.content.clone(),
        pinned: a.pinned,
        version: i64::from(a.version),
        created: time(a.created),
        updated: time(a.updated),
    }
}

fn view_body(v: &AnnouncementView) -> b::AnnouncementView {
    b::AnnouncementView { announcement: announcement_body(&v.announcement), read: v.read.map(time), reads: v.reads }
}
