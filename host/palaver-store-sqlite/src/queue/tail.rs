//! The embedded queue's recent records in memory, so that a consumer in the producing process reads what was just
//! produced without a query: the one writer connection and the readers each run on a thread of their own, and a
//! round trip to one costs more than the push or audit work a record stands for.
//!
//! Offsets are ids from one AUTOINCREMENT sequence shared by every topic (and by every process writing the file),
//! so a topic's records have gaps. An entry may be served only when the consumer can know there is no record of
//! its topic between the consumer's position and the entry that is not in memory: each entry carries a `floor`,
//! the lowest offset from which that holds. Floors come from the *chain*: ids `start..=end` all produced by this
//! process with nothing in between, which holds while each batch's first id is the last batch's end plus one (ids
//! are handed out in order under the file's write lock, and a rolled-back insert takes its id back). Another
//! process's insert, a batch whose results come back out of order or a restart breaks the chain: the next batch
//! starts a new one, and a consumer behind its start reads the file as before.

use palaver_core::ports::{QueueRecord, QueueTopic};
use palaver_core::{UnixMillis, now_millis};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Entries kept per topic at most; a consumer further behind reads the file.
pub(crate) const PER_TOPIC: usize = 4096;

/// Bytes of records kept per topic at most (keys, headers and payloads): a record may carry many items (push
/// tasks are packed per topic), so the count alone would not bound memory.
pub(crate) const PER_TOPIC_BYTES: usize = 4 << 20;

/// One produced record in memory.
#[derive(Clone)]
struct Entry {
    id: i64,
    /// No record of this topic has an id in `floor..id`.
    floor: i64,
    created_at: UnixMillis,
    record: QueueRecord,
}

/// What a consumer at some offset learns from memory.
pub(crate) enum Look {
    /// Records from the consumer's offset on, in order, with nothing of the topic skipped.
    Records(Vec<(i64, QueueRecord)>),
    /// Nothing of the topic from the consumer's offset to the last id this process knows: no need to query
    /// unless another process may have written.
    UpToDate,
    /// Memory cannot say: query the file.
    Unknown,
}

#[derive(Default)]
struct Chain {
    /// The chain's first and last ids, `None` before the first batch.
    span: Option<(i64, i64)>,
    /// The last id of each topic within the chain.
    last: HashMap<QueueTopic, i64>,
    entries: HashMap<QueueTopic, Kept>,
}

/// One topic's entries, oldest first, and their size.
#[derive(Default)]
struct Kept {
    queue: VecDeque<Entry>,
    bytes: usize,
}

/// What a record is counted as against [`PER_TOPIC_BYTES`].
fn size(record: &QueueRecord) -> usize {
    record.key.len() + record.payload.len() + record.headers.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
}

/// Recent records per topic and the chain their floors come from.
#[derive(Default)]
pub(crate) struct Tail(Mutex<Chain>);

impl Tail {
    /// Notes a committed batch: `ids` are the ids the insert returned for `records`, in the same order.
    pub(crate) fn produced(&self, ids: &[i64], records: Vec<QueueRecord>) {
        let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else { return };
        let mut chain = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let contiguous = last - first + 1 == ids.len() as i64 && ids.windows(2).all(|w| w[1] == w[0] + 1);
        if !contiguous {
            // Not one run of ids (it never happens for one statement under the write lock; be safe): forget the
            // chain, so that every consumer queries the file until the next batch starts a new one.
            chain.span = None;
            chain.last.clear();
            return;
        }
        let start = match chain.span {
            Some((start, end)) if end + 1 == first => start,
            _ => {
                chain.last.clear();
                first
            }
        };
        chain.span = Some((start, last));
        let now = now_millis();
        for (&id, record) in ids.iter().zip(records) {
            let floor = chain.last.insert(record.topic, id).map_or(start, |prev| prev + 1);
            let kept = chain.entries.entry(record.topic).or_default();
            // Ids only grow within a chain; an older batch noted late goes where it belongs.
            let at = kept.queue.partition_point(|e| e.id < id);
            kept.bytes += size(&record);
            kept.queue.insert(at, Entry { id, floor, created_at: now, record });
            // The oldest go first (the newest always stay): a consumer behind them reads the file.
            while kept.queue.len() > PER_TOPIC || (kept.bytes > PER_TOPIC_BYTES && kept.queue.len() > 1) {
                if let Some(old) = kept.queue.pop_front() {
                    kept.bytes -= size(&old.record);
                }
            }
        }
    }

    /// What memory holds for a consumer of `topic` whose next offset is `next`, at most `limit` records.
    pub(crate) fn look(&self, topic: QueueTopic, next: i64, limit: usize) -> Look {
        let chain = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let entries = chain.entries.get(&topic).map(|k| &k.queue);
        let at = entries.map_or(0, |q| q.partition_point(|e| e.id < next));
        let mut out = Vec::new();
        let mut from = next;
        for e in entries.into_iter().flat_map(|q| q.range(at..)) {
            if out.len() == limit || e.floor > from {
                break;
            }
            out.push((e.id, e.record.clone()));
            from = e.id + 1;
        }
        if !out.is_empty() {
            return Look::Records(out);
        }
        // Nothing to hand out. Up to date when the chain started at or before `next` and memory has nothing of the
        // topic from `next` on: every id from there to the chain's end is this process's and none is the topic's
        // (the bound drops the oldest entries only, so the newest stay).
        let past = entries.is_some_and(|q| q.back().is_some_and(|e| e.id >= next));
        match chain.span {
            Some((start, _)) if start <= next && !past => Look::UpToDate,
            _ => Look::Unknown,
        }
    }

