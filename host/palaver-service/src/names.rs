//! Topic names as clients write them (`me`, `fnd`, `grp…`, `new…`, `usr…`, `p2p…`), resolved to what is
//! stored, and stored names turned back into what a given user sees.

use palaver_core::{TopicKind, UserId, is_name_body, p2p_name, topic_kind};

/// A topic as a session addresses it, resolved to what is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    Me,
    Fnd,
    /// A group: wire name and stored name are the same.
    Group(String),
    /// A P2P topic: the client calls it by the peer's `usr…`; `stored` is the `p2p…` name.
    P2p {
        peer: UserId,
        stored: String,
    },
    /// `new…` or `nch…`: a group to create.
    NewGroup {
        tmp: String,
        channel: bool,
    },
}

/// Resolves a wire topic name for `me`. `None` if the name is not one we serve.
pub(crate) fn resolve(name: &str, me: UserId) -> Option<Resolved> {
    // A temporary name is echoed back to the client, so it is held to the same alphabet and length as a group's.
    let tmp_ok = |prefix: &str| name.strip_prefix(prefix).is_some_and(|b| b.is_empty() || is_name_body(b));
    if name.starts_with("new") {
        return tmp_ok("new").then(|| Resolved::NewGroup { tmp: name.to_owned(), channel: false });
    }
    if name.starts_with("nch") {
        return tmp_ok("nch").then(|| Resolved::NewGroup { tmp: name.to_owned(), channel: true });
    }
    match topic_kind(name)? {
        TopicKind::Me => Some(Resolved::Me),
        TopicKind::Fnd => Some(Resolved::Fnd),
        TopicKind::Sys => None,
        TopicKind::Group => Some(Resolved::Group(name.to_owned())),
        TopicKind::P2p => {
            if name.starts_with("p2p") {
                // The stored name is rebuilt from the two parties, so a name with them the other way round
                // addresses the same conversation rather than a second one.
                let peer = palaver_core::p2p_peer(name, me).filter(|p| *p != me)?;
                return Some(Resolved::P2p { peer, stored: p2p_name(me, peer) });
            }
            let peer = UserId::parse(name).ok()?;
            if peer == me {
                return None;
            }
            Some(Resolved::P2p { peer, stored: p2p_name(me, peer) })
        }
    }
}

/// The name a user sees for a stored topic: the peer's `usr…` for P2P, the stored name otherwise.
pub(crate) fn wire_name(stored: &str, viewer: UserId) -> String {
    if stored.starts_with("p2p")
        && let Some(peer) = palaver_core::p2p_peer(stored, viewer)
    {
        return peer.to_string();
    }
    stored.to_owned()
}
