//! The publisher: sends stamped `{pub}`s at a fixed rate or as fast as a window of unacknowledged publishes
//! allows, and matches each `ctrl 202` to its publish. Used by `fanout` (one publisher) and `publish` (many).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{Notify, Semaphore};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;

use crate::client::Conn;
use crate::frames::{self, Stamp};
use crate::stats::{Anomalies, Samples, unix_micros};

/// How long the publisher waits for an acknowledgement before it gives up on the run.
const ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// What to publish in one run.
pub(crate) struct Plan<'a> {
    pub(crate) topic: &'a str,
    pub(crate) run: u32,
    pub(crate) messages: u64,
    /// Messages per second; 0 means as fast as the window allows.
    pub(crate) rate: f64,
    /// Publishes that may be awaiting their `ctrl 202` at once.
    pub(crate) window: usize,
    /// With a prefix, every publish carries `client_mid: prefix + index`, so the prefix must be unique per run.
    pub(crate) client_mid: Option<&'a str>,
    /// The instant that second 0 of [`Outcome::acks_per_sec`] starts at, shared by all publishers of a run.
    pub(crate) origin: Instant,
}

/// What happened on the publisher's side of one run.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) sent: u64,
    pub(crate) acked: u64,
    pub(crate) rejected: u64,
    /// Rejections with ctrl 429, the server's per-session rate limit.
    pub(crate) rate_limited: u64,
    /// Rejections by ctrl code.
    pub(crate) by_code: BTreeMap<u16, u64>,
    /// `{data}` of the publisher's own messages, echoed although every publish says `noecho:true`.
    pub(crate) echoes: u64,
    /// `{data}` from other users of the topic (their fanout to this session).
    pub(crate) peer_data: u64,
    pub(crate) first_send: Option<Instant>,
    pub(crate) last_send: Option<Instant>,
    /// When the last `ctrl 202` arrived.
    pub(crate) last_ack: Option<Instant>,
    /// `ctrl 202`s received in each second since [`Plan::origin`].
    pub(crate) acks_per_sec: Vec<u64>,
    /// The `params.seq` of every `ctrl 202`, in arrival order.
    pub(crate) seqs: Vec<i64>,
    /// `ctrl 202`s without a `params.seq`.
    pub(crate) acks_without_seq: u64,
    /// Publish → `ctrl 202` latency.
    pub(crate) ack_latency: Samples,
    pub(crate) anomalies: Anomalies,
    /// Why the run stopped early, if it did.
    pub(crate) aborted: Option<String>,
}

