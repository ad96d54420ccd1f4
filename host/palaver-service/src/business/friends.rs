//! Friend requests, friendships and blocks: `friend.*` and `block.*` commands.
//!
//! The host refuses what can never be right (a request to yourself, an unknown user) and maps the store's
//! race-free outcomes (already friends, blocked, decided already); the friends plugin decides the rest (daily
//! limits, message length, whether a block stops a request with a reason of its own). Both parties' devices
//! hear of a request and its outcome; a block is told only to the blocker's devices, so that nobody learns who
//! blocked them, and drops the P2P publish gate of the two users on every node.

use super::{BizError, BizResult, Cx, body, next_cursor, time};
use palaver_api::bodies as b;
use palaver_api::facts::{FriendRequestFacts, NoFacts, RemarkFacts, RequestFacts, RequestListFacts, UserFacts};
use palaver_api::{CommandName as C, Facts, Reason};
use palaver_core::ports::{
    CreateOutcome, Decision, FriendRequest, REQUEST_NOT_PENDING, REQUEST_NOT_YOURS, RequestStatus,
};
use palaver_core::{StoreError, UnixMillis, UserId, p2p_name};
use serde_json::{Value, json};

const DAY_MS: UnixMillis = 24 * 3600 * 1000;

pub(super) async fn run(cx: &Cx<'_>) -> BizResult<Value> {
    match cx.command {
        C::FriendRequestCreate => create(cx).await,
        C::FriendRequestList => list_requests(cx).await,
        C::FriendRequestAccept => decide(cx, Decision::Accept).await,
        C::FriendRequestReject => decide(cx, Decision::Reject).await,
        C::FriendRequestCancel => decide(cx, Decision::Cancel).await,
        C::FriendList => list_friends(cx).await,
        C::FriendDelete => delete(cx).await,
        C::FriendRemark => remark(cx).await,
        C::BlockCreate => block(cx).await,
        C::BlockList => list_blocks(cx).await,
        C::BlockDelete => unblock(cx).await,
        other => Err(super::unknown(other)),
    }
}

/// The other user of a command, who must exist and not be the actor.
async fn other(cx: &Cx<'_>, key: &str) -> BizResult<UserId> {
    let user = cx.need_user(key)?;
    if user == cx.actor {
        return Err(BizError::new(Reason::SelfTarget, "that is you"));
    }
    cx.user_exists(user).await?;
    Ok(user)
}

async fn create(cx: &Cx<'_>) -> BizResult<Value> {
    let to = other(cx, "to").await?;
    let message = cx.str_arg("message");
    let rel = cx.svc.relations(cx.tenant);
    let relation = rel.between(cx.actor, to).await?;
    // "Daily" is the last 24 hours, which a user cannot reset by waiting for midnight in some time zone.
    let sent_today = rel.requests_sent_since(cx.actor, cx.now - DAY_MS).await?;
    let facts = FriendRequestFacts {
        to: to.to_string(),
        friends: relation.friends,
        i_blocked: relation.i_blocked,
        blocked_me: relation.blocked_me,
        pending_out: relation.pending_out.as_ref().map(|r| r.id),
        pending_in: relation.pending_in.as_ref().map(|r| r.id),
        sent_today,
        message_chars: message.map_or(0, |m| m.chars().count() as u64),
    };
    cx.ask(Facts::FriendRequestCreate(facts)).await?;
    match rel.request(cx.actor, to, message, cx.now).await? {
        CreateOutcome::Created(req) => {
            let request = request_body(&req);
            let payload = json!({ "request_id": req.id, "request": body(&request) });
            cx.to_user(to, "friend.request.created", &payload);
            cx.to_user(cx.actor, "friend.request.created", &payload);
            let content = json!({ "request_id": req.id, "from": cx.actor.to_string(), "message": req.message });
            cx.notify(to, "friend_request", content, None).await;
            Ok(body(&b::FriendRequestCreated { request, created: true }))
        }
        // A repeat is answered with the request already pending, and tells nobody again.
        CreateOutcome::AlreadyPending(req) => {
            Ok(body(&b::FriendRequestCreated { request: request_body(&req), created: false }))
        }
        CreateOutcome::Blocked => Err(BizError::new(Reason::Blocked, "you cannot send this user a friend request")),
        CreateOutcome::AlreadyFriends => Err(BizError::new(Reason::AlreadyFriends, "you are friends already")),
    }
}

