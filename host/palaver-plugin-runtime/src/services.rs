//! The world outside the sandbox as the host imports see it: the key-value store, the directory, the effects sink
//! and the clock, bundled in [`HostServices`]. The server passes implementations over its own ports; tests and
//! golden fixtures use the in-memory ones.

use crate::directory::{Directory, NoDirectory};
use crate::effects::{Effects, NullEffects};
use crate::kv::{MemoryKv, PluginKv};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The host's clock: the only time a plugin can learn, and what key-value TTLs are measured against.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch, UTC.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(palaver_core::now_millis()).unwrap_or(0)
    }
}

/// A clock that moves only when told: for tests of TTLs and time-dependent plugins.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(now_ms))
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the host imports reach. Cloning shares the implementations.
#[derive(Clone)]
pub struct HostServices {
    /// Backs the `kv` import.
    pub kv: Arc<dyn PluginKv>,
    /// Backs the `directory` import.
    pub directory: Arc<dyn Directory>,
    /// Receives the events and notifications of calls that succeeded.
    pub effects: Arc<dyn Effects>,
    /// Backs the `clock` import and key-value TTLs.
    pub clock: Arc<dyn Clock>,
}

impl HostServices {
    /// Services from explicit parts.
    pub fn new(
        kv: Arc<dyn PluginKv>,
        directory: Arc<dyn Directory>,
        effects: Arc<dyn Effects>,
        clock: Arc<dyn Clock>,
    ) -> HostServices {
        HostServices { kv, directory, effects, clock }
    }

    /// An in-memory key-value store, an empty directory, effects dropped, and the system clock: enough to run
    /// filters that need nothing from the server.
    pub fn in_memory() -> HostServices {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        HostServices {
            kv: Arc::new(MemoryKv::new(clock.clone())),
            directory: Arc::new(NoDirectory),
            effects: Arc::new(NullEffects),
            clock,
        }
    }

    /// These services with another key-value store.
    pub fn with_kv(mut self, kv: Arc<dyn PluginKv>) -> HostServices {
        self.kv = kv;
        self
    }

    /// These services with another directory.
    pub fn with_directory(mut self, directory: Arc<dyn Directory>) -> HostServices {
        self.directory = directory;
        self
    }

    /// These services with another effects sink.
    pub fn with_effects(mut self, effects: Arc<dyn Effects>) -> HostServices {
        self.effects = effects;
        self
    }

    /// These services with another clock. The key-value store keeps the clock it was built with.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> HostServices {
        self.clock = clock;
        self
    }
}

impl Default for HostServices {
    fn default() -> Self {
        HostServices::in_memory()
    }
}

impl std::fmt::Debug for HostServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostServices").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_clock_moves_only_when_told() {
        let c = ManualClock::new(10);
        assert_eq!(c.now_ms(), 10);
        c.advance(5);
        assert_eq!(c.now_ms(), 15);
        c.set(3);
        assert_eq!(c.now_ms(), 3);
    }

    #[test]
    fn the_system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
