//! Contract cases for deleting messages: hard deletes for everyone, soft deletes for one reader, and the log.

use super::assert_not_found;
use super::messages::seqs;
use crate::data::{T0, group, msg, sub};
use crate::{Fixture, Storage};
use palaver_core::{DeleteMessages, Deletions, MessageQuery, Seq, SeqRange, UserId};

const TOPIC: &str = "grpContract1";
const ALL: MessageQuery = MessageQuery { since: None, before: None, limit: 1000 };

fn range(low: Seq, hi: Seq) -> SeqRange {
    SeqRange { low, hi }
}

fn delete(ranges: &[SeqRange], hard: bool, user: u64) -> DeleteMessages {
    DeleteMessages { ranges: ranges.to_vec(), hard, for_user: UserId(user), when: T0 + 500, recalled_by: None }
}

/// A topic with messages 1 to `n` from user 1, and users 1 and 2 subscribed.
async fn seeded<S: Storage>(fx: &Fixture<S>, n: Seq) {
    let (s, t) = (&fx.store, fx.tenant);
    s.create_topic(t, &group(TOPIC)).await.unwrap();
    for user in [1, 2] {
        s.upsert_sub(t, &sub(TOPIC, user)).await.unwrap();
    }
    for seq in 1..=n {
        s.append(t, &msg(TOPIC, seq, 1)).await.unwrap();
    }
}

/// A hard delete hides the range from every reader, keeps the seqs taken, and bumps the topic's deletion id.
pub async fn hard_delete_hides_for_everyone<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    seeded(&fx, 5).await;
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(2, 4)], true, 1)).await.unwrap(), 1);
    for reader in [1, 2, 3] {
        assert_eq!(seqs(s, t, TOPIC, reader, ALL).await, vec![5, 4, 1], "reader {reader}");
    }
    let topic = s.get_topic(t, TOPIC).await.unwrap().unwrap();
    assert_eq!((topic.del_id, topic.seq), (1, 5));
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 5, "deleted seqs stay taken");
    let window = MessageQuery { since: Some(2), before: Some(5), limit: 10 };
    assert_eq!(seqs(s, t, TOPIC, 2, window).await, vec![4]);
    let expected = Deletions { clear: 1, ranges: vec![range(2, 4)] };
    assert_eq!(s.list_deletions(t, TOPIC, UserId(2)).await.unwrap(), expected);
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(5, 6)], true, 2)).await.unwrap(), 2);
    assert_eq!(seqs(s, t, TOPIC, 2, ALL).await, vec![4, 1]);
    assert_not_found(s.delete_messages(t, "grpMissing", &delete(&[range(1, 2)], true, 1)).await, "missing topic");
}

/// A soft delete hides the range from the user who asked only, and records the id on their subscription.
pub async fn soft_delete_hides_for_reader_only<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    seeded(&fx, 5).await;
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(1, 3), range(5, 6)], false, 1)).await.unwrap(), 1);
    assert_eq!(seqs(s, t, TOPIC, 1, ALL).await, vec![4, 3]);
    assert_eq!(seqs(s, t, TOPIC, 2, ALL).await, vec![5, 4, 3, 2, 1]);
    assert_eq!(s.get_topic(t, TOPIC).await.unwrap().unwrap().del_id, 1);
    assert_eq!(s.get_sub(t, TOPIC, UserId(1)).await.unwrap().unwrap().del_id, 1);
    assert_eq!(s.get_sub(t, TOPIC, UserId(2)).await.unwrap().unwrap().del_id, 0);
    let mine = Deletions { clear: 1, ranges: vec![range(1, 3), range(5, 6)] };
    assert_eq!(s.list_deletions(t, TOPIC, UserId(1)).await.unwrap(), mine);
    assert_eq!(s.list_deletions(t, TOPIC, UserId(2)).await.unwrap(), Deletions::default());
    assert_eq!(s.max_seq(t, TOPIC).await.unwrap(), 5);
}

/// The log a reader sees holds everyone's ranges and their own, merged and sorted, under the highest relevant id.
pub async fn list_deletions_merges_ranges<S: Storage>(fx: Fixture<S>) {
    let (s, t) = (&fx.store, fx.tenant);
    seeded(&fx, 12).await;
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(1, 3)], true, 1)).await.unwrap(), 1);
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(3, 5)], false, 1)).await.unwrap(), 2);
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(7, 9)], false, 2)).await.unwrap(), 3);
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(10, 12), range(8, 10)], true, 2)).await.unwrap(), 4);
    assert_eq!(s.delete_messages(t, TOPIC, &delete(&[range(6, 7)], false, 2)).await.unwrap(), 5);

    let for_1 = Deletions { clear: 4, ranges: vec![range(1, 5), range(8, 12)] };
    assert_eq!(s.list_deletions(t, TOPIC, UserId(1)).await.unwrap(), for_1);
    let for_2 = Deletions { clear: 5, ranges: vec![range(1, 3), range(6, 12)] };
    assert_eq!(s.list_deletions(t, TOPIC, UserId(2)).await.unwrap(), for_2);
    let for_3 = Deletions { clear: 4, ranges: vec![range(1, 3), range(8, 12)] };
    assert_eq!(s.list_deletions(t, TOPIC, UserId(3)).await.unwrap(), for_3);

    assert_eq!(seqs(s, t, TOPIC, 1, ALL).await, vec![12, 7, 6, 5]);
    assert_eq!(seqs(s, t, TOPIC, 2, ALL).await, vec![12, 5, 4, 3]);
    assert_eq!(seqs(s, t, TOPIC, 3, ALL).await, vec![12, 7, 6, 5, 4, 3]);
    assert_eq!(s.get_topic(t, TOPIC).await.unwrap().unwrap().del_id, 5);
    assert_eq!(s.get_sub(t, TOPIC, UserId(2)).await.unwrap().unwrap().del_id, 5);
    assert_eq!(s.get_sub(t, TOPIC, UserId(1)).await.unwrap().unwrap().del_id, 2);
    assert_eq!(s.list_deletions(t, "grpContract2", UserId(1)).await.unwrap(), Deletions::default());
}
