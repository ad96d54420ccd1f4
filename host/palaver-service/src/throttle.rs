//! Abuse limits kept in process: failed logins (per login and per client address, with exponential backoff), and
//! the request rate of the `/v1/im/` API per user.
//!
//! Both are keyed maps of bounded size (an LRU of [`MAX_TRACKED`] entries), so a flood of distinct logins or
//! addresses costs a fixed amount of memory; the rate itself is `governor`'s GCRA. Failed logins are counted in
//! the shared [`palaver_core::ports::LoginFailureStore`] when the node has one (Redis in scale-out mode), so that guesses spread over
//! the nodes meet one backoff; when it cannot answer, and on a single node, the in-process counters decide. The
//! API rate is per node.

use governor::{Quota, RateLimiter};
use lru::LruCache;
use palaver_core::ports::Backoff;
use palaver_core::{TenantId, UserId};
use parking_lot::Mutex;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// Entries kept per map; the least recently used one is forgotten beyond it (about 100 bytes each).
pub const MAX_TRACKED: usize = 65_536;

/// Failures older than this, with no backoff running, are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);

/// The first backoff; each further failure doubles it, up to the configured maximum.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// What the login throttle counts failures of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum LoginKey {
    /// A login (normalised), whether or not it exists, so that the answer tells nothing about existence.
    Login(TenantId, String),
    /// A client address; IPv6 by its /64, which one subscriber usually holds whole.
    Addr(TenantId, IpAddr),
}

impl LoginKey {
    /// The key's name in the shared store: `login:<login>` or `addr:<ip>` (the tenant travels apart).
    pub(crate) fn name(&self) -> String {
        match self {
            LoginKey::Login(_, login) => format!("login:{login}"),
            LoginKey::Addr(_, ip) => format!("addr:{ip}"),
        }
    }

    /// The key of a client address as the transports give it (`ip:port`, or a bare ip).
    pub(crate) fn addr(tenant: TenantId, remote: &str) -> Option<LoginKey> {
        let ip = remote.parse::<std::net::SocketAddr>().map(|a| a.ip()).or_else(|_| remote.parse::<IpAddr>()).ok()?;
        let ip = match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let s = v6.segments();
                    IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
                }
            },
            v4 => v4,
        };
        Some(LoginKey::Addr(tenant, ip))
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    blocked_until: Option<Instant>,
}

/// How the login throttle is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Failures of one login before its backoff starts; 0 disables the throttle.
    pub per_login: u32,
    /// Failures from one client address before its backoff starts (higher: many users share a NAT).
    pub per_addr: u32,
    /// The longest backoff.
    pub backoff_max: Duration,
}

impl Default for LoginLimits {
    fn default() -> Self {
        LoginLimits { per_login: 5, per_addr: 50, backoff_max: Duration::from_secs(300) }
    }
}

/// Failed-login counters with exponential backoff.
pub(crate) struct LoginThrottle {
    limits: LoginLimits,
    state: Mutex<LruCache<LoginKey, Failures>>,
}

impl LoginThrottle {
    pub(crate) fn new(limits: LoginLimits) -> Self {
        let cap = NonZeroUsize::new(MAX_TRACKED).unwrap_or(NonZeroUsize::MIN);
        LoginThrottle { limits, state: Mutex::new(LruCache::new(cap)) }
    }

    /// Whether failed logins are counted at all.
    pub(crate) fn enabled(&self) -> bool {
        self.limits.per_login > 0
    }

    /// The backoff policy of a key.
    pub(crate) fn policy(&self, key: &LoginKey) -> Backoff {
        let limit = match key {
            LoginKey::Login(..) => self.limits.per_login,
            LoginKey::Addr(..) => self.limits.per_addr,
        };
        Backoff {
            limit: limit.max(1),
            first_ms: millis(FIRST_BACKOFF),
            max_ms: millis(self.limits.backoff_max),
            forget_ms: millis(FORGET_AFTER),
        }
    }

    /// `Err(retry_after_ms)` while any of the keys is backing off.
    pub(crate) fn check(&self, keys: &[LoginKey], now: Instant) -> Result<(), u64> {
        if self.limits.per_login == 0 {
            return Ok(());
        }
        let state = self.state.lock();
        let wait = keys
            .iter()
            .filter_map(|k| state.peek(k).and_then(|f| f.blocked_until))
            .filter(|until| *until > now)
            .map(|until| until - now)
            .max();
        match wait {
            Some(w) => Err(u64::try_from(w.as_millis()).unwrap_or(u64::MAX).max(1)),
            None => Ok(()),
        }
    }

    /// Counts a failure against every key; at its limit a key backs off 1 s, doubling with each further failure.
    pub(crate) fn failed(&self, keys: &[LoginKey], now: Instant) {
        if self.limits.per_login == 0 {
            return;
        }
        let mut state = self.state.lock();
        for key in keys {
            let policy = self.policy(key);
            let mut f = state.get(key).copied().filter(|f| !stale(f, now)).unwrap_or(Failures {
                count: 0,
                last: now,
                blocked_until: None,
            });
            f.count = f.count.saturating_add(1);
            f.last = now;
            let backoff = policy.after(f.count);
            if backoff > 0 {
                f.blocked_until = Some(now + Duration::from_millis(backoff));
            }
            state.put(key.clone(), f);
        }
    }

