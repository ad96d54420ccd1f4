//! The one shape of the node's periodic background work (the call sweep, the collection of unreferenced
//! uploads): a round now, then one every period, a round that overruns pushing the next one back rather than
//! bunching them up.

use std::future::Future;
use std::time::Duration;

/// Runs `round` every `period` until the task is aborted.
pub(crate) fn spawn<F, Fut>(period: Duration, mut round: F) -> tokio::task::JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            round().await;
        }
    })
}
