//! Tinode access modes: the `JRWPASDO` bit set, its textual form, and deltas such as `+AS-D`.

use std::fmt;

/// A set of access bits. The empty set is written `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct AccessMode(pub u8);

/// A string that is not an access mode.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid access mode {0:?}")]
pub struct ModeParseError(pub String);

const LETTERS: [(char, u8); 8] =
    [('J', 0x01), ('R', 0x02), ('W', 0x04), ('P', 0x08), ('A', 0x10), ('S', 0x20), ('D', 0x40), ('O', 0x80)];

impl AccessMode {
    pub const NONE: AccessMode = AccessMode(0);
    pub const JOIN: AccessMode = AccessMode(0x01);
    pub const READ: AccessMode = AccessMode(0x02);
    pub const WRITE: AccessMode = AccessMode(0x04);
    pub const PRES: AccessMode = AccessMode(0x08);
    pub const APPROVE: AccessMode = AccessMode(0x10);
    pub const SHARE: AccessMode = AccessMode(0x20);
    pub const DELETE: AccessMode = AccessMode(0x40);
    pub const OWNER: AccessMode = AccessMode(0x80);

    /// Group default for authenticated users: `JRWPS`.
    pub const GROUP_AUTH: AccessMode = AccessMode(0x01 | 0x02 | 0x04 | 0x08 | 0x20);
    /// P2P default: `JRWPA`.
    pub const P2P: AccessMode = AccessMode(0x01 | 0x02 | 0x04 | 0x08 | 0x10);
    /// What the owner of a group gets: `JRWPASDO`.
    pub const OWNER_FULL: AccessMode = AccessMode(0xff);
    /// A user's default access for authenticated peers: `JRWPAS`.
    pub const USER_AUTH: AccessMode = AccessMode(0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20);
    /// `me` and `fnd` subscriptions: `JPS`.
    pub const SELF: AccessMode = AccessMode(0x01 | 0x08 | 0x20);

    /// True if every bit of `other` is set.
    pub fn has(self, other: AccessMode) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// The bits set in both.
    pub fn and(self, other: AccessMode) -> AccessMode {
        AccessMode(self.0 & other.0)
    }

    /// True if every bit of `self` is also in `other` (the empty set is within anything).
    pub fn within(self, other: AccessMode) -> bool {
        self.0 & !other.0 == 0
    }

    /// Tinode's rule for changing someone else's `given` from `old` to `self` (an invite starts from `N`): the
    /// bits it adds must lie within what the granter was given, and `O` is never added (ownership moves only by
    /// a transfer); the owner adds anything but `O`. Taking bits away is always within the rule, and what the
    /// granter chose not to want (a muted `P`) still counts as theirs to give.
    pub fn grantable_by(self, old: AccessMode, granter_given: AccessMode, granter_is_owner: bool) -> bool {
        let added = AccessMode(self.0 & !old.0);
        !added.has(AccessMode::OWNER) && (granter_is_owner || added.within(granter_given))
    }

    /// Parses an absolute mode (`JRWP`, `N`) or, given a base, a delta (`+AS-D`).
    /// An empty string yields `None`: "use the default".
    pub fn parse(s: &str) -> Result<Option<AccessMode>, ModeParseError> {
        Self::parse_with_base(s, AccessMode::NONE)
    }

    /// As [`AccessMode::parse`], applying `+`/`-` deltas to `base`.
    pub fn parse_with_base(s: &str, base: AccessMode) -> Result<Option<AccessMode>, ModeParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        let err = || ModeParseError(s.to_owned());
        if s.eq_ignore_ascii_case("n") {
            return Ok(Some(AccessMode::NONE));
        }
        if s.starts_with('+') || s.starts_with('-') {
            let mut mode = base.0;
            let mut adding = true;
            for c in s.chars() {
                match c {
                    '+' => adding = true,
                    '-' => adding = false,
                    c => {
                        let bit = bit_of(c).ok_or_else(err)?;
                        if adding { mode |= bit } else { mode &= !bit }
                    }
                }
            }
            return Ok(Some(AccessMode(mode)));
        }
        let mut mode = 0;
        for c in s.chars() {
            mode |= bit_of(c).ok_or_else(err)?;
        }
        Ok(Some(AccessMode(mode)))
    }
}

fn bit_of(c: char) -> Option<u8> {
    let c = c.to_ascii_uppercase();
    LETTERS.iter().find(|(l, _)| *l == c).map(|(_, b)| *b)
}

impl fmt::Display for AccessMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("N");
        }
        for (letter, bit) in LETTERS {
            if self.0 & bit != 0 {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// Default access granted to authenticated and anonymous users when they join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DefaultAccess {
    pub auth: AccessMode,
    pub anon: AccessMode,
}

impl DefaultAccess {
    /// A group's default: authenticated users get `JRWPS`, anonymous ones nothing.
    pub const GROUP: DefaultAccess = DefaultAccess { auth: AccessMode::GROUP_AUTH, anon: AccessMode::NONE };
    /// A user's default, used when someone opens a P2P topic with them.
    pub const USER: DefaultAccess = DefaultAccess { auth: AccessMode::USER_AUTH, anon: AccessMode::NONE };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(AccessMode::parse("JRWPASDO").unwrap(), Some(AccessMode::OWNER_FULL));
        assert_eq!(AccessMode::parse("jrwps").unwrap(), Some(AccessMode::GROUP_AUTH));
        assert_eq!(AccessMode::parse("N").unwrap(), Some(AccessMode::NONE));
        assert_eq!(AccessMode::parse("").unwrap(), None);
        assert!(AccessMode::parse("JX").is_err());
        assert_eq!(AccessMode::GROUP_AUTH.to_string(), "JRWPS");
        assert_eq!(AccessMode::NONE.to_string(), "N");
    }

    #[test]
    fn applies_deltas() {
        let m = AccessMode::parse_with_base("+AS-D", AccessMode::parse("JRWD").unwrap().unwrap()).unwrap();
        assert_eq!(m.unwrap().to_string(), "JRWAS");
        assert!(AccessMode::OWNER_FULL.has(AccessMode::WRITE));
        assert!(!AccessMode::GROUP_AUTH.has(AccessMode::DELETE));
        assert!(!AccessMode::GROUP_AUTH.has(AccessMode::NONE));
    }

    #[test]
    fn grants_stay_within_the_granter_s_rights() {
        let m = |s: &str| AccessMode::parse(s).unwrap().unwrap();
        let (none, reader) = (AccessMode::NONE, m("JRP"));
        assert!(m("JR").grantable_by(none, reader, false));
        assert!(none.grantable_by(m("JRWD"), reader, false), "taking everything away is within anyone's rights");
        assert!(!m("JRW").grantable_by(none, reader, false), "W is not the reader's to give");
        assert!(!m("JRD").grantable_by(m("JR"), m("JRWPAS"), false), "nor is D the admin's");
        assert!(m("JRD").grantable_by(m("JRWD"), m("JRWPAS"), false), "taking W from a holder of D is fine");
        assert!(m("JRWPASD").grantable_by(none, m("JRWPASDO"), true), "the owner grants anything but O");
        assert!(!m("JRWPASDO").grantable_by(none, AccessMode::OWNER_FULL, true), "ownership moves only by transfer");
    }
}