    /// Drops entries older than `cutoff`, as the file's prune drops their rows.
    pub(crate) fn prune(&self, cutoff: UnixMillis) {
        let mut chain = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for kept in chain.entries.values_mut() {
            while kept.queue.front().is_some_and(|e| e.created_at < cutoff) {
                if let Some(old) = kept.queue.pop_front() {
                    kept.bytes -= size(&old.record);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(topic: QueueTopic, n: u8) -> QueueRecord {
        QueueRecord::new(topic, "k", vec![n])
    }

    fn ids(look: Look) -> Option<Vec<i64>> {
        match look {
            Look::Records(r) => Some(r.into_iter().map(|(id, _)| id).collect()),
            Look::UpToDate => Some(Vec::new()),
            Look::Unknown => None,
        }
    }

    #[test]
    fn a_consumer_reads_its_topic_across_other_topics_gaps() {
        let tail = Tail::default();
        let (a, b) = (QueueTopic::Push, QueueTopic::Audit);
        tail.produced(&[10, 11, 12], vec![rec(a, 0), rec(b, 1), rec(a, 2)]);
        tail.produced(&[13], vec![rec(b, 3)]);
        // A consumer behind the chain's start cannot know what lies before it.
        assert_eq!(ids(tail.look(a, 0, 100)), None);
        assert_eq!(ids(tail.look(a, 10, 100)), Some(vec![10, 12]));
        assert_eq!(ids(tail.look(a, 11, 100)), Some(vec![12]));
        assert_eq!(ids(tail.look(a, 13, 100)), Some(vec![]), "nothing of the topic up to the chain's end");
        assert_eq!(ids(tail.look(a, 14, 100)), Some(vec![]));
        assert_eq!(ids(tail.look(b, 11, 1)), Some(vec![11]), "the limit holds");
    }

    #[test]
    fn an_id_another_writer_took_breaks_the_chain() {
        let tail = Tail::default();
        let a = QueueTopic::Push;
        tail.produced(&[1, 2], vec![rec(a, 0), rec(a, 1)]);
        // Id 3 went to another process, which may have written a record of this topic.
        tail.produced(&[4], vec![rec(a, 2)]);
        assert_eq!(ids(tail.look(a, 3, 100)), None, "id 3 may be a record of the topic: query the file");
        assert_eq!(ids(tail.look(a, 1, 100)), Some(vec![1, 2]), "the old run still reads up to the break");
        assert_eq!(ids(tail.look(a, 4, 100)), Some(vec![4]));
    }

    #[test]
    fn big_records_are_kept_up_to_a_byte_bound_and_the_newest_always() {
        let tail = Tail::default();
        let a = QueueTopic::Push;
        let big = |n: u8| QueueRecord::new(a, "k", vec![n; PER_TOPIC_BYTES / 4]);
        tail.produced(&[1, 2, 3, 4], vec![big(1), big(2), big(3), big(4)]);
        assert_eq!(ids(tail.look(a, 1, 100)), None, "the oldest went: the consumer behind reads the file");
        assert_eq!(ids(tail.look(a, 2, 100)), Some(vec![2, 3, 4]));
        let kept = tail.0.lock().unwrap().entries[&a].bytes;
        assert!(kept <= PER_TOPIC_BYTES && kept > 0, "{kept}");
        tail.produced(&[5], vec![QueueRecord::new(a, "k", vec![0; PER_TOPIC_BYTES * 2])]);
        assert_eq!(ids(tail.look(a, 5, 100)), Some(vec![5]), "one record over the bound is still kept");
        tail.prune(now_millis() + 1);
        assert_eq!(tail.0.lock().unwrap().entries[&a].bytes, 0, "pruning gives the bytes back");
    }

    #[test]
    fn a_late_batch_is_placed_in_order_and_pruning_forgets_old_entries() {
        let tail = Tail::default();
        let a = QueueTopic::Push;
        tail.produced(&[7, 8], vec![rec(a, 0), rec(a, 1)]);
        tail.produced(&[3, 4], vec![rec(a, 2), rec(a, 3)]);
        // 5 and 6 are nobody's this process knows of: the read stops at the gap.
        assert_eq!(ids(tail.look(a, 3, 100)), Some(vec![3, 4]));
        assert_eq!(ids(tail.look(a, 5, 100)), None);
        assert_eq!(ids(tail.look(a, 7, 100)), Some(vec![7, 8]));
        tail.prune(now_millis() + 1);
        assert_eq!(ids(tail.look(a, 3, 100)), Some(vec![]), "pruned with their rows: nothing left to read");
    }
}
