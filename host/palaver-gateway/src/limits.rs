//! Per-session limits on client frames: their size and a token bucket for their rate, checked by
//! [`check_frame`] for the WebSocket and the long-poll transport alike.

use palaver_service::ServiceError;
use std::time::Instant;

/// Whether a client frame of `len` bytes may be handled: `TooLarge` past `max` (which takes no token), else
/// `TooManyRequests` when `limiter` is empty. The transport answers a refusal with `Session::refuse_frame`.
pub(crate) fn check_frame(len: usize, max: usize, limiter: &mut RateLimiter) -> Result<(), ServiceError> {
    if len > max {
        return Err(ServiceError::TooLarge(format!("the limit is {max} bytes")));
    }
    if !limiter.allow() {
        return Err(ServiceError::TooManyRequests);
    }
    Ok(())
}

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

    #[test]
    fn frames_are_checked_for_size_then_rate() {
        let mut r = RateLimiter::new(1.0, 1);
        let big = check_frame(11, 10, &mut r);
        assert_eq!(big, Err(ServiceError::TooLarge("the limit is 10 bytes".into())));
        assert_eq!(check_frame(10, 10, &mut r), Ok(()), "an oversized frame took no token");
        assert_eq!(check_frame(1, 10, &mut r), Err(ServiceError::TooManyRequests));
    }
}