/// Publishes `plan.messages` stamped messages on `conn` and collects the acknowledgements.
///
/// The future is `Send`, so each publisher of a multi-publisher run can be its own task.
pub(crate) async fn publish(conn: &mut Conn, plan: &Plan<'_>) -> Outcome {
    let total = plan.messages as usize;
    let sent_at: Vec<AtomicU64> = (0..total).map(|_| AtomicU64::new(0)).collect();
    // The window is a semaphore whose permits are forgotten on send and given back on acknowledgement; with a
    // fixed rate it still bounds how far the publisher can run ahead of a server that stops answering.
    let window = Semaphore::new(plan.window.max(1));
    // Atomics rather than cells keep the future `Send`; writer and reader still run on one task.
    let sent = AtomicU64::new(0);
    let writer_done = AtomicBool::new(false);
    // Wakes the reader when the writer stops, so an early stop does not wait out the ack timeout.
    let writer_finished = Notify::new();
    let mut outcome = Outcome::default();
    let me = conn.user.clone();
    let (mut sink, mut stream) = StreamExt::split(&mut conn.ws);
    let ack_prefix = format!("p{}.", plan.run);

    let writer = async {
        let (mut first_send, mut last_send) = (None, None);
        let result = async {
            let start = Instant::now();
            for (i, slot) in sent_at.iter().enumerate() {
                let permit = timeout(ACK_TIMEOUT, window.acquire())
                    .await
                    .map_err(|_| anyhow!("no ctrl 202 for {} s with the window full", ACK_TIMEOUT.as_secs()))??;
                permit.forget();
                if plan.rate > 0.0 {
                    tokio::time::sleep_until((start + Duration::from_secs_f64(i as f64 / plan.rate)).into()).await;
                }
                first_send.get_or_insert_with(Instant::now);
                let t = unix_micros();
                slot.store(t, Ordering::Relaxed);
                let stamp = Stamp { t, i: i as u64, r: plan.run };
                let mid = plan.client_mid.map(|prefix| format!("{prefix}{i}"));
                let text = frames::pub_text_with_mid(&format!("{ack_prefix}{i}"), plan.topic, mid.as_deref(), stamp);
                timeout(ACK_TIMEOUT, sink.send(Message::text(text)))
                    .await
                    .map_err(|_| anyhow!("publish write timed out"))??;
                sent.store(i as u64 + 1, Ordering::Release);
                last_send = Some(Instant::now());
            }
            Ok::<(), anyhow::Error>(())
        }
        .await;
        writer_done.store(true, Ordering::Release);
        writer_finished.notify_one();
        (result, first_send, last_send)
    };

    let reader = async {
        let result = async {
            loop {
                let answered = outcome.acked + outcome.rejected;
                let sent_now = sent.load(Ordering::Acquire);
                if answered == plan.messages || (writer_done.load(Ordering::Acquire) && answered >= sent_now) {
                    break Ok(());
                }
                let next = tokio::select! {
                    next = timeout(ACK_TIMEOUT, stream.next()) => next,
                    () = writer_finished.notified() => continue,
                };
                let frame = match next {
                    // Silence with nothing outstanding is a slow fixed rate, not a stalled server.
                    Err(_) if sent.load(Ordering::Acquire) == answered => continue,
                    Err(_) => bail!(
                        "no frame for {} s with {} publishes unanswered",
                        ACK_TIMEOUT.as_secs(),
                        sent.load(Ordering::Acquire) - answered
                    ),
                    Ok(None) => bail!("the server closed the publisher's connection"),
                    Ok(Some(Err(err))) => bail!("publisher read: {err}"),
                    Ok(Some(Ok(Message::Text(text)))) => text,
                    Ok(Some(Ok(Message::Close(frame)))) => {
                        bail!("the server closed the publisher's connection: {frame:?}")
                    }
                    Ok(Some(Ok(_))) => continue,
                };
                let now = unix_micros();
                let Some(parsed) = frames::parse(&frame) else {
                    outcome.anomalies.note(format!("unparsable frame to the publisher: {frame}"));
                    continue;
                };
                if let Some(data) = parsed.data {
                    if data.from.as_deref() == Some(me.as_str()) {
                        outcome.echoes += 1;
                        outcome.anomalies.note(format!("own message echoed despite noecho:true: {frame}"));
                    } else {
                        outcome.peer_data += 1;
                    }
                    continue;
                }
                let Some(ctrl) = parsed.ctrl else { continue };
                let index = ctrl
                    .id
                    .as_deref()
                    .and_then(|id| id.strip_prefix(ack_prefix.as_str()))
                    .and_then(|i| i.parse::<usize>().ok());
                let Some(index) = index.filter(|&i| i < total) else {
                    outcome.anomalies.note(format!("ctrl the publisher did not ask for: {frame}"));
                    continue;
                };
                if ctrl.code == 202 {
                    // Only acceptances are timed: a refusal is answered before any storage work.
                    outcome.ack_latency.push(now as i64 - sent_at[index].load(Ordering::Relaxed) as i64);
                    outcome.acked += 1;
                    match ctrl.params.and_then(|p| p.seq) {
                        Some(seq) => outcome.seqs.push(seq),
                        None => outcome.acks_without_seq += 1,
                    }
                    let at = Instant::now();
                    outcome.last_ack = Some(at);
                    let second = at.saturating_duration_since(plan.origin).as_secs() as usize;
                    if outcome.acks_per_sec.len() <= second {
                        outcome.acks_per_sec.resize(second + 1, 0);
                    }
                    outcome.acks_per_sec[second] += 1;
                } else {
                    outcome.rejected += 1;
                    outcome.rate_limited += u64::from(ctrl.code == 429);
                    *outcome.by_code.entry(ctrl.code).or_default() += 1;
                    outcome.anomalies.note(format!("publish not accepted: {frame}"));
                }
                window.add_permits(1);
            }
        }
        .await;
        // Closing the window wakes a writer blocked on it, so a failed reader stops the writer at once.
        window.close();
        result
    };

    let ((written, first_send, last_send), read) = tokio::join!(writer, reader);
    outcome.sent = sent.load(Ordering::Acquire);
    outcome.first_send = first_send;
    outcome.last_send = last_send;
    if let Err(err) = written.and(read) {
        outcome.aborted = Some(format!("{err:#}"));
    }
    outcome
}