async fn list_requests(cx: &Cx<'_>) -> BizResult<Value> {
    let incoming = match cx.str_arg("box").unwrap_or("incoming") {
        "incoming" => true,
        "outgoing" => false,
        _ => return Err(BizError::new(Reason::BadBox, "`box` is incoming or outgoing")),
    };
    let status = match cx.str_arg("status") {
        None | Some("all") => None,
        Some(s) => Some(
            RequestStatus::parse(s)
                .ok_or_else(|| BizError::new(Reason::BadStatus, format!("unknown request status {s}")))?,
        ),
    };
    let (cursor, limit) = (cx.id_cursor()?, cx.limit()?);
    let mailbox = if incoming { "incoming" } else { "outgoing" }.to_owned();
    cx.ask(Facts::FriendRequestList(RequestListFacts { mailbox })).await?;
    let reqs = cx.svc.relations(cx.tenant).requests(cx.actor, incoming, status, cursor, limit).await?;
    let next = next_cursor(reqs.len(), limit, reqs.last().map(|r| r.id));
    Ok(body(&b::FriendRequestPage { requests: reqs.iter().map(request_body).collect(), next_cursor: next }))
}

async fn decide(cx: &Cx<'_>, decision: Decision) -> BizResult<Value> {
    let id = cx.need_id("id")?;
    let facts = RequestFacts { request_id: id };
    cx.ask(match decision {
        Decision::Accept => Facts::FriendRequestAccept(facts),
        Decision::Reject => Facts::FriendRequestReject(facts),
        Decision::Cancel => Facts::FriendRequestCancel(facts),
    })
    .await?;
    let req = match cx.svc.relations(cx.tenant).decide(id, cx.actor, decision, cx.now).await {
        Ok(r) => r,
        Err(StoreError::NotFound) => return Err(BizError::new(Reason::RequestNotFound, format!("no request {id}"))),
        Err(StoreError::Conflict(why)) if why == REQUEST_NOT_YOURS => {
            return Err(BizError::new(Reason::RequestNotYours, "only the other side of the request can do that"));
        }
        Err(StoreError::Conflict(why)) if why == REQUEST_NOT_PENDING => {
            return Err(BizError::new(Reason::RequestNotPending, "the request was decided already"));
        }
        Err(e) => return Err(e.into()),
    };
    let event = match decision {
        Decision::Accept => "friend.request.accepted",
        Decision::Reject => "friend.request.rejected",
        Decision::Cancel => "friend.request.cancelled",
    };
    let request = request_body(&req);
    let payload = json!({ "request_id": req.id, "request": body(&request) });
    cx.to_user(req.from, event, &payload);
    cx.to_user(req.to, event, &payload);
    if decision == Decision::Accept {
        let content = json!({ "request_id": req.id, "user": req.to.to_string() });
        cx.notify(req.from, "friend_request_accepted", content, None).await;
        // Friendship can change what the P2P topic allows (a tenant requiring friendship to chat).
        cx.invalidate(&p2p_name(req.from, req.to)).await;
    }
    Ok(body(&b::FriendRequestDecided { request }))
}

async fn list_friends(cx: &Cx<'_>) -> BizResult<Value> {
    let (cursor, limit) = (cx.user_cursor()?, cx.limit()?);
    cx.ask(Facts::FriendList(NoFacts {})).await?;
    let friends = cx.svc.relations(cx.tenant).friends(cx.actor, cursor, limit).await?;
    let next = next_cursor(friends.len(), limit, friends.last().map(|f| f.friend.to_string()));
    let friends = friends.iter().map(|f| b::Friend {
        user: f.friend.to_string(),
        remark: f.remark.clone(),
        since: time(f.created),
    });
    Ok(body(&b::FriendPage { friends: friends.collect(), next_cursor: next }))
}

