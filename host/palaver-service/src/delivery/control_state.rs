//! What a session is judged by when a session control arrives: its device slots and the control versions it
//! logged in under. Kept apart from [`super::control`] so that the hub, which holds it per session, does not
//! depend on the controls that act on sessions.

use palaver_core::ports::{ControlScope, ControlVersions};

/// What a session is judged by: its device slots (`dev` from `{hi}`, then `platform:<platf>`) and the versions
/// read when it logged in. `None` until they could be read: the first successful read becomes the baseline.
#[derive(Debug, Default)]
pub(crate) struct ControlState {
    slots: Vec<String>,
    versions: Option<ControlVersions>,
}

impl ControlState {
    /// Sets the device slots at login.
    pub(crate) fn set_slots(&mut self, slots: Vec<String>) {
        self.slots = slots;
    }

    pub(crate) fn slots(&self) -> Vec<String> {
        self.slots.clone()
    }

    /// Records the versions read at login (or at the first successful check).
    pub(crate) fn set_versions(&mut self, v: ControlVersions) {
        self.versions = Some(v);
    }

    /// True if the session is addressed by `scope` (every session is addressed by `User`).
    fn addressed(&self, scope: &ControlScope) -> bool {
        match scope {
            ControlScope::User => true,
            ControlScope::Device(d) => self.slots.contains(d),
        }
    }

    /// The session's version for `scope`, if known.
    fn version(&self, scope: &ControlScope) -> Option<u64> {
        let v = self.versions.as_ref()?;
        match scope {
            ControlScope::User => Some(v.user),
            ControlScope::Device(d) => self.slots.iter().position(|s| s == d).and_then(|i| v.devices.get(i).copied()),
        }
    }

    /// True if a control of `version` for `scope` must close this session.
    pub(crate) fn closes(&self, scope: &ControlScope, version: u64) -> bool {
        // A session whose versions were never read cannot prove it is newer than the control: close it.
        self.addressed(scope) && self.version(scope).is_none_or(|mine| mine < version)
    }

    /// Raises the session's version for `scope` to `version`: the session that made the change survives it.
    pub(crate) fn adopt(&mut self, scope: &ControlScope, version: u64) {
        let slots = self.slots.clone();
        let Some(v) = self.versions.as_mut() else { return };
        match scope {
            ControlScope::User => v.user = v.user.max(version),
            ControlScope::Device(d) => {
                if let Some(i) = slots.iter().position(|s| s == d)
                    && let Some(slot) = v.devices.get_mut(i)
                {
                    *slot = (*slot).max(version);
                }
            }
        }
    }

    /// Compares freshly read versions with the session's; true if any is newer (a control the bus lost).
    /// Unknown versions adopt `current` as the baseline instead.
    pub(crate) fn check(&mut self, current: ControlVersions) -> bool {
        match &self.versions {
            None => {
                self.versions = Some(current);
                false
            }
            Some(mine) => {
                current.user > mine.user || current.devices.iter().zip(&mine.devices).any(|(now, was)| now > was)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(slots: &[&str], user: u64, devices: &[u64]) -> ControlState {
        ControlState {
            slots: slots.iter().map(|s| s.to_string()).collect(),
            versions: Some(ControlVersions { user, devices: devices.to_vec() }),
        }
    }

    #[test]
    fn only_newer_controls_close_and_only_addressed_sessions() {
        let s = state(&["phone1", "platform:ios"], 2, &[1, 4]);
        assert!(!s.closes(&ControlScope::User, 2), "a stale control never closes a newer session");
        assert!(s.closes(&ControlScope::User, 3));
        assert!(s.closes(&ControlScope::Device("phone1".into()), 2));
        assert!(!s.closes(&ControlScope::Device("platform:ios".into()), 4));
        assert!(!s.closes(&ControlScope::Device("tablet".into()), 99), "another device's control");
        assert!(ControlState::default().closes(&ControlScope::User, 1), "unknown versions cannot prove newer");
    }

    #[test]
    fn adopting_exempts_the_changer_and_check_finds_missed_controls() {
        let mut s = state(&["phone1"], 2, &[1]);
        s.adopt(&ControlScope::User, 5);
        assert!(!s.closes(&ControlScope::User, 5));
        assert!(!s.check(ControlVersions { user: 5, devices: vec![1] }));
        assert!(s.check(ControlVersions { user: 5, devices: vec![2] }), "a device control the bus lost");
        let mut fresh = ControlState::default();
        assert!(!fresh.check(ControlVersions { user: 9, devices: vec![] }), "the first read is the baseline");
        assert!(!fresh.closes(&ControlScope::User, 9));
    }
}
