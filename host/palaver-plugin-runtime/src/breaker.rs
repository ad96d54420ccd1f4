//! The circuit breakers of one plugin, one per tenant: a tenant's consecutive faults open its breaker, an open
//! breaker skips the plugin for that tenant (its failure policy answers instead), and after the cool-down one trial
//! call decides whether it closes or opens again. Other tenants keep calling the plugin.

use crate::config::BreakerConfig;
use palaver_core::TenantId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

impl State {
    const CLOSED: State = State::Closed { failures: 0 };

    fn name(self) -> &'static str {
        match self {
            State::Closed { .. } => "closed",
            State::Open { .. } => "open",
            State::HalfOpen { .. } => "half-open",
        }
    }

    /// True for the state a tenant without an entry is in.
    fn is_clean(self) -> bool {
        matches!(self, State::Closed { failures: 0 })
    }
}

/// The circuit breakers of one plugin, one per tenant: a tenant whose calls keep faulting (say, because its
/// users send what the plugin cannot handle) switches the plugin off for itself only. Only tenants with a recent
/// fault take an entry, at most [`BreakerConfig::max_tenants`]; with no entry at all, consulting the breakers
/// takes no lock.
pub(crate) struct Breakers {
    cfg: BreakerConfig,
    states: Mutex<HashMap<TenantId, State>>,
    /// `states.len()`, readable without the lock: the fast path of the common case where nothing failed lately.
    entries: AtomicUsize,
    trips: AtomicU64,
}

impl Breakers {
    pub(crate) fn new(cfg: BreakerConfig) -> Breakers {
        Breakers { cfg, states: Mutex::new(HashMap::new()), entries: AtomicUsize::new(0), trips: AtomicU64::new(0) }
    }

    /// Decides whether a call for `tenant` runs.
    pub(crate) fn admit(&self, tenant: TenantId) -> Admission {
        if self.entries.load(Ordering::Acquire) == 0 {
            return Admission::Call;
        }
        let now = Instant::now();
        let mut states = self.states.lock();
        let Some(s) = states.get_mut(&tenant) else { return Admission::Call };
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

    /// Records how an admitted call for `tenant` ended.
    pub(crate) fn record(&self, tenant: TenantId, admission: Admission, ok: bool) {
        if ok && self.entries.load(Ordering::Acquire) == 0 {
            return;
        }
        let now = Instant::now();
        let mut states = self.states.lock();
        let current = states.get(&tenant).copied().unwrap_or(State::CLOSED);
        let next = match (current, ok) {
            (_, true) if admission == Admission::Trial => State::CLOSED,
            (State::Closed { .. }, true) => State::CLOSED,
            (State::Closed { failures }, false) => {
                let failures = failures + 1;
                if failures >= self.cfg.failure_threshold.max(1) {
                    self.trips.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(failures, %tenant, "plugin circuit breaker opened for the tenant");
                    State::Open { until: now + self.cfg.cool_down }
                } else {
                    State::Closed { failures }
                }
            }
            (State::HalfOpen { .. }, false) if admission == Admission::Trial => {
                self.trips.fetch_add(1, Ordering::Relaxed);
                State::Open { until: now + self.cfg.cool_down }
            }
            // A call admitted before the breaker opened finished late; the state already reflects newer news.
            (s, _) => s,
        };
        if next.is_clean() {
            states.remove(&tenant);
        } else {
            if !states.contains_key(&tenant) && states.len() >= self.cfg.max_tenants.max(1) {
                evict(&mut states);
            }
            states.insert(tenant, next);
        }
        self.entries.store(states.len(), Ordering::Release);
    }

    /// Closes every tenant's breaker, e.g. when a new version goes live.
    pub(crate) fn reset(&self) {
        let mut states = self.states.lock();
        states.clear();
        self.entries.store(0, Ordering::Release);
    }

    /// `closed`, `open` or `half-open` for one tenant.
    pub(crate) fn state(&self, tenant: TenantId) -> &'static str {
        self.states.lock().get(&tenant).map_or("closed", |s| s.name())
    }

    /// How many tenants' breakers keep the plugin off (open or half-open).
    pub(crate) fn open(&self) -> usize {
        if self.entries.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.states.lock().values().filter(|s| !matches!(s, State::Closed { .. })).count()
    }

