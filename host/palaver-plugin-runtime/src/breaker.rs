//! The circuit breaker of one plugin: consecutive faults open it, an open breaker skips the plugin (its failure
//! policy answers instead), and after the cool-down one trial call decides whether it closes or opens again.

use crate::config::BreakerConfig;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// What the breaker lets a call do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Run the plugin.
    Call,
    /// Run the plugin as the one trial after a cool-down.
    Trial,
    /// Do not run it: the breaker is open.
    Skip,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// One trial call is in flight since `since`.
    HalfOpen {
        since: Instant,
    },
}

/// A circuit breaker; cheap to consult (one uncontended lock) on every call.
pub(crate) struct Breaker {
    cfg: BreakerConfig,
    state: Mutex<State>,
    trips: AtomicU64,
}

impl Breaker {
    pub(crate) fn new(cfg: BreakerConfig) -> Breaker {
        Breaker { cfg, state: Mutex::new(State::Closed { failures: 0 }), trips: AtomicU64::new(0) }
    }

    /// Decides whether a call runs.
    pub(crate) fn admit(&self) -> Admission {
        let now = Instant::now();
        let mut s = self.state.lock();
        match *s {
            State::Closed { .. } => Admission::Call,
            State::Open { until } if now >= until => {
                *s = State::HalfOpen { since: now };
                Admission::Trial
            }
            State::Open { .. } => Admission::Skip,
            // A trial that never reported back (its caller went away) must not keep the plugin off for good.
            State::HalfOpen { since } if now.duration_since(since) >= self.cfg.cool_down => {
                *s = State::HalfOpen { since: now };
                Admission::Trial
            }
            State::HalfOpen { .. } => Admission::Skip,
        }
    }

    /// Records how an admitted call ended.
    pub(crate) fn record(&self, admission: Admission, ok: bool) {
        let now = Instant::now();
        let mut s = self.state.lock();
        match (*s, ok) {
            (_, true) if admission == Admission::Trial => *s = State::Closed { failures: 0 },
            (State::Closed { .. }, true) => *s = State::Closed { failures: 0 },
            (State::Closed { failures }, false) => {
                let failures = failures + 1;
                if failures >= self.cfg.failure_threshold.max(1) {
                    *s = State::Open { until: now + self.cfg.cool_down };
                    self.trips.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(failures, "plugin circuit breaker opened");
                } else {
                    *s = State::Closed { failures };
                }
            }
            (State::HalfOpen { .. }, false) if admission == Admission::Trial => {
                *s = State::Open { until: now + self.cfg.cool_down };
                self.trips.fetch_add(1, Ordering::Relaxed);
            }
            // A call admitted before the breaker opened finished late; the state already reflects newer news.
            _ => {}
        }
    }

    /// Closes the breaker, e.g. when a new version goes live.
    pub(crate) fn reset(&self) {
        *self.state.lock() = State::Closed { failures: 0 };
    }

    /// `closed`, `open` or `half-open`.
    pub(crate) fn state(&self) -> &'static str {
        match *self.state.lock() {
            State::Closed { .. } => "closed",
            State::Open { .. } => "open",
            State::HalfOpen { .. } => "half-open",
        }
    }

    /// How often the breaker opened.
    pub(crate) fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn breaker(ms: u64) -> Breaker {
        Breaker::new(BreakerConfig { failure_threshold: 3, cool_down: Duration::from_millis(ms) })
    }

    #[test]
    fn consecutive_failures_open_it_and_a_success_resets_the_count() {
        let b = breaker(10_000);
        b.record(Admission::Call, false);
        b.record(Admission::Call, false);
        b.record(Admission::Call, true);
        b.record(Admission::Call, false);
        b.record(Admission::Call, false);
        assert_eq!(b.admit(), Admission::Call);
        b.record(Admission::Call, false);
        assert_eq!(b.state(), "open");
        assert_eq!(b.admit(), Admission::Skip);
        assert_eq!(b.trips(), 1);
    }

    #[test]
    fn after_the_cool_down_one_trial_decides() {
        let b = breaker(20);
        for _ in 0..3 {
            b.record(Admission::Call, false);
        }
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(), Admission::Trial);
        assert_eq!(b.admit(), Admission::Skip, "one trial at a time");
        b.record(Admission::Trial, false);
        assert_eq!(b.state(), "open");
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(), Admission::Trial);
        b.record(Admission::Trial, true);
        assert_eq!(b.state(), "closed");
        assert_eq!(b.admit(), Admission::Call);
        assert_eq!(b.trips(), 2);
    }

    #[test]
    fn a_lost_trial_does_not_keep_it_open_forever() {
        let b = breaker(20);
        for _ in 0..3 {
            b.record(Admission::Call, false);
        }
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(), Admission::Trial);
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(), Admission::Trial);
        b.reset();
        assert_eq!(b.state(), "closed");
    }
}
