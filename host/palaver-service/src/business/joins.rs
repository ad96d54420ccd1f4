//! Membership changes of a group: adding members (invites, open joins, approved requests), join requests and
//! their decisions. The rules decide whether an invite takes effect at once or waits for an admin, and whether a
//! join is immediate, a request, or refused; the host guarantees one pending request per user and group and a
//! decision taken once.

use super::group::{Group, load};
use super::{BizError, BizResult, Cx, body, next_cursor, time};
use crate::delivery::event::Event;
use palaver_api::bodies as b;
use palaver_api::facts::{GroupRequestFacts, InviteFacts};
use palaver_api::{Facts, Reason};
use palaver_core::ports::{GroupRole, JoinDecision, JoinPolicy, JoinRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS};
use palaver_core::{StoreError, Subscription, UserId};
use palaver_proto::{AccessDelta, MsgPres};
use serde_json::{Value, json};

/// The most users one invite names.
const MAX_INVITE: usize = 50;

/// Subscribes `user` to the group with its default access and tells everyone. False if already a member.
async fn add_member(cx: &Cx<'_>, g: &Group, user: UserId) -> BizResult<bool> {
    let gov = cx.svc.governance(cx.tenant, g.name());
    if gov.subscription(user).await?.is_some() {
        return Ok(false);
    }
    // A member an admin removed comes back only through an admin: not by joining an open group on their own,
    // nor through a plain member's invite.
    let by_admin = g.role_of(cx.actor) >= GroupRole::Admin && cx.actor != user;
    if !by_admin && gov.was_removed(user).await? {
        return Err(BizError::new(Reason::MemberRemoved, "the user was removed from this group by an admin"));
    }
    if gov.is_full().await? {
        return Err(BizError::new(Reason::GroupFull, "the group has as many members as it may"));
    }
    if let Some(max) = cx.svc.subscriptions(cx.tenant).at_group_limit(user).await? {
        return Err(BizError::new(Reason::TooManyGroups, format!("the user already belongs to {max} groups")));
    }
    let mut mode = g.topic.defacs.auth;
    if cx.actor == user && !cx.admin {
        // A join on one's own answers to the join gates, as `{sub}` does.
        let subs = cx.svc.subscriptions(cx.tenant);
        mode = match subs.admit_join(user, g.name(), String::new(), None, mode).await {
            Ok(m) => m,
            // A gate's refusal, or a faulted gate failing closed (503): the command fails with the table's reason
            // for it and the gate's own words.
            Err(crate::ServiceError::Rejected { code, reason }) => {
                let r = if code.code() >= 500 { Reason::PluginUnavailable } else { Reason::RuleRefused };
                return Err(BizError::new(r, format!("before-subscribe: {reason}")));
            }
            Err(e) => return Err(e.into()),
        };
    }
    let sub = Subscription {
        topic: g.name().to_owned(),
        user,
        created: cx.now,
        updated: cx.now,
        deleted: None,
        want: mode,
        given: mode,
        read: 0,
        recv: 0,
        del_id: 0,
        private: None,
    };
    gov.subscribe(&sub).await?;
    cx.invalidate(g.name()).await;
    cx.svc.summarize_members(cx.tenant, g.name()).await;
    // Tinode clients learn of a new subscription from `{pres what:"acs"}` on `me`.
    let acs = MsgPres {
        topic: "me".into(),
        src: Some(g.name().to_owned()),
        what: "acs".into(),
        dacs: Some(AccessDelta { want: mode.to_string(), given: mode.to_string() }),
        act: Some(cx.actor.to_string()),
        ..MsgPres::default()
    };
    cx.svc.dispatch(cx.tenant, Event::MePres { users: vec![user], pres: acs }, None, Some(cx.actor)).await;
    cx.svc.enqueue_sub(cx.tenant, user, g.name(), Some(cx.actor));
    let payload = json!({ "topic": g.name(), "user_id": user.to_string(), "by": cx.actor.to_string() });
    cx.to_topic(g.name(), "group.member.added", &payload);
    cx.to_user(user, "group.member.added", &payload);
    Ok(true)
}