    /// How often a tenant's breaker opened, all tenants together.
    pub(crate) fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }
}

/// Makes room for one more tenant: forgets a tenant that is only counting faults (it starts counting again), or
/// failing that the open breaker closest to its trial, which is the least loss of protection.
fn evict(states: &mut HashMap<TenantId, State>) {
    let victim = states
        .iter()
        .find(|(_, s)| matches!(s, State::Closed { .. }))
        .or_else(|| {
            states.iter().min_by_key(|(_, s)| match s {
                State::Open { until } => Some(*until),
                // A trial is running: its outcome decides soon anyway.
                _ => None,
            })
        })
        .map(|(t, _)| *t);
    if let Some(t) = victim {
        states.remove(&t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const T: TenantId = TenantId(1);

    fn breaker(ms: u64) -> Breakers {
        Breakers::new(BreakerConfig { failure_threshold: 3, cool_down: Duration::from_millis(ms), max_tenants: 8 })
    }

    #[test]
    fn consecutive_failures_open_it_and_a_success_resets_the_count() {
        let b = breaker(10_000);
        b.record(T, Admission::Call, false);
        b.record(T, Admission::Call, false);
        b.record(T, Admission::Call, true);
        b.record(T, Admission::Call, false);
        b.record(T, Admission::Call, false);
        assert_eq!(b.admit(T), Admission::Call);
        b.record(T, Admission::Call, false);
        assert_eq!(b.state(T), "open");
        assert_eq!(b.admit(T), Admission::Skip);
        assert_eq!(b.trips(), 1);
        assert_eq!(b.open(), 1);
    }

    #[test]
    fn one_tenants_breaker_leaves_the_others_closed() {
        let b = breaker(10_000);
        for _ in 0..3 {
            b.record(T, Admission::Call, false);
        }
        assert_eq!(b.admit(T), Admission::Skip);
        assert_eq!(b.admit(TenantId(2)), Admission::Call);
        assert_eq!(b.state(TenantId(2)), "closed");
        b.record(TenantId(2), Admission::Call, true);
        assert_eq!(b.state(T), "open", "another tenant's success does not close it");
    }

    #[test]
    fn the_entries_are_bounded_and_a_clean_tenant_takes_none() {
        let b = breaker(10_000);
        b.record(T, Admission::Call, false);
        b.record(T, Admission::Call, true);
        assert_eq!(b.entries.load(Ordering::Relaxed), 0, "a success forgets the count");
        for t in 0..100 {
            for _ in 0..3 {
                b.record(TenantId(t), Admission::Call, false);
            }
        }
        assert_eq!(b.states.lock().len(), 8);
        assert_eq!(b.open(), 8);
        // A tenant that only counts faults gives way first.
        b.reset();
        b.record(TenantId(500), Admission::Call, false);
        for t in 0..7 {
            for _ in 0..3 {
                b.record(TenantId(t), Admission::Call, false);
            }
        }
        for _ in 0..3 {
            b.record(TenantId(7), Admission::Call, false);
        }
        assert_eq!(b.open(), 8);
        assert!(!b.states.lock().contains_key(&TenantId(500)));
    }

    #[test]
    fn after_the_cool_down_one_trial_decides() {
        let b = breaker(20);
        for _ in 0..3 {
            b.record(T, Admission::Call, false);
        }
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(T), Admission::Trial);
        assert_eq!(b.admit(T), Admission::Skip, "one trial at a time");
        b.record(T, Admission::Trial, false);
        assert_eq!(b.state(T), "open");
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(T), Admission::Trial);
        b.record(T, Admission::Trial, true);
        assert_eq!(b.state(T), "closed");
        assert_eq!(b.admit(T), Admission::Call);
        assert_eq!(b.trips(), 2);
    }

    #[test]
    fn a_lost_trial_does_not_keep_it_open_forever() {
        let b = breaker(20);
        for _ in 0..3 {
            b.record(T, Admission::Call, false);
        }
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(T), Admission::Trial);
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.admit(T), Admission::Trial);
        b.reset();
        assert_eq!(b.state(T), "closed");
    }
}