    /// A successful login clears its login's failures; the address keeps its own, so that an attacker cannot
    /// wipe their address's count by logging into an account of their own between guesses.
    pub(crate) fn succeeded(&self, login: &LoginKey) {
        self.state.lock().pop(login);
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn stale(f: &Failures, now: Instant) -> bool {
    f.blocked_until.is_none_or(|u| u <= now) && now.saturating_duration_since(f.last) > FORGET_AFTER
}

type DirectLimiter = RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    governor::clock::DefaultClock,
    governor::middleware::NoOpMiddleware,
>;

/// The request rate of one user on the business API: a GCRA limiter per user, in a bounded LRU.
pub(crate) struct ApiLimiter {
    quota: Option<Quota>,
    users: Mutex<LruCache<(TenantId, UserId), DirectLimiter>>,
}

impl ApiLimiter {
    /// `per_second` requests on average with bursts of `burst`; 0 per second disables the limit.
    pub(crate) fn new(per_second: u32, burst: u32) -> Self {
        let quota = NonZeroU32::new(per_second)
            .map(|r| Quota::per_second(r).allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN)));
        let cap = NonZeroUsize::new(MAX_TRACKED).unwrap_or(NonZeroUsize::MIN);
        ApiLimiter { quota, users: Mutex::new(LruCache::new(cap)) }
    }

    /// `Err(retry_after_ms)` when the user is over the rate.
    pub(crate) fn check(&self, tenant: TenantId, user: UserId) -> Result<(), u64> {
        let Some(quota) = self.quota else { return Ok(()) };
        let mut users = self.users.lock();
        let limiter = users.get_or_insert((tenant, user), || RateLimiter::direct(quota));
        limiter.check().map_err(|not_until| {
            use governor::clock::Clock;
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TenantId = TenantId(1);

    fn login(l: &str) -> LoginKey {
        LoginKey::Login(T, l.into())
    }

    #[test]
    fn backoff_starts_at_the_limit_and_doubles_up_to_the_maximum() {
        let th = LoginThrottle::new(LoginLimits { per_login: 3, per_addr: 100, backoff_max: Duration::from_secs(5) });
        let t0 = Instant::now();
        let keys = [login("alice")];
        for _ in 0..2 {
            th.failed(&keys, t0);
            assert_eq!(th.check(&keys, t0), Ok(()), "below the limit");
        }
        th.failed(&keys, t0);
        assert_eq!(th.check(&keys, t0), Err(1000));
        assert_eq!(th.check(&keys, t0 + Duration::from_millis(1001)), Ok(()), "the backoff ends");
        th.failed(&keys, t0);
        assert_eq!(th.check(&keys, t0), Err(2000));
        for _ in 0..10 {
            th.failed(&keys, t0);
        }
        assert_eq!(th.check(&keys, t0), Err(5000), "capped at backoff_max");
        assert_eq!(th.check(&[login("bob")], t0), Ok(()), "other logins are not affected");
        th.succeeded(&keys[0]);
        assert_eq!(th.check(&keys, t0), Ok(()), "a success clears the login");
    }

    #[test]
    fn addresses_count_separately_and_a_success_does_not_clear_them() {
        let th = LoginThrottle::new(LoginLimits { per_login: 100, per_addr: 2, backoff_max: Duration::from_secs(60) });
        let t0 = Instant::now();
        let addr = LoginKey::addr(T, "10.0.0.1:5000").unwrap();
        th.failed(&[login("a"), addr.clone()], t0);
        th.failed(&[login("b"), addr.clone()], t0);
        assert!(th.check(&[login("c"), addr.clone()], t0).is_err(), "a third login from the address waits");
        th.succeeded(&login("c"));
        assert!(th.check(&[login("d"), addr], t0).is_err());
        assert_eq!(
            LoginKey::addr(T, "[2001:db8:1:2:3:4:5:6]:443"),
            LoginKey::addr(T, "2001:db8:1:2:ffff::1"),
            "IPv6 by its /64"
        );
        assert_eq!(LoginKey::addr(T, "not an address"), None);
    }

    #[test]
    fn the_state_is_bounded() {
        let th = LoginThrottle::new(LoginLimits::default());
        let t0 = Instant::now();
        for i in 0..(MAX_TRACKED + 10) {
            th.failed(&[login(&i.to_string())], t0);
        }
        assert_eq!(th.state.lock().len(), MAX_TRACKED);
    }

    #[test]
    fn the_api_limiter_refuses_beyond_the_burst_per_user() {
        let api = ApiLimiter::new(1, 3);
        let (a, b) = (UserId(1), UserId(2));
        assert!((0..3).all(|_| api.check(T, a).is_ok()));
        let wait = api.check(T, a).unwrap_err();
        assert!((1..=1000).contains(&wait), "{wait}");
        assert!(api.check(T, b).is_ok(), "another user has their own budget");
        let off = ApiLimiter::new(0, 1);
        assert!((0..1000).all(|_| off.check(T, a).is_ok()));
    }
}
