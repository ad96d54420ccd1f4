//! The records push tasks travel in: the tasks of one topic drained together share one record, a JSON array.

use crate::backbone::lane::Packed;
use palaver_core::TenantId;
use palaver_core::ports::{PushTask, QueueRecord, QueueTopic};

/// Push tasks one record carries at most. The worker commits a record's offset once all its tasks are done, so
/// a crash hands out again at most this many (and the dedup claims absorb those).
pub const TASKS_PER_RECORD: usize = 64;

/// A record's payload grows past this only by its first task: well inside Kafka's default 1 MB message.
const RECORD_BYTES: usize = 64 * 1024;

/// The records `tasks` travel in, in order: the tasks of one tenant and topic share a record (a JSON array of up
/// to [`TASKS_PER_RECORD`] tasks), keyed by tenant and topic so one topic's tasks stay in order. Headers: the
/// tenant, the first task's `seq` and the number of `tasks`.
pub fn push_records(tasks: impl IntoIterator<Item = PushTask>) -> Vec<QueueRecord> {
    pack(tasks).into_iter().map(|p| p.record).collect()
}

/// The tasks a push record carries: a JSON array, or one task (a record an older version queued).
pub fn push_tasks(payload: &[u8]) -> serde_json::Result<Vec<PushTask>> {
    match payload.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => serde_json::from_slice(payload),
        _ => serde_json::from_slice(payload).map(|t| vec![t]),
    }
}

pub(super) fn pack(tasks: impl IntoIterator<Item = PushTask>) -> Vec<Packed> {
    // Open records by key, pointing into `out`; a batch holds a few topics, so a scan finds them.
    let mut open: Vec<(TenantId, String, usize)> = Vec::new();
    let mut out: Vec<Packed> = Vec::new();
    let mut json = Vec::new();
    for task in tasks {
        json.clear();
        if serde_json::to_writer(&mut json, &task).is_err() {
            continue;
        }
        let at = open.iter().position(|(t, topic, _)| *t == task.tenant && *topic == task.topic);
        let fits = at.map(|i| &out[open[i].2]).is_some_and(|p| {
            (p.items as usize) < TASKS_PER_RECORD && p.record.payload.len() + json.len() < RECORD_BYTES
        });
        if let (Some(i), true) = (at, fits) {
            let packed = &mut out[open[i].2];
            packed.record.payload.push(b',');
            packed.record.payload.extend_from_slice(&json);
            packed.items += 1;
            continue;
        }
        let key = format!("{}:{}", task.tenant.0, task.topic);
        let mut payload = Vec::with_capacity(json.len() * 8);
        payload.push(b'[');
        payload.extend_from_slice(&json);
        let mut record = QueueRecord::new(QueueTopic::Push, key, payload);
        record.headers =
            vec![("tenant".to_owned(), task.tenant.0.to_string()), ("seq".to_owned(), task.seq.to_string())];
        match at {
            Some(i) => open[i].2 = out.len(),
            None => open.push((task.tenant, task.topic, out.len())),
        }
        out.push(Packed { tenant: task.tenant, record, items: 1 });
    }
    for packed in &mut out {
        packed.record.payload.push(b']');
        packed.record.headers.push(("tasks".to_owned(), packed.items.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_core::UserId;

    fn task(tenant: u64, topic: &str, seq: i64) -> PushTask {
        PushTask {
            tenant: TenantId(tenant),
            topic: topic.to_owned(),
            seq,
            from: UserId(7),
            ts: 0,
            what: "msg".to_owned(),
            mime: None,
            webrtc: None,
            preview: None,
            attached: Vec::new(),
            sender_device: None,
            head: None,
            mentions: Vec::new(),
            to: None,
        }
    }

    fn seqs(record: &QueueRecord) -> Vec<i64> {
        push_tasks(&record.payload).unwrap().iter().map(|t| t.seq).collect()
    }

    #[test]
    fn a_topics_tasks_share_a_record_in_order_and_tenants_stay_apart() {
        let tasks = vec![task(1, "grpA", 1), task(1, "grpB", 1), task(1, "grpA", 2), task(2, "grpA", 1)];
        let records = push_records(tasks);
        assert_eq!(records.len(), 3);
        assert_eq!((records[0].key.as_str(), seqs(&records[0])), ("1:grpA", vec![1, 2]));
        assert_eq!((records[1].key.as_str(), seqs(&records[1])), ("1:grpB", vec![1]));
        assert_eq!((records[2].key.as_str(), seqs(&records[2])), ("2:grpA", vec![1]));
        assert_eq!(records[0].header("seq"), Some("1"));
        assert_eq!(records[0].header("tasks"), Some("2"));
        assert_eq!(records[0].header("tenant"), Some("1"));
    }

    #[test]
    fn a_record_holds_a_bounded_number_of_tasks_and_bytes() {
        let n = TASKS_PER_RECORD as i64 * 2 + 1;
        let records = push_records((1..=n).map(|seq| task(1, "grpA", seq)));
        assert_eq!(records.len(), 3);
        let all: Vec<i64> = records.iter().flat_map(seqs).collect();
        assert_eq!(all, (1..=n).collect::<Vec<_>>(), "every task once, in order");

        let big = |seq| PushTask { preview: Some("x".repeat(RECORD_BYTES / 3)), ..task(1, "grpA", seq) };
        let records = push_records((1..=4).map(big));
        assert_eq!(records.iter().map(|r| seqs(r).len()).collect::<Vec<_>>(), vec![2, 2]);
        assert!(records.iter().all(|r| r.payload.len() < RECORD_BYTES));
    }

    #[test]
    fn a_record_of_one_task_from_an_older_version_still_reads() {
        let one = serde_json::to_vec(&task(1, "grpA", 5)).unwrap();
        assert_eq!(push_tasks(&one).unwrap()[0].seq, 5);
        assert!(push_tasks(b"{not json").is_err());
        assert!(push_tasks(b"[{\"nope\": 1}]").is_err());
    }
}
