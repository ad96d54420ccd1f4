//! The seq allocator's contract: seqs rise above the floor and above everything handed out, runs are
//! contiguous and never overlap, re-baselining never lowers a counter, forgetting restarts from the floor, and
//! tenants and topics count apart. Each case takes a fresh allocator and topic names of its own.

use super::fresh_topic as topic;
use palaver_core::ports::SeqAllocator;
use palaver_core::{Seq, TenantId};
use std::collections::HashSet;
use std::sync::Arc;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

pub async fn seqs_rise_above_the_floor_and_rebaseline_never_lowers(seq: Arc<dyn SeqAllocator>) {
    let t = topic();
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 1);
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 2);
    assert_eq!(seq.next_seq(T, &t, 10).await.unwrap(), 11, "a floor above the counter raises it");
    assert_eq!(seq.next_seq(T, &t, 3).await.unwrap(), 12, "a floor below the counter changes nothing");
    seq.rebaseline(T, &t, 5).await.unwrap();
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 13, "rebaseline never lowers");
    seq.rebaseline(T, &t, 20).await.unwrap();
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 21);
    seq.forget(T, &t).await.unwrap();
    assert_eq!(seq.next_seq(T, &t, 3).await.unwrap(), 4, "a forgotten counter starts again from the floor");
}

pub async fn seq_runs_are_contiguous_and_follow_single_seqs(seq: Arc<dyn SeqAllocator>) {
    let t = topic();
    assert_eq!(seq.next_seqs(T, &t, 0, 5).await.unwrap(), 1, "the run 1..=5");
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 6);
    assert_eq!(seq.next_seqs(T, &t, 0, 3).await.unwrap(), 7, "the run 7..=9");
    assert_eq!(seq.next_seqs(T, &t, 100, 4).await.unwrap(), 101, "a whole run lies above the floor");
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 105);
    assert_eq!(seq.next_seqs(T, &t, 0, 0).await.unwrap(), 106, "a run of none is a run of one");
    assert_eq!(seq.next_seq(T, &t, 0).await.unwrap(), 107);
}

pub async fn seq_tenants_and_topics_count_apart(seq: Arc<dyn SeqAllocator>) {
    let (a, b) = (topic(), topic());
    assert_eq!(seq.next_seqs(T, &a, 0, 10).await.unwrap(), 1);
    assert_eq!(seq.next_seq(T, &b, 0).await.unwrap(), 1, "another topic");
    assert_eq!(seq.next_seq(OTHER, &a, 0).await.unwrap(), 1, "another tenant's topic of the same name");
    seq.forget(OTHER, &a).await.unwrap();
    assert_eq!(seq.next_seq(T, &a, 0).await.unwrap(), 11, "forgetting another tenant's counter leaves this one");
}

pub async fn concurrent_seq_runs_never_overlap(seq: Arc<dyn SeqAllocator>) {
    let t = topic();
    let mut tasks = Vec::new();
    for task in 0..8_u32 {
        let (seq, t) = (seq.clone(), t.clone());
        tasks.push(tokio::spawn(async move {
            let mut got: Vec<Seq> = Vec::new();
            for round in 0..60_u32 {
                // Runs of 1 to 4, different per task and round, so single seqs and runs interleave.
                let count = 1 + (task + round) % 4;
                let first = seq.next_seqs(T, &t, 0, count).await.unwrap();
                got.extend((0..Seq::from(count)).map(|i| first + i));
            }
            got
        }));
    }
    let mut all = HashSet::new();
    for task in tasks {
        let got = task.await.unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "each task sees increasing seqs");
        for s in got {
            assert!(all.insert(s), "seq {s} handed out twice");
        }
    }
    let total = all.len() as Seq;
    assert_eq!(all.iter().max(), Some(&total), "no seq skipped: 1..={total} handed out");
}
