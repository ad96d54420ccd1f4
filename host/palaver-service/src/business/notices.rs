//! System notifications: `notification.*` commands, and storing a notice with its realtime announcement.
//!
//! Notifications are a host feature that every tenant has, so these commands ask no rules. A new notice and
//! every read mark reach all of the user's devices on every node (`system_notification.created`,
//! `system_notification.read` with the new unread count), which is what clears a badge on the other devices.

use super::{BizError, BizResult, Cx, body, next_cursor, time};
use crate::Inner;
use crate::delivery::event::BusinessTarget;
use palaver_api::bodies as b;
use palaver_api::{CommandName as C, Reason};
use palaver_core::ports::{NewNotification, Notification};
use palaver_core::{StoreError, TenantId, UserId};
use serde_json::{Value, json};

/// The largest notification content accepted, in bytes of JSON.
const MAX_CONTENT: usize = 16 * 1024;

pub(super) async fn run(cx: &Cx<'_>) -> BizResult<Value> {
    let store = cx.svc.notices(cx.tenant, cx.actor);
    match cx.command {
        C::NotificationList => {
            let unread_only = cx.bool_arg("unread")?.unwrap_or(false);
            let (cursor, limit) = (cx.id_cursor()?, cx.limit()?);
            let (list, unread) = store.page(unread_only, cursor, limit, cx.now).await?;
            let next = next_cursor(list.len(), limit, list.last().map(|n| n.id));
            let notifications = list.iter().map(notice_body).collect();
            Ok(body(&b::NotificationPage { notifications, next_cursor: next, unread }))
        }
        C::NotificationUnread => Ok(body(&b::UnreadCount { unread: store.unread(cx.now).await? })),
        C::NotificationRead => {
            let id = cx.need_id("id")?;
            let changed = match store.mark_read(id, cx.now).await {
                Ok(c) => c,
                Err(StoreError::NotFound) => {
                    return Err(BizError::new(Reason::NotificationNotFound, format!("no notification {id}")));
                }
                Err(e) => return Err(e.into()),
            };
            let unread = store.unread(cx.now).await?;
            if changed {
                cx.to_user(cx.actor, "system_notification.read", &json!({ "id": id, "unread": unread }));
            }
            Ok(body(&b::NotificationMarked { id, changed, unread }))
        }
        C::NotificationReadAll => {
            let marked = store.mark_all_read(cx.now).await?;
            if marked > 0 {
                cx.to_user(cx.actor, "system_notification.read", &json!({ "all": true, "unread": 0 }));
            }
            Ok(body(&b::AllMarked { marked, unread: 0 }))
        }
        other => Err(super::unknown(other)),
    }
}

/// Stores a notice and announces it to the user's devices; returns its id.
pub(super) async fn store(
    svc: &Inner,
    tenant: TenantId,
    user: UserId,
    kind: &str,
    content: Value,
    source_topic: Option<String>,
    from: Option<UserId>,
) -> BizResult<i64> {
    if kind.is_empty() || kind.len() > 32 {
        return Err(BizError::new(Reason::BadKind, "a notification kind is 1–32 bytes"));
    }
    if content.to_string().len() > MAX_CONTENT {
        return Err(BizError::new(
            Reason::ContentTooLarge,
            format!("notification content is at most {MAX_CONTENT} bytes"),
        ));
    }
    let new = NewNotification { user, kind: kind.to_owned(), content, source_topic, source_seq: None, expires: None };
    let n = svc.notices(tenant, user).add(&new, crate::now_millis()).await?;
    let payload = json!({ "notification": body(&notice_body(&n)) });
    svc.emit_business(tenant, BusinessTarget::User(user), "system_notification.created", &payload, from);
    Ok(n.id)
}

fn notice_body(n: &Notification) -> b::Notification {
    b::Notification {
        id: n.id,
        kind: n.kind.clone(),
        content: n.content.clone(),
        topic: n.source_topic.clone(),
        seq: n.source_seq,
        read: n.read.map(time),
        created: time(n.created),
        expires: n.expires.map(time),
    }
}
