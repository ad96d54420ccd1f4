//! What each admin command type does, through the service code the other fronts use: session control and
//! account state (`delivery/control.rs`), the group governance commands run as the Admin side
//! (`Service::run_as_admin`), message review (`Service::set_message_audit`), Tinode's own topic deletion signals,
//! and the notification store. Realtime delivery is the existing events: session control, `{pres gone}`, and the
//! business events `group.deleted`, `group.member.removed`, `group.role.updated`, `group.mute.updated`.
//!
//! Every effect is safe to repeat after a crash between the effect and the ledger's final write (the command is
//! then claimed again once its lease ends): it sets a state rather than toggling one.

use super::AdminCommand;
use crate::business::{BizError, BizResult};
use crate::delivery::event::{BusinessTarget, Event};
use crate::error::ServiceError;
use crate::{Eviction, Service};
use palaver_api::{CommandName, Reason};
use palaver_core::ports::{ControlScope, FileStatus, QueueRecord, QueueTopic, REPORT_CLOSED, Resolution};
use palaver_core::{AuditStatus, DeleteMessages, SeqRange, StoreError, TenantId, UserId};
use palaver_proto::MsgPres;
use serde_json::{Value, json};

/// Runs `cmd`'s effect in `tenant` and answers its `detail`.
pub(super) async fn run(svc: &Service, tenant: TenantId, cmd: &AdminCommand) -> BizResult<Value> {
    let p = Payload(&cmd.payload);
    match cmd.kind.as_str() {
        "user.disable" => {
            let user = p.user("user")?;
            let closed = svc.set_account_state(tenant, user, false).await.map_err(user_error)?;
            Ok(json!({ "user": user.to_string(), "state": "disabled", "closed_here": closed }))
        }
        "user.enable" => {
            let user = p.user("user")?;
            svc.set_account_state(tenant, user, true).await.map_err(user_error)?;
            Ok(json!({ "user": user.to_string(), "state": "active" }))
        }
        "user.password.reset" => password_reset(svc, tenant, p.user("user")?, p.need("password")?).await,
        "user.device.revoke" => {
            let user = p.user("user")?;
            let device = p.need("device")?;
            if device.len() > 128 {
                return Err(BizError::new(Reason::BadDevice, "`device` is at most 128 bytes"));
            }
            active_user(svc, tenant, user).await?;
            let reason = p.str("reason").map_or_else(|| "device revoked".to_owned(), |r| r.chars().take(200).collect());
            let ev = Eviction { device: Some(device.to_owned()), revoke_tokens: false, reason };
            let closed = svc.evict(tenant, user, ev).await.map_err(user_error)?;
            Ok(json!({ "user": user.to_string(), "device": device, "closed_here": closed }))
        }
        "user.delete" => {
            let user = p.user("user")?;
            let hard = match cmd.payload.get("hard") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(hard)) => *hard,
                Some(_) => return Err(BizError::new(Reason::BadArgument, "`hard` is true or false")),
            };
            let done = svc.delete_account(tenant, user, hard).await.map_err(user_error)?;
            Ok(done.detail(user))
        }
        "group.delete" => group_delete(svc, tenant, p.need("topic")?).await,
        "group.member.remove" => {
            svc.run_as_admin(tenant, CommandName::GroupMemberRemove, p.args(&["topic", "user"])).await
        }
        "group.admin.set" | "group.admin.remove" => {
            let mut args = p.args(&["topic", "user"]);
            args["role"] = json!(if cmd.kind == "group.admin.set" { "admin" } else { "member" });
            svc.run_as_admin(tenant, CommandName::GroupRoleSet, args).await
        }
        "group.member.mute" => {
            let duration = cmd.payload.get("duration_ms").and_then(Value::as_i64).filter(|d| *d >= 0);
            let duration = duration.ok_or_else(|| {
                BizError::new(Reason::BadDuration, "`duration_ms` is a number of milliseconds, 0 to unmute")
            })?;
            if duration == 0 {
                return svc.run_as_admin(tenant, CommandName::GroupMuteClear, p.args(&["topic", "user"])).await;
            }
            let mut args = p.args(&["topic", "user", "reason"]);
            args["duration_ms"] = json!(duration);
            svc.run_as_admin(tenant, CommandName::GroupMuteSet, args).await
        }
        "message.moderate" => moderate(svc, tenant, &p).await,
        "file.audit.update" => file_audit(svc, tenant, &p).await,
        "abuse.report.resolve" => resolve_report(svc, tenant, cmd, &p).await,
        other => Err(BizError::new(Reason::UnknownType, format!("unknown command type {other:?}"))),
    }
}

