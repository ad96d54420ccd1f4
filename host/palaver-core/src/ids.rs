//! Identifiers: tenants, users, sessions and topic names, with Tinode's textual forms (`usr…`, `grp…`, `p2p…`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::fmt;

/// A tenant. The embedded default has exactly one, [`TenantId::DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct TenantId(pub u64);

impl TenantId {
    /// The tenant that exists on first start and accepts the demo API key.
    pub const DEFAULT: TenantId = TenantId(1);
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A connection-level session, unique within one node's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

/// A user, stored as a 64-bit integer and shown as `usr` + base64url of its little-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct UserId(pub u64);

/// A string that is not a valid user id or topic name.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid id {0:?}")]
pub struct IdParseError(pub String);

impl UserId {
    /// Parses `usrXXXXXXXXXXX`.
    pub fn parse(s: &str) -> Result<UserId, IdParseError> {
        let err = || IdParseError(s.to_owned());
        let body = s.strip_prefix("usr").ok_or_else(err)?;
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| err())?;
        let arr: [u8; 8] = bytes.try_into().map_err(|_| err())?;
        let v = u64::from_le_bytes(arr);
        if v == 0 { Err(err()) } else { Ok(UserId(v)) }
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "usr{}", URL_SAFE_NO_PAD.encode(self.0.to_le_bytes()))
    }
}

/// What a topic name denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicKind {
    /// The user's own `me` topic (contacts, presence, account).
    Me,
    /// `fnd`: tag search.
    Fnd,
    /// `sys`: system topic.
    Sys,
    /// A group, `grp…` (created from `new…` or `nch…`).
    Group,
    /// A one-to-one topic. Clients name it by the peer's `usr…`; it is stored as `p2p…`.
    P2p,
}

/// Classifies a stored or wire topic name. `usr…` names classify as P2P (the client's view of one).
pub fn topic_kind(name: &str) -> Option<TopicKind> {
    match name {
        "me" => Some(TopicKind::Me),
        "fnd" => Some(TopicKind::Fnd),
        "sys" => Some(TopicKind::Sys),
        n if n.strip_prefix("grp").is_some_and(is_name_body) => Some(TopicKind::Group),
        n if (n.starts_with("p2p") && n.len() == 25) || n.starts_with("usr") => Some(TopicKind::P2p),
        _ => None,
    }
}

/// The longest part of a group name after its `grp` prefix (Palaver's own names have 11).
pub const MAX_GROUP_NAME_BODY: usize = 32;

/// True for the part of a topic name after its prefix: 1 to [`MAX_GROUP_NAME_BODY`] characters of base64url's
/// alphabet. Anything else is refused on input, before it can reach a store key or a log line.
pub fn is_name_body(body: &str) -> bool {
    (1..=MAX_GROUP_NAME_BODY).contains(&body.len())
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The stored name of the P2P topic between two users: `p2p` + base64url(lower ‖ higher), 25 characters.
pub fn p2p_name(a: UserId, b: UserId) -> String {
    let (lo, hi) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&lo.0.to_le_bytes());
    bytes[8..].copy_from_slice(&hi.0.to_le_bytes());
    format!("p2p{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// Both parties of the stored P2P topic `name`, lower id first; `None` if it is not a P2P name.
pub fn p2p_users(name: &str) -> Option<(UserId, UserId)> {
    let bytes = URL_SAFE_NO_PAD.decode(name.strip_prefix("p2p")?).ok()?;
    if bytes.len() != 16 {
        return None;
    }
    let lo = UserId(u64::from_le_bytes(bytes[..8].try_into().ok()?));
    let hi = UserId(u64::from_le_bytes(bytes[8..].try_into().ok()?));
    Some((lo, hi))
}

/// The other party of the stored P2P topic `name`, as seen by `me`; `None` if `me` is not a party.
pub fn p2p_peer(name: &str, me: UserId) -> Option<UserId> {
    let (lo, hi) = p2p_users(name)?;
    if lo == me {
        Some(hi)
    } else if hi == me {
        Some(lo)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_round_trip() {
        for v in [1u64, 42, u64::MAX, 0x1234_5678_9abc_def0] {
            let id = UserId(v);
            let s = id.to_string();
            assert_eq!(s.len(), 14);
            assert_eq!(UserId::parse(&s).unwrap(), id);
        }
        assert!(UserId::parse("usr").is_err());
        assert!(UserId::parse("grpAAAAAAAAAAA").is_err());
        assert!(UserId::parse("usrAAAAAAAAAAA").is_err(), "zero is not a user");
    }

    #[test]
    fn p2p_names_are_symmetric() {
        let (a, b) = (UserId(7), UserId(900));
        let n = p2p_name(a, b);
        assert_eq!(n, p2p_name(b, a));
        assert_eq!(n.len(), 25);
        assert_eq!(p2p_peer(&n, a), Some(b));
        assert_eq!(p2p_peer(&n, b), Some(a));
        assert_eq!(p2p_peer(&n, UserId(3)), None);
        assert_eq!(topic_kind(&n), Some(TopicKind::P2p));
        assert_eq!(topic_kind("grpAbc"), Some(TopicKind::Group));
        assert_eq!(topic_kind("bogus"), None);
        assert_eq!(topic_kind("grp"), None);
        assert_eq!(topic_kind("grpa b"), None, "not base64url");
        assert_eq!(topic_kind("grp\u{202e}x"), None, "no control or bidi characters");
        assert_eq!(topic_kind(&format!("grp{}", "a".repeat(33))), None, "too long");
        assert_eq!(topic_kind(&format!("grp{}", "a".repeat(32))), Some(TopicKind::Group));
    }
}
