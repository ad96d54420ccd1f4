//! Contract cases for the records a state change owes the queue (its audit event, its summaries): they commit
//! with the change, in its transaction, and a change that does not happen writes none of them.
//! [`crate::owed_contract_tests!`] runs them against any store that is a `UserStore`, a `MessageStore` and an
//! `OutboxStore` over the same tenant data.

use super::assert_not_found;
use super::outbox::{payloads, record};
use crate::Fixture;
use crate::data::{auth, group, held_msg, user};
use palaver_core::ports::{MessageStore, OutboxStore, TopicStore, UserStore};
use palaver_core::{AuditStatus, Message, RecordState, UserId};

/// A new secret lands with the records it owes; a secret that cannot be set (no credential, no user) owes none.
pub async fn set_secret_commits_owed_records<S: UserStore + OutboxStore>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), Some(&auth(10, "alice", "h1"))).await.unwrap();
    assert_eq!(s.set_secret(t, UserId(10), "h2", &[record("u10", "changed")]).await.unwrap(), 1);
    assert_eq!(payloads(&s.pending(t, 10).await.unwrap()), ["changed"]);
    assert_eq!(s.find_auth(t, "alice").await.unwrap().unwrap().secret_hash, "h2");

    s.create_user(t, &user(11), None).await.unwrap();
    assert_not_found(s.set_secret(t, UserId(11), "h", &[record("u11", "never")]).await, "user without a credential");
    assert_not_found(s.set_secret(t, UserId(12), "h", &[record("u12", "never")]).await, "missing user");
    assert_eq!(payloads(&s.pending(t, 10).await.unwrap()), ["changed"], "a refused change owes nothing");
    assert_eq!(s.depth(fx.other_tenant).await.unwrap(), 0, "records go to the change's own tenant");
}

/// Revoking tokens (and changing the state with it) lands with its records in order; revoking for a missing user
/// owes none.
pub async fn revoke_tokens_commits_owed_records<S: UserStore + OutboxStore>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_user(t, &user(10), None).await.unwrap();
    let owed = [record("u10", "audit"), record("u10", "summary")];
    assert_eq!(s.revoke_tokens(t, UserId(10), Some(RecordState::Suspended), &owed).await.unwrap(), 1);
    assert_eq!(payloads(&s.pending(t, 10).await.unwrap()), ["audit", "summary"]);
    let stored = s.get_user(t, UserId(10)).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.auth_version), (RecordState::Suspended, 1));

    assert_eq!(s.revoke_tokens(t, UserId(10), None, &[]).await.unwrap(), 2, "nothing owed is fine");
    assert_not_found(s.revoke_tokens(t, UserId(99), None, &[record("u99", "never")]).await, "missing user");
    assert_eq!(s.depth(t).await.unwrap(), 2, "a refused change owes nothing");

    // A deleted account stays deleted: another state is refused in the same write, a repeat or a plain
    // revocation goes through.
    assert_eq!(s.revoke_tokens(t, UserId(10), Some(RecordState::Deleted), &[]).await.unwrap(), 3);
    for state in [RecordState::Active, RecordState::Suspended] {
        assert_not_found(s.revoke_tokens(t, UserId(10), Some(state), &[record("u10", "never")]).await, "undelete");
    }
    assert_eq!(s.revoke_tokens(t, UserId(10), Some(RecordState::Deleted), &[]).await.unwrap(), 4);
    assert_eq!(s.revoke_tokens(t, UserId(10), None, &[]).await.unwrap(), 5);
    assert_eq!(s.get_user(t, UserId(10)).await.unwrap().unwrap().state, RecordState::Deleted);
    assert_eq!(s.depth(t).await.unwrap(), 2, "the refused ones owe nothing");
}

/// A moderation decision lands with the records built from the message it changed (author and new state); a
/// decision on a missing message owes none.
pub async fn set_audit_commits_owed_records<S: TopicStore + MessageStore + OutboxStore>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group("grpOwed")).await.unwrap();
    s.append(t, &held_msg("grpOwed", 1, 1, AuditStatus::Pending, &["spam"])).await.unwrap();
    let describe = |m: &Message| vec![record("m1", &format!("{} by {}", m.audit.as_str(), m.from.0))];
    let released = s.set_audit(t, "grpOwed", 1, AuditStatus::Pass, &describe).await.unwrap();
    assert_eq!(released.audit, AuditStatus::Pass);
    assert_eq!(payloads(&s.pending(t, 10).await.unwrap()), [format!("{} by 1", AuditStatus::Pass.as_str())]);
    let missing = s.set_audit(t, "grpOwed", 2, AuditStatus::Reject, &|_: &Message| vec![record("m2", "never")]).await;
    assert_not_found(missing, "a missing seq");
    assert_eq!(s.depth(t).await.unwrap(), 1, "a refused decision owes nothing");
}
