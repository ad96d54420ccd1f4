//! The fanout receivers: many member sockets read by a few tasks, each multiplexing its share of sockets.
//!
//! One task per socket would cost a wake-up and a task switch per delivery; a `SelectAll` per reader task
//! polls only the sockets that were woken, so two tasks can drain a thousand sockets without becoming the
//! bottleneck on a machine where client and server share two cores.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::stream::{SelectAll, Stream, StreamExt};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::client::Ws;
use crate::frames;
use crate::stats::{Anomalies, Samples, unix_micros};

/// One member socket, tagged with its index in its reader's set so per-socket state can be kept.
pub(crate) struct Member {
    index: usize,
    ws: Ws,
}

impl Stream for Member {
    type Item = (usize, Result<Message, WsError>);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let index = self.index;
        // WebSocketStream over a TcpStream is Unpin, so it can be polled through a plain re-pin.
        Pin::new(&mut self.ws).poll_next(cx).map(|item| item.map(|result| (index, result)))
    }
}

/// The sockets one reader task owns between runs, with what each has seen.
pub(crate) struct MemberSet {
    sockets: SelectAll<Member>,
    /// The last `seq` per socket, to spot reordering.
    last_seq: Vec<i64>,
    /// One bit per message index per socket, to tell duplicates from first deliveries.
    seen: Vec<Vec<u64>>,
}

impl MemberSet {
    /// Spreads sockets round-robin over `readers` sets.
    pub(crate) fn split(sockets: Vec<Ws>, readers: usize) -> Vec<MemberSet> {
        let readers = readers.max(1);
        let mut sets: Vec<MemberSet> = (0..readers)
            .map(|_| MemberSet { sockets: SelectAll::new(), last_seq: Vec::new(), seen: Vec::new() })
            .collect();
        for (i, ws) in sockets.into_iter().enumerate() {
            let set = &mut sets[i % readers];
            set.sockets.push(Member { index: set.last_seq.len(), ws });
            set.last_seq.push(0);
            set.seen.push(Vec::new());
        }
        sets
    }

    /// Sockets still open in this set.
    pub(crate) fn len(&self) -> usize {
        self.sockets.len()
    }
}

/// What one reader saw during one run.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// `{data}` frames of this run, duplicates included.
    pub(crate) received: u64,
    /// Frames whose message index had already reached the same socket.
    pub(crate) duplicates: u64,
    /// First deliveries whose `seq` was not above the last one on the same socket.
    pub(crate) out_of_order: u64,
    /// Deliveries stamped with an earlier run.
    pub(crate) stale: u64,
    /// Sockets closed or failed during the run.
    pub(crate) closed: u64,
    /// Publish → receive latency of every delivery.
    pub(crate) latency: Samples,
    /// When the last delivery of this run arrived.
    pub(crate) last_rx: Option<Instant>,
    /// Frames that were neither bench data nor ignorable, quoted.
    pub(crate) anomalies: Anomalies,
}

impl Tally {
    /// Folds another reader's tally into this one.
    pub(crate) fn merge(&mut self, mut other: Tally) {
        self.received += other.received;
        self.duplicates += other.duplicates;
        self.out_of_order += other.out_of_order;
        self.stale += other.stale;
        self.closed += other.closed;
        self.latency.append(&mut other.latency);
        self.last_rx = self.last_rx.max(other.last_rx);
        self.anomalies.merge(other.anomalies);
    }
}

/// Reads deliveries of run `run` (of `messages` messages) until `stop` flips or every socket has closed.
///
/// `progress` counts this run's deliveries across all readers so the orchestrator can tell when the run is
/// complete without stopping the readers.
pub(crate) async fn read_run(
    mut set: MemberSet,
    run: u32,
    messages: u64,
    progress: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) -> (MemberSet, Tally) {
    let mut tally = Tally::default();
    let words = messages.div_ceil(64) as usize;
    for bits in &mut set.seen {
        bits.clear();
        bits.resize(words, 0);
    }
    loop {
        let item = tokio::select! {
            biased;
            changed = stop.changed() => {
                // A dropped sender also ends the run, so that a failed orchestrator cannot leave readers behind.
                if changed.is_err() || *stop.borrow() { break; }
                continue;
            }
            item = set.sockets.next() => item,
        };
        let Some((index, message)) = item else { break };
        match message {
            Ok(Message::Text(text)) => on_text(&text, index, run, &mut set, &progress, &mut tally),
            Ok(Message::Close(frame)) => {
                tally.closed += 1;
                tally.anomalies.note(format!("member socket closed by the server: {frame:?}"));
            }
            Ok(Message::Binary(bytes)) => tally.anomalies.note(format!("binary frame of {} bytes", bytes.len())),
            Ok(_) => {}
            Err(err) => {
                tally.closed += 1;
                tally.anomalies.note(format!("member socket error: {err}"));
            }
        }
    }
    (set, tally)
}

/// Accounts for one text frame received by a member.
fn on_text(text: &str, index: usize, run: u32, set: &mut MemberSet, progress: &AtomicU64, tally: &mut Tally) {
    let Some(frame) = frames::parse(text) else {
        tally.anomalies.note(format!("unparsable frame: {text}"));
        return;
    };
    let Some(data) = frame.data else {
        // A member only sends {sub}, so a ctrl here is unexpected; pres/meta/info are normal side traffic.
        if frame.ctrl.is_some() {
            tally.anomalies.note(format!("unexpected ctrl on a member: {text}"));
        }
        return;
    };
    let Some(stamp) = data.content else {
        tally.anomalies.note(format!("data without a bench stamp: {text}"));
        return;
    };
    if stamp.r != run {
        tally.stale += 1;
        return;
    }
    tally.received += 1;
    let bits = &mut set.seen[index];
    let Some(word) = bits.get_mut((stamp.i / 64) as usize) else {
        tally.anomalies.note(format!("message index beyond the run: {text}"));
        return;
    };
    let mask = 1u64 << (stamp.i % 64);
    if *word & mask != 0 {
        tally.duplicates += 1;
        tally.anomalies.note(format!("duplicate delivery: {text}"));
        return;
    }
    *word |= mask;
    tally.latency.push(unix_micros() as i64 - stamp.t as i64);
    progress.fetch_add(1, Ordering::Relaxed);
    tally.last_rx = Some(Instant::now());
    let last = &mut set.last_seq[index];
    if data.seq <= *last {
        tally.out_of_order += 1;
        if tally.out_of_order <= 3 {
            tally.anomalies.note(format!("seq {} after seq {} on one member: {text}", data.seq, *last));
        }
    } else {
        *last = data.seq;
    }
}
