//! The gate side of the SDK: the login ([`Login`]) and the join ([`Join`]) a gate admits, and its answers
//! ([`Rejection`], [`JoinVerdict`]), for plugins of world `gate` (`on-login` and `before-subscribe`, since
//! `palaver:plugin@0.1.3`).

use crate::bindings::gate::exports::palaver::plugin::before_subscribe as wit_join;
use crate::bindings::gate::exports::palaver::plugin::on_login as wit_login;
use crate::bindings::wit;
use crate::types::TopicKind;
use std::net::IpAddr;

/// Tinode's access-mode letters, in their canonical order.
const LETTERS: &str = "JRWPASDO";

/// One login about to succeed: the credentials matched, the session is not authenticated yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The user whose credentials matched, `usr…`.
    pub user: String,
    /// The session logging in.
    pub session: String,
    /// `basic`, `token`, …
    pub scheme: String,
    /// The address of the connection's peer, without the port (behind a load balancer: the balancer's); empty
    /// when unknown.
    pub remote_addr: String,
    /// The client's `{hi ua}`; empty when none.
    pub user_agent: String,
}

impl Login {
    /// A `basic` login of `user` from `remote_addr`, as tests build them.
    pub fn new(user: &str, remote_addr: &str) -> Login {
        Login {
            user: user.to_owned(),
            session: "test-session".to_owned(),
            scheme: "basic".to_owned(),
            remote_addr: remote_addr.to_owned(),
            user_agent: String::new(),
        }
    }

    /// The client's address, `None` when it is unknown or unreadable. An IPv4 address written as IPv6
    /// (`::ffff:10.0.0.1`, what a dual-stack socket reports) comes back as IPv4, so IPv4 rules match it.
    pub fn ip(&self) -> Option<IpAddr> {
        let a = self.remote_addr.trim();
        let a = a.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(a);
        a.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
    }

    pub(crate) fn from_wit(l: wit_login::LoginInfo) -> Login {
        Login {
            user: l.call.actor,
            session: l.call.session,
            scheme: l.scheme,
            remote_addr: l.remote_addr,
            user_agent: l.user_agent,
        }
    }
}

/// A refusal: the client gets ctrl `code` (400–599; the host treats another code as a fault) with `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: u16,
    pub reason: String,
}

impl Rejection {
    /// A refusal with this code.
    pub fn new(code: u16, reason: impl Into<String>) -> Rejection {
        Rejection { code, reason: reason.into() }
    }

    /// A 403 refusal.
    pub fn forbidden(reason: impl Into<String>) -> Rejection {
        Rejection::new(403, reason)
    }

    pub(crate) fn into_wit(self) -> wit::Rejection {
        wit::Rejection { code: self.code, reason: self.reason }
    }
}

/// One join about to happen: a `{sub}` to a topic the user is not yet a member of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Join {
    /// The stored topic name (`grp…`, `p2p…`).
    pub topic: String,
    pub topic_kind: TopicKind,
    /// The joining user, `usr…`.
    pub user: String,
    pub session: String,
    /// The mode the user asked for, in Tinode's letters; empty when none.
    pub want: String,
    /// The mode the host is about to grant, in Tinode's letters (after the gates before this one narrowed it).
    pub given: String,
}

impl Join {
    /// A join to group `topic` with mode `given`, as tests build them.
    pub fn new(topic: &str, given: &str) -> Join {
        Join {
            topic: topic.to_owned(),
            topic_kind: if topic.starts_with("p2p") { TopicKind::P2p } else { TopicKind::Group },
            user: "usrASNFZ4mrze8".to_owned(),
            session: "test-session".to_owned(),
            want: String::new(),
            given: given.to_owned(),
        }
    }

    /// Whether `given` holds the access letter `letter` (`'W'`, any case).
    pub fn given_has(&self, letter: char) -> bool {
        let l = letter.to_ascii_uppercase();
        LETTERS.contains(l) && self.given.chars().any(|c| c.to_ascii_uppercase() == l)
    }

    /// `given` without the letters of `letters` (any case), in canonical order: the mode to restrict to. `N` when
    /// nothing is left.
    pub fn given_without(&self, letters: &str) -> String {
        let drop = |c: char| letters.chars().any(|l| l.eq_ignore_ascii_case(&c));
        let mode: String = LETTERS.chars().filter(|&c| self.given_has(c) && !drop(c)).collect();
        if mode.is_empty() { "N".to_owned() } else { mode }
    }

    pub(crate) fn from_wit(j: wit_join::JoinInfo) -> Join {
        Join {
            topic: j.ctx.topic,
            topic_kind: j.ctx.topic_kind.into(),
            user: j.ctx.call.actor,
            session: j.ctx.call.session,
            want: j.want,
            given: j.given,
        }
    }
}

/// What happens to a join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinVerdict {
    /// Join with the mode the host chose.
    Allow,
    /// Refuse: nothing is stored.
    Reject(Rejection),
    /// Join with this mode instead, in Tinode's letters. It may only take rights away, and must keep `J` (a member
    /// without it could never attach): a letter the join's `given` lacks, or a mode without `J`, is a fault, and the
    /// host acts on the hook's failure policy; to keep the user out, reject. [`Join::given_without`] builds one.
    Restrict(String),
}

impl JoinVerdict {
    /// Refuses the join with this code.
    pub fn reject(code: u16, reason: impl Into<String>) -> JoinVerdict {
        JoinVerdict::Reject(Rejection::new(code, reason))
    }

    /// Joins with `mode` instead.
    pub fn restrict(mode: impl Into<String>) -> JoinVerdict {
        JoinVerdict::Restrict(mode.into())
    }

    pub(crate) fn into_wit(self) -> wit_join::JoinVerdict {
        match self {
            JoinVerdict::Allow => wit_join::JoinVerdict::Allow,
            JoinVerdict::Reject(r) => wit_join::JoinVerdict::Reject(r.into_wit()),
            JoinVerdict::Restrict(m) => wit_join::JoinVerdict::Restrict(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_with_or_without_brackets_and_mapped_v4_is_v4() {
        let ip = |a: &str| Login::new("usrX", a).ip();
        assert_eq!(ip("10.1.2.3"), Some("10.1.2.3".parse().unwrap()));
        assert_eq!(ip("2001:db8::1"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(ip("[2001:db8::1]"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(ip("::ffff:10.1.2.3"), Some("10.1.2.3".parse().unwrap()));
        assert_eq!(ip(""), None);
        assert_eq!(ip("10.1.2.3:443"), None, "the host passes no port");
    }

    #[test]
    fn restrictions_only_drop_letters() {
        let j = Join::new("grpX", "JRWPS");
        assert!(j.given_has('w') && !j.given_has('D') && !j.given_has('x'));
        assert_eq!(j.given_without("W"), "JRPS");
        assert_eq!(j.given_without("wsD"), "JRP");
        assert_eq!(Join::new("grpX", "W").given_without("W"), "N");
        assert_eq!(Join::new("p2pX", "JRWPA").topic_kind, TopicKind::P2p);
    }
}
