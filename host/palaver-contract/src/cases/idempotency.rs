//! The idempotency keys' contract: a key is acquired once, answers pending while its message is being stored
//! and done with the seq after, may be taken again after a failure, and batches of claims answer as the same
//! claims made one after another. Each case takes a fresh store and topic names of its own.

use super::fresh_topic as topic;
use palaver_core::ports::IdempotencyStore;
use palaver_core::{Claim, TenantId, UserId};
use std::sync::Arc;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const A: UserId = UserId(11);
const B: UserId = UserId(12);

pub async fn idempotency_keys_go_pending_done_and_failed(store: Arc<dyn IdempotencyStore>) {
    let t = topic();
    assert_eq!(store.claim(T, &t, A, "m1").await.unwrap(), Claim::Acquired);
    assert_eq!(store.claim(T, &t, A, "m1").await.unwrap(), Claim::Pending, "being stored");
    assert_eq!(store.claim(T, &t, B, "m1").await.unwrap(), Claim::Acquired, "another sender's key");
    assert_eq!(store.claim(OTHER, &t, A, "m1").await.unwrap(), Claim::Acquired, "another tenant's key");
    store.complete(T, &t, A, "m1", 7).await.unwrap();
    assert_eq!(store.claim(T, &t, A, "m1").await.unwrap(), Claim::Done { seq: 7 });
    store.fail(T, &t, A, "m1").await.unwrap();
    assert_eq!(store.claim(T, &t, A, "m1").await.unwrap(), Claim::Done { seq: 7 }, "a done key stays done");
    store.fail(T, &t, B, "m1").await.unwrap();
    assert_eq!(store.claim(T, &t, B, "m1").await.unwrap(), Claim::Acquired, "a failed key is taken again");
}

pub async fn claimed_batches_answer_as_claims_one_by_one(store: Arc<dyn IdempotencyStore>) {
    let t = topic();
    assert_eq!(store.claim(T, &t, A, "done").await.unwrap(), Claim::Acquired);
    store.complete(T, &t, A, "done", 3).await.unwrap();
    assert_eq!(store.claim(T, &t, A, "busy").await.unwrap(), Claim::Acquired);
    assert_eq!(store.claim(T, &t, B, "failed").await.unwrap(), Claim::Acquired);
    store.fail(T, &t, B, "failed").await.unwrap();
    let keys = [(A, "new"), (A, "done"), (A, "busy"), (B, "failed"), (B, "new"), (A, "new")];
    let got: Vec<Claim> = store.claim_many(T, &t, &keys).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        got,
        vec![
            Claim::Acquired,
            Claim::Done { seq: 3 },
            Claim::Pending,
            Claim::Acquired,
            Claim::Acquired,
            Claim::Pending, // the first (A, "new") of this batch holds it
        ]
    );
    assert!(store.claim_many(T, &t, &[]).await.is_empty());
    assert_eq!(store.claim(T, &t, B, "new").await.unwrap(), Claim::Pending, "claimed by the batch");
}