pub(super) async fn invite(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let users: Vec<UserId> = match cx.args.get("users").and_then(Value::as_array) {
        Some(list) if !list.is_empty() && list.len() <= MAX_INVITE => list
            .iter()
            .map(|v| v.as_str().and_then(|s| UserId::parse(s).ok()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| BizError::new(Reason::BadUserId, "`users` must be user ids"))?,
        _ => return Err(BizError::new(Reason::BadUsers, format!("`users` lists 1–{MAX_INVITE} user ids"))),
    };
    for u in &users {
        cx.user_exists(*u).await?;
    }
    let list: Vec<String> = users.iter().map(|u| u.to_string()).collect();
    let params = cx.ask(Facts::GroupInvite(InviteFacts { group: g.facts(cx), users: list })).await?;
    // The rules say whether the invite takes effect now or waits for an admin.
    let direct = match params.get("mode").and_then(Value::as_str) {
        Some("direct") => true,
        Some("approval") => false,
        _ => g.role_of(cx.actor) >= GroupRole::Admin || g.settings.join_policy == JoinPolicy::Open,
    };
    let (mut added, mut pending, mut members) = (Vec::new(), Vec::new(), Vec::new());
    for user in users {
        if direct {
            if add_member(cx, &g, user).await? {
                cx.notify(
                    user,
                    "group_invite",
                    json!({ "topic": g.name(), "by": cx.actor.to_string() }),
                    Some(g.name()),
                )
                .await;
                added.push(user.to_string());
            } else {
                members.push(user.to_string());
            }
        } else if cx.svc.governance(cx.tenant, g.name()).subscription(user).await?.is_some() {
            members.push(user.to_string());
        } else {
            let req = request_join(cx, &g, user, Some(cx.actor), cx.str_arg("message")).await?;
            pending.push(req.id);
        }
    }
    Ok(body(&b::Invited { added, pending, already_members: members }))
}

/// Stores a pending join request and tells the group's owner and admins.
async fn request_join(
    cx: &Cx<'_>,
    g: &Group,
    user: UserId,
    inviter: Option<UserId>,
    message: Option<&str>,
) -> BizResult<JoinRequest> {
    let gov = cx.svc.governance(cx.tenant, g.name());
    let outcome = gov.request_join(user, inviter, message, cx.now).await?;
    let (req, created) = match outcome {
        palaver_core::ports::JoinOutcome::Created(r) => (r, true),
        palaver_core::ports::JoinOutcome::AlreadyPending(r) => (r, false),
    };
    if created {
        let payload = json!({ "topic": g.name(), "request": body(&join_body(&req)) });
        for admin in g.roles.iter().filter(|r| r.role >= GroupRole::Admin) {
            cx.to_user(admin.user, "group.join.requested", &payload);
            cx.notify(admin.user, "join_request", payload.clone(), Some(g.name())).await;
        }
    }
    Ok(req)
}

pub(super) async fn join(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, false).await?;
    if g.mine.is_some() {
        return Err(BizError::new(Reason::AlreadyMember, "you are a member already"));
    }
    let params = cx.ask(Facts::GroupJoinRequest(g.only(cx))).await?;
    let mode = params.get("mode").and_then(Value::as_str).unwrap_or(match g.settings.join_policy {
        JoinPolicy::Open => "join",
        JoinPolicy::Approval => "request",
        JoinPolicy::Closed => "closed",
    });
    match mode {
        "join" => {
            add_member(cx, &g, cx.actor).await?;
            Ok(body(&b::Joined { joined: true, request: None }))
        }
        "request" => {
            let req = request_join(cx, &g, cx.actor, None, cx.str_arg("message")).await?;
            Ok(body(&b::Joined { joined: false, request: Some(join_body(&req)) }))
        }
        _ => Err(BizError::new(Reason::GroupClosed, "this group takes no join requests")),
    }
}

pub(super) async fn list_joins(cx: &Cx<'_>) -> BizResult<Value> {
    let g = load(cx, true).await?;
    let (cursor, limit) = (cx.id_cursor()?, cx.limit()?);
    cx.ask(Facts::GroupJoinList(g.only(cx))).await?;
    let status = Some(palaver_core::ports::RequestStatus::Pending);
    let reqs = cx.svc.governance(cx.tenant, g.name()).join_requests(status, cursor, limit).await?;
    let next = next_cursor(reqs.len(), limit, reqs.last().map(|r| r.id));
    Ok(body(&b::JoinRequestPage { requests: reqs.iter().map(join_body).collect(), next_cursor: next }))
}

pub(super) async fn decide_join(cx: &Cx<'_>, decision: JoinDecision) -> BizResult<Value> {
    // The requester cancelling is not a member yet.
    let g = load(cx, decision != JoinDecision::Cancel).await?;
    let id = cx.need_id("id")?;
    let facts = GroupRequestFacts { group: g.facts(cx), request_id: id };
    cx.ask(match decision {
        JoinDecision::Approve => Facts::GroupJoinApprove(facts),
        JoinDecision::Reject => Facts::GroupJoinReject(facts),
        JoinDecision::Cancel => Facts::GroupJoinCancel(facts),
    })
    .await?;
    let gov = cx.svc.governance(cx.tenant, g.name());
    let req = match gov.decide_join(id, cx.actor, decision, cx.now).await {
        Ok(r) => r,
        Err(StoreError::NotFound) => return Err(BizError::new(Reason::RequestNotFound, format!("no request {id}"))),
        Err(StoreError::Conflict(why)) if why == REQUEST_NOT_PENDING => {
            cx.svc.metrics.conditional_failed("join_request_decision");
            return Err(BizError::new(Reason::RequestNotPending, "the request was decided already"));
        }
        Err(StoreError::Conflict(why)) if why == REQUEST_NOT_YOURS => {
            return Err(BizError::new(Reason::RequestNotYours, "only the requester can cancel it"));
        }
        Err(e) => return Err(e.into()),
    };
    let event = match decision {
        JoinDecision::Approve => "group.join.approved",
        JoinDecision::Reject => "group.join.rejected",
        JoinDecision::Cancel => "group.join.cancelled",
    };
    if decision == JoinDecision::Approve {
        add_member(cx, &g, req.user).await?;
    }
    let payload = json!({ "topic": g.name(), "request": body(&join_body(&req)) });
    cx.to_user(req.user, event, &payload);
    if decision != JoinDecision::Cancel {
        cx.notify(req.user, "join_result", payload.clone(), Some(g.name())).await;
    }
    Ok(body(&b::JoinDecided { request: join_body(&req) }))
}

fn join_body(r: &JoinRequest) -> b::JoinRequest {
    b::JoinRequest {
        id: r.id,
        topic: r.topic.clone(),
        user: r.user.to_string(),
        inviter: r.inviter.map(|u| u.to_string()),
        message: r.message.clone(),
        status: r.status.as_str().to_owned(),
        handled_by: r.handled_by.map(|u| u.to_string()),
        created: time(r.created),
        handled: r.handled.map(time),
    }
}
