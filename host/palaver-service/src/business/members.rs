//! A group's member list, paged with a stable cursor from a cached snapshot, and its announcements.
//!
//! The snapshot sits beside the topic's cached members and is dropped with them by every membership, role
//! and mute change on every node, so a page never shows a role or mute older than the change that was
//! answered. Nothing in a page depends on who looks yet, so one snapshot per group serves every viewer. The
//! cursor is the last user id of the previous page: members joining or leaving meanwhile shift nothing.

use super::groups::{Group, load};
use super::{BizError, BizResult, Cx, page, ts};
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
    cx.ask(g.facts(cx, json!({}))).await?;
    let roster = roster(cx, &g).await?;
    let start = match cursor {
        Some(c) => roster.partition_point(|e| e.user <= c),
        None => 0,
    };
    let gate = cx.svc.gate(cx.tenant, g.name()).await?;
    let rows = &roster[start..roster.len().min(start + limit)];
    let items: Vec<Value> = rows
        .iter()
        .map(|e| {
            let mute = gate.mute_of(e.user, cx.now);
            json!({
                "user": e.user.to_string(),
                // Roles are read fresh for every command, so a page never shows a role older than the answer.
                "role": g.role_of(e.user).as_str(),
                "joined": ts(e.joined),
                "mode": e.mode.to_string(),
                "muted": mute.is_some(),
                "muted_until": mute.and_then(|m| m.until).map(ts),
            })
        })
        .collect();
    let last = rows.last().map(|e| e.user.to_string());
    let mut v = page("members", items, limit, last);
    v["total"] = json!(roster.len());
    Ok(v)
}

/// The group's members sorted by user id, from the cache or the store.
async fn roster(cx: &Cx<'_>, g: &Group) -> BizResult<Arc<Vec<RosterEntry>>> {
    let lock = cx.svc.topics.get(cx.tenant, g.name());
    let mut state = lock.lock().await;
    let fresh = !cx.svc.ports.bus.is_shared() || cx.now - state.roster_at < crate::delivery::SHARED_MEMBERS_MAX_AGE_MS;
    if let Some(r) = state.roster.as_ref().filter(|_| fresh) {
        return Ok(r.clone());
    }
    let subs = cx.svc.ports.subs.list_topic_subs(cx.tenant, g.name()).await?;
    let mut entries: Vec<RosterEntry> =
        subs.iter().map(|s| RosterEntry { user: s.user, joined: s.created, mode: s.mode() }).collect();
    entries.sort_by_key(|e| e.user);
    let r = Arc::new(entries);
    state.roster = Some(r.clone());
    state.roster_at = cx.now;
    Ok(r)
}

pub(super) async fn announcements(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let store = &cx.svc.ports.business.groups;
    let not_found = |id: i64| BizError::new(404, "ANNOUNCEMENT_NOT_FOUND", format!("no announcement {id}"));
    match cx.command {
        "group.announcement.list" => {
            let limit = cx.limit()?;
            cx.ask(g.facts(cx, json!({}))).await?;
            let list = store.list_announcements(cx.tenant, g.name(), cx.actor, limit).await?;
            Ok(json!({ "announcements": list.iter().map(view_json).collect::<Vec<_>>() }))
        }
        "group.announcement.create" => {
            let draft = draft(cx)?;
            cx.ask(g.facts(cx, draft_facts(&draft))).await?;
            let a = store.add_announcement(cx.tenant, g.name(), cx.actor, &draft, cx.now).await?;
            let body = announcement_json(&a);
            cx.to_topic(g.name(), "group.announcement.created", &json!({ "topic": g.name(), "announcement": body }));
            Ok(body)
        }
        "group.announcement.update" => {
            let id = cx.need_id("id")?;
            let draft = draft(cx)?;
            let mut facts = draft_facts(&draft);
            facts["announcement_id"] = json!(id);
            cx.ask(g.facts(cx, facts)).await?;
            let a = match store.update_announcement(cx.tenant, g.name(), id, &draft, cx.now).await {
                Ok(a) => a,
                Err(StoreError::NotFound) => return Err(not_found(id)),
                Err(e) => return Err(e.into()),
            };
            let body = announcement_json(&a);
            cx.to_topic(g.name(), "group.announcement.updated", &json!({ "topic": g.name(), "announcement": body }));
            Ok(body)
        }
        "group.announcement.delete" => {
            let id = cx.need_id("id")?;
            cx.ask(g.facts(cx, json!({ "announcement_id": id }))).await?;
            if !store.delete_announcement(cx.tenant, g.name(), id, cx.now).await? {
                return Err(not_found(id));
            }
            cx.to_topic(g.name(), "group.announcement.deleted", &json!({ "topic": g.name(), "id": id }));
            Ok(json!({ "deleted": id }))
        }
        "group.announcement.read" => {
            let id = cx.need_id("id")?;
            cx.ask(g.facts(cx, json!({ "announcement_id": id }))).await?;
            let first = match store.mark_announcement_read(cx.tenant, g.name(), id, cx.actor, cx.now).await {
                Ok(f) => f,
                Err(StoreError::NotFound) => return Err(not_found(id)),
                Err(e) => return Err(e.into()),
            };
            // A read mark is the reader's own: it reaches their other devices, not the group.
            if first {
                cx.to_user(cx.actor, "group.announcement.read", &json!({ "topic": g.name(), "id": id }));
            }
            Ok(json!({ "id": id, "first_read": first }))
        }
        other => Err(super::unknown(other)),
    }
}

fn draft(cx: &Cx<'_>) -> BizResult<AnnouncementDraft> {
    let content = match cx.args.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => Value::String(s.clone()),
        Some(v @ Value::Object(_)) => v.clone(),
        _ => return Err(BizError::new(400, "ARGUMENT_REQUIRED", "`content` is text or a Drafty object")),
    };
    if content.to_string().len() > MAX_ANNOUNCEMENT {
        return Err(BizError::new(
            413,
            "ANNOUNCEMENT_TOO_LARGE",
            format!("an announcement is at most {MAX_ANNOUNCEMENT} bytes"),
        ));
    }
    let title = cx.str_arg("title").map(str::to_owned);
    if title.as_ref().is_some_and(|t| t.chars().count() > 255) {
        return Err(BizError::new(413, "TITLE_TOO_LONG", "a title is at most 255 characters"));
    }
    let pinned = cx.bool_arg("pinned")?.unwrap_or(false);
    Ok(AnnouncementDraft { title, content, pinned })
}

fn draft_facts(d: &AnnouncementDraft) -> Value {
    let chars = match &d.content {
        Value::String(s) => s.chars().count(),
        v => v.get("txt").and_then(Value::as_str).map_or(0, |t| t.chars().count()),
    };
    json!({ "content_chars": chars, "content_bytes": d.content.to_string().len(), "pinned": d.pinned })
}

fn announcement_json(a: &Announcement) -> Value {
    json!({
        "id": a.id,
        "topic": a.topic,
        "author": a.author.to_string(),
        "title": a.title,
        "content": a.content,
        "pinned": a.pinned,
        "version": a.version,
        "created": ts(a.created),
        "updated": ts(a.updated),
    })
}

fn view_json(v: &AnnouncementView) -> Value {
    let mut j = announcement_json(&v.announcement);
    j["read"] = v.read.map(ts).into();
    j["reads"] = json!(v.reads);
    j
}