async fn delete(cx: &Cx<'_>) -> BizResult<Value> {
    let friend = cx.need_user("user")?;
    cx.ask(Facts::FriendDelete(UserFacts { user: friend.to_string() })).await?;
    if !cx.svc.relations(cx.tenant).unfriend(cx.actor, friend).await? {
        return Err(BizError::new(Reason::NotFriends, "that user is not your friend"));
    }
    let payload = json!({ "user_id": cx.actor.to_string(), "friend_id": friend.to_string() });
    cx.to_user(cx.actor, "friend.deleted", &payload);
    cx.to_user(friend, "friend.deleted", &payload);
    cx.invalidate(&p2p_name(cx.actor, friend)).await;
    Ok(body(&b::FriendDeleted { deleted: true }))
}

async fn remark(cx: &Cx<'_>) -> BizResult<Value> {
    let friend = cx.need_user("user")?;
    let remark = cx.str_arg("remark");
    let remark_chars = remark.map_or(0, |r| r.chars().count() as u64);
    cx.ask(Facts::FriendRemark(RemarkFacts { user: friend.to_string(), remark_chars })).await?;
    match cx.svc.relations(cx.tenant).set_remark(cx.actor, friend, remark, cx.now).await {
        Ok(()) => {}
        Err(StoreError::NotFound) => return Err(BizError::new(Reason::NotFriends, "that user is not your friend")),
        Err(e) => return Err(e.into()),
    }
    // A remark is private: only the actor's own devices hear of it.
    cx.to_user(cx.actor, "friend.remark.updated", &json!({ "friend_id": friend.to_string(), "remark": remark }));
    Ok(body(&b::RemarkSet { friend_id: friend.to_string(), remark: remark.map(str::to_owned) }))
}

async fn block(cx: &Cx<'_>) -> BizResult<Value> {
    let user = other(cx, "user").await?;
    let reason = cx.str_arg("reason");
    cx.ask(Facts::BlockCreate(UserFacts { user: user.to_string() })).await?;
    let created = cx.svc.relations(cx.tenant).block(cx.actor, user, reason, cx.now).await?;
    if created {
        cx.to_user(cx.actor, "friend.blocked", &json!({ "user_id": user.to_string() }));
        cx.invalidate(&p2p_name(cx.actor, user)).await;
    }
    Ok(body(&b::Blocked { blocked: user.to_string(), created }))
}

async fn list_blocks(cx: &Cx<'_>) -> BizResult<Value> {
    let (cursor, limit) = (cx.user_cursor()?, cx.limit()?);
    cx.ask(Facts::BlockList(NoFacts {})).await?;
    let blocks = cx.svc.relations(cx.tenant).blocks(cx.actor, cursor, limit).await?;
    let next = next_cursor(blocks.len(), limit, blocks.last().map(|b| b.blocked.to_string()));
    let blocks = blocks.iter().map(|k| b::Block {
        user: k.blocked.to_string(),
        reason: k.reason.clone(),
        since: time(k.created),
    });
    Ok(body(&b::BlockPage { blocks: blocks.collect(), next_cursor: next }))
}

async fn unblock(cx: &Cx<'_>) -> BizResult<Value> {
    let user = cx.need_user("user")?;
    cx.ask(Facts::BlockDelete(UserFacts { user: user.to_string() })).await?;
    if !cx.svc.relations(cx.tenant).unblock(cx.actor, user).await? {
        return Err(BizError::new(Reason::NotBlocked, "you do not block that user"));
    }
    cx.to_user(cx.actor, "friend.unblocked", &json!({ "user_id": user.to_string() }));
    cx.invalidate(&p2p_name(cx.actor, user)).await;
    Ok(body(&b::Unblocked { unblocked: user.to_string() }))
}

fn request_body(r: &FriendRequest) -> b::FriendRequest {
    b::FriendRequest {
        id: r.id,
        from: r.from.to_string(),
        to: r.to.to_string(),
        message: r.message.clone(),
        status: r.status.as_str().to_owned(),
        created: time(r.created),
        updated: time(r.updated),
        handled: r.handled.map(time),
    }
}