/// A command's payload and its typed fields.
struct Payload<'a>(&'a Value);

impl Payload<'_> {
    fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
    }

    fn need(&self, key: &str) -> BizResult<&str> {
        self.str(key).ok_or_else(|| BizError::new(Reason::ArgumentRequired, format!("payload.{key} is required")))
    }

    fn user(&self, key: &str) -> BizResult<UserId> {
        let raw = self.need(key)?;
        UserId::parse(raw).map_err(|_| BizError::new(Reason::BadUserId, format!("payload.{key} is not a user id")))
    }

    /// The named string fields, as a governance command's arguments.
    fn args(&self, keys: &[&str]) -> Value {
        let mut args = json!({});
        for k in keys {
            if let Some(v) = self.str(k) {
                args[*k] = json!(v);
            }
        }
        args
    }
}

/// Maps what the account calls answer: an unknown user is a rejection, storage trouble is transient.
fn user_error(e: ServiceError) -> BizError {
    match e {
        ServiceError::NotFound | ServiceError::UserNotFound => BizError::new(Reason::UserNotFound, "no such user"),
        ServiceError::Unavailable { .. } => BizError::new(Reason::Unavailable, "storage is unavailable; try again"),
        other => BizError::new(other.reason(), other.text()),
    }
}

async fn active_user(svc: &Service, tenant: TenantId, user: UserId) -> BizResult<()> {
    match svc.inner.ports.users.get_user(tenant, user).await? {
        Some(u) if u.state != palaver_core::RecordState::Deleted => Ok(()),
        _ => Err(BizError::new(Reason::UserNotFound, format!("no user {user}"))),
    }
}

/// A new password: stored (which bumps `auth_version`, revoking every token), the user's devices told
/// (`security.password_reset`), then every session closed on every node.
async fn password_reset(svc: &Service, tenant: TenantId, user: UserId, password: &str) -> BizResult<Value> {
    let chars = password.chars().count();
    if chars < crate::usecases::accounts::MIN_PASSWORD || password.len() > 1024 {
        let message = format!("a password is {}–1024 characters", crate::usecases::accounts::MIN_PASSWORD);
        return Err(BizError::new(Reason::BadPassword, message));
    }
    active_user(svc, tenant, user).await?;
    let inner = &svc.inner;
    let hash =
        inner.hasher.hash(password.to_owned()).await.map_err(|e| BizError::new(Reason::Internal, e.to_string()))?;
    // The command's own audit event commits with its result in the ledger (one write, exactly once per command).
    match inner.ports.users.set_secret(tenant, user, &hash, &[]).await {
        Ok(_) => {}
        Err(StoreError::NotFound) => {
            return Err(BizError::new(Reason::NoPasswordLogin, format!("{user} has no password login")));
        }
        Err(e) => return Err(e.into()),
    }
    let payload = json!({ "user_id": user.to_string() });
    inner.emit_business(tenant, BusinessTarget::User(user), "security.password_reset", &payload, None);
    let closed = inner.control(tenant, user, ControlScope::User, "password reset", None).await.map_err(user_error)?;
    Ok(json!({ "user": user.to_string(), "closed_here": closed }))
}

