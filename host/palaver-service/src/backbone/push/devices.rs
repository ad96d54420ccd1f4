//! The push worker's copy of each user's devices, for a node that is the only writer of its devices (the
//! embedded default: no shared bus, so every `{hi dev}` and every removal goes through this process).
//!
//! A message push reads the devices of every recipient and of the sender; from the store that is one read per
//! user per message, each a hand-off to a SQLite connection thread, which is what the push cost most. The copy
//! answers those reads from memory. It is exact, not merely fresh: every device write of this process
//! ([`DeviceCopies::changed`]) bumps the epoch, and a load started under an older epoch stores nothing, so a
//! registration, a removal or a token moving to another user is seen by the very next task. A node with a shared
//! bus never uses it: another node may register a device at any time, and the worker reads the store.
//!
//! Bounded: at most [`DeviceCopies::max`] users are kept; past that the copy is emptied and refills from the
//! users pushed next (cheaper than tracking recency on every read, and rare at any sensible bound).

use palaver_core::ports::Device;
use palaver_core::{TenantId, UserId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Users kept by default.
pub(crate) const DEFAULT_MAX: usize = 100_000;

#[derive(Default)]
struct Copies {
    epoch: u64,
    users: HashMap<(TenantId, UserId), Arc<Vec<Device>>>,
}

/// Each user's devices as last read, while nothing changed them.
pub(crate) struct DeviceCopies {
    inner: Mutex<Copies>,
    max: usize,
}

impl DeviceCopies {
    pub(crate) fn new(max: usize) -> DeviceCopies {
        DeviceCopies { inner: Mutex::new(Copies::default()), max: max.max(1) }
    }

    /// The user's devices if a copy is held; otherwise the epoch a load must store under.
    pub(crate) fn get(&self, tenant: TenantId, user: UserId) -> Result<Arc<Vec<Device>>, u64> {
        let copies = self.inner.lock();
        copies.users.get(&(tenant, user)).cloned().ok_or(copies.epoch)
    }

    /// Keeps what a load read, unless a device changed since it began (at `epoch`).
    pub(crate) fn put(&self, tenant: TenantId, user: UserId, epoch: u64, devices: Arc<Vec<Device>>) {
        let mut copies = self.inner.lock();
        if copies.epoch != epoch {
            return;
        }
        if copies.users.len() >= self.max {
            copies.users.clear();
        }
        copies.users.insert((tenant, user), devices);
    }

    /// A device was registered, refreshed or removed: every copy goes, and loads under way store nothing (a
    /// token that moved changed two users, and the previous holder is not known here).
    pub(crate) fn changed(&self) {
        let mut copies = self.inner.lock();
        copies.epoch = copies.epoch.wrapping_add(1);
        copies.users.clear();
    }

    /// Users whose devices are held, for tests.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().users.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(1);

    fn device(user: u64) -> Device {
        Device {
            user: UserId(user),
            device_id: format!("d{user}"),
            platform: "android".into(),
            provider: "webhook".into(),
            token: format!("t{user}"),
            app: String::new(),
            language: String::new(),
            last_seen: 0,
        }
    }

    #[test]
    fn a_copy_is_served_until_a_device_changes() {
        let copies = DeviceCopies::new(10);
        let Err(epoch) = copies.get(T, UserId(1)) else { panic!("nothing held yet") };
        copies.put(T, UserId(1), epoch, Arc::new(vec![device(1)]));
        assert_eq!(copies.get(T, UserId(1)).map(|d| d.len()), Ok(1));
        assert!(copies.get(TenantId(2), UserId(1)).is_err(), "tenants are apart");
        copies.changed();
        assert!(copies.get(T, UserId(1)).is_err(), "a change drops every copy");
    }

    #[test]
    fn a_load_that_raced_a_change_stores_nothing() {
        let copies = DeviceCopies::new(10);
        let Err(epoch) = copies.get(T, UserId(1)) else { panic!("nothing held yet") };
        copies.changed();
        copies.put(T, UserId(1), epoch, Arc::new(Vec::new()));
        assert!(copies.get(T, UserId(1)).is_err(), "the stale load was dropped");
    }

    #[test]
    fn the_copy_stays_bounded() {
        let copies = DeviceCopies::new(10);
        for user in 0..1_000 {
            let Err(epoch) = copies.get(T, UserId(user)) else { panic!("nothing held yet") };
            copies.put(T, UserId(user), epoch, Arc::new(vec![device(user)]));
            assert!(copies.len() <= 10);
        }
    }
}
