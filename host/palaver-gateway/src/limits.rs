//! Per-session limits: a token bucket for the message rate. Frame size limits live in the transports, which
//! know where the bytes come from.

use std::time::Instant;

/// A token bucket: `rate` messages per second on average, bursts of up to `burst`.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    pub(crate) fn new(rate: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter { rate, burst, tokens: burst, last: Instant::now() }
    }

    /// Takes one token; false if the bucket is empty. A rate of 0 disables the limit.
    pub(crate) fn allow(&mut self) -> bool {
        if self.rate <= 0.0 {
            return true;
        }
        let now = Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_refused() {
        let mut r = RateLimiter::new(1.0, 3);
        assert!(r.allow() && r.allow() && r.allow());
        assert!(!r.allow());
        let mut off = RateLimiter::new(0.0, 1);
        assert!((0..1000).all(|_| off.allow()));
    }
}