/// Deletes a group as its owner's `{del topic}` does, for every member: the topic and its history go, attached
/// sessions get Tinode's topic-gone signal, every member `{pres what:"gone"}` on `me` and `group.deleted`.
async fn group_delete(svc: &Service, tenant: TenantId, name: &str) -> BizResult<Value> {
    let inner = &svc.inner;
    let not_found = || BizError::new(Reason::GroupNotFound, format!("no group {name}"));
    if !name.starts_with("grp") {
        return Err(not_found());
    }
    inner.ports.topics.get_topic(tenant, name).await?.ok_or_else(not_found)?;
    let members: Vec<UserId> =
        inner.ports.subs.list_topic_subs(tenant, name).await?.into_iter().map(|s| s.user).collect();
    match inner.ports.topics.delete_topic(tenant, name).await {
        Ok(()) | Err(StoreError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    if let Err(e) = inner.ports.seq.forget(tenant, name).await {
        tracing::debug!(error = %e, "seq counter not dropped");
    }
    inner.dispatch(tenant, Event::TopicGone { topic: name.to_owned() }, None, None).await;
    let gone = MsgPres { topic: "me".into(), src: Some(name.to_owned()), what: "gone".into(), ..MsgPres::default() };
    inner.dispatch(tenant, Event::MePres { users: members.clone(), pres: gone }, None, None).await;
    let payload = json!({ "topic": name });
    for user in &members {
        inner.emit_business(tenant, BusinessTarget::User(*user), "group.deleted", &payload, None);
    }
    Ok(json!({ "topic": name, "members": members.len() }))
}

/// Releases or rejects a held message, or recalls any message: a hard delete for every reader, announced as
/// Tinode's `{pres what:"del"}` to attached sessions.
/// Sets an uploaded file's status (`clean`, `pending` or `blocked`). A block tells the sessions attached to every
/// topic whose messages reference the file, and its uploader's sessions, with the business event
/// `file.unavailable`; from then on every download answers 451.
async fn file_audit(svc: &Service, tenant: TenantId, p: &Payload<'_>) -> BizResult<Value> {
    let id = p.need("file")?;
    let status = p.need("status")?;
    let Some(status) = FileStatus::parse(status) else {
        return Err(BizError::new(Reason::BadFileStatus, format!("status {status:?}: clean, pending or blocked")));
    };
    let inner = &svc.inner;
    let Some(file) = inner.ports.files.get_file(tenant, id).await? else {
        return Err(BizError::new(Reason::FileNotFound, format!("no file {id}")));
    };
    if !inner.ports.files.set_file_status(tenant, id, status).await? {
        return Err(BizError::new(Reason::FileNotFound, format!("no file {id}")));
    }
    let mut notified = 0;
    if status == FileStatus::Blocked && file.status != FileStatus::Blocked {
        let reason = p.str("reason").unwrap_or_default();
        notified = inner.files(tenant).announce_blocked(&file, reason).await?;
    }
    Ok(json!({ "file": id, "status": status.as_str(), "topics_notified": notified }))
}

async fn moderate(svc: &Service, tenant: TenantId, p: &Payload<'_>) -> BizResult<Value> {
    let topic = p.need("topic")?;
    let seq = p.0.get("seq").and_then(Value::as_i64).filter(|s| *s > 0);
    let seq = seq.ok_or_else(|| BizError::new(Reason::BadSeq, "payload.seq is a positive integer"))?;
    let action = p.need("action")?;
    let review = |e: ServiceError| match e {
        ServiceError::TopicNotFound => BizError::new(Reason::TopicNotFound, format!("no topic {topic}")),
        ServiceError::NotFound => BizError::new(Reason::MessageNotFound, format!("no message {seq} in {topic}")),
        ServiceError::NotAllowed => BizError::new(Reason::NotHeld, "the message is not held for review"),
        other => user_error(other),
    };
    match action {
        "release" | "reject" => {
            let audit = if action == "release" { AuditStatus::Pass } else { AuditStatus::Reject };
            svc.set_message_audit(tenant, topic, seq, audit).await.map_err(review)?;
        }
        "recall" => {
            let inner = &svc.inner;
            let t = inner.ports.topics.get_topic(tenant, topic).await?;
            let t = t.ok_or_else(|| review(ServiceError::TopicNotFound))?;
            if seq > t.seq {
                return Err(review(ServiceError::NotFound));
            }
            let request = DeleteMessages {
                ranges: vec![SeqRange { low: seq, hi: seq + 1 }],
                hard: true,
                for_user: crate::ADMIN_ACTOR,
                when: crate::now_millis(),
                // Stored as recalled, by the admin side (the seed's `recalled_by` of a moderation).
                recalled_by: Some(crate::ADMIN_ACTOR),
            };
            let clear = inner.ports.messages.delete_messages(tenant, topic, &request).await?;
            inner.files(tenant).forget(topic, Some(&request.ranges)).await;
            let delseq = vec![palaver_proto::SeqRange { low: seq, hi: Some(seq + 1) }];
            let event = Event::Deleted { topic: topic.to_owned(), by: crate::ADMIN_ACTOR, hard: true, clear, delseq };
            inner.dispatch(tenant, event, None, None).await;
        }
        other => {
            return Err(BizError::new(Reason::BadAction, format!("action {other:?}: release, reject or recall")));
        }
    }
    Ok(json!({ "topic": topic, "seq": seq, "action": action }))
}

/// Closes a report (once), with its summary for the Admin side in the same write, then tells the reporter.
async fn resolve_report(svc: &Service, tenant: TenantId, cmd: &AdminCommand, p: &Payload<'_>) -> BizResult<Value> {
    let id = p.0.get("report");
    let id = id.and_then(Value::as_i64).or_else(|| id.and_then(Value::as_str).and_then(|s| s.parse().ok()));
    let id = id.filter(|i| *i > 0).ok_or_else(|| BizError::new(Reason::BadReport, "payload.report is a report id"))?;
    let resolution = p.need("resolution")?;
    if resolution.len() > 64 {
        return Err(BizError::new(Reason::BadResolution, "payload.resolution is at most 64 bytes"));
    }
    let note = p.str("note").map(|n| n.chars().take(2000).collect::<String>());
    let by = format!("{}:{}", cmd.actor.kind, cmd.actor.id);
    let res = Resolution { resolution: resolution.to_owned(), note: note.clone(), by, at: crate::now_millis() };
    let summary = report_event(tenant, id, "resolved", json!({ "resolution": resolution }));
    let report = match svc.inner.ports.business.reports.resolve_report(tenant, id, &res, &[summary]).await {
        Ok(r) => r,
        Err(StoreError::NotFound) => return Err(BizError::new(Reason::ReportNotFound, format!("no report {id}"))),
        Err(StoreError::Conflict(why)) if why == REPORT_CLOSED => {
            svc.inner.metrics.conditional_failed("report_resolution");
            return Err(BizError::new(Reason::ReportClosed, format!("report {id} is resolved already")));
        }
        Err(e) => return Err(e.into()),
    };
    let content = json!({ "report": id, "target_type": report.target_type.as_str(), "target": report.target,
        "resolution": resolution, "note": note });
    if let Err(e) = svc.notify_user(tenant, report.reporter, "report_resolved", content, None).await {
        tracing::warn!(error = %e, "the reporter's notification was not stored");
    }
    Ok(json!({ "report": id, "status": "resolved", "resolution": resolution }))
}

/// A new report as a summary for the Admin side (`im.admin.event`), keyed by its target.
pub(crate) fn report_created_event(tenant: TenantId, r: &palaver_core::ports::NewReport) -> QueueRecord {
    let body = json!({ "event": "report.state", "tenant_id": tenant.0.to_string(), "state": "open",
        "reporter": r.reporter.to_string(), "target_type": r.target_type.as_str(), "target": r.target,
        "reason": r.reason, "at": super::rfc3339(crate::now_millis()) });
    QueueRecord::new(QueueTopic::AdminEvent, format!("{}:report:{}", tenant.0, r.target), body.to_string().into_bytes())
}

/// A report's state change as a summary for the Admin side (`im.admin.event`).
pub(crate) fn report_event(tenant: TenantId, id: i64, state: &str, extra: Value) -> QueueRecord {
    let mut body = json!({ "event": "report.state", "tenant_id": tenant.0.to_string(), "report": id, "state": state,
        "at": super::rfc3339(crate::now_millis()) });
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    QueueRecord::new(QueueTopic::AdminEvent, format!("{}:report:{id}", tenant.0), body.to_string().into_bytes())
}
