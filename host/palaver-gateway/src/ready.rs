//! `/readyz`: 200 while the node serves, 503 while it drains or a required dependency (the database) fails,
//! with a JSON body naming each dependency's state, so an operator sees what is down from the probe itself.
//!
//! The checks run concurrently, each within `CHECK_TIMEOUT`, and their report is reused for `REUSE_FOR`: a load
//! balancer probing every node every second (or anyone on the internet hitting the path) costs the database at
//! most one `SELECT 1` per node and second.

use crate::Shared;
use crate::http::{Body, json};
use bytes::Bytes;
use http::{Response, StatusCode};
use palaver_core::ports::HealthCheck;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// How long one dependency may take to answer before it counts as down.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a report is served before the checks run again.
const REUSE_FOR: Duration = Duration::from_secs(1);

/// The checks and the last report.
#[derive(Default)]
pub(crate) struct Readiness {
    checks: Vec<Arc<dyn HealthCheck>>,
    last: tokio::sync::Mutex<Option<(Instant, Report)>>,
}

/// What the checks found.
#[derive(Clone)]
struct Report {
    /// False if a required dependency failed.
    serving: bool,
    checks: Map<String, Value>,
}

impl Readiness {
    pub(crate) fn new(checks: Vec<Arc<dyn HealthCheck>>) -> Readiness {
        Readiness { checks, last: tokio::sync::Mutex::new(None) }
    }

    /// The current report, running the checks if the last one is older than `REUSE_FOR`. Concurrent probes
    /// wait for one run rather than each starting its own.
    async fn report(&self) -> Report {
        let mut last = self.last.lock().await;
        if let Some((at, report)) = last.as_ref()
            && at.elapsed() < REUSE_FOR
        {
            return report.clone();
        }
        let runs = self.checks.iter().map(|c| async move {
            let outcome = match tokio::time::timeout(CHECK_TIMEOUT, c.check()).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {} ms", CHECK_TIMEOUT.as_millis())),
            };
            (c.clone(), outcome)
        });
        let mut report = Report { serving: true, checks: Map::new() };
        for (check, outcome) in futures_util::future::join_all(runs).await {
            let state = match &outcome {
                Ok(()) => json!({ "ok": true, "required": check.required() }),
                Err(e) => json!({ "ok": false, "required": check.required(), "error": e }),
            };
            if outcome.is_err() && check.required() {
                report.serving = false;
            }
            report.checks.insert(check.name().to_owned(), state);
        }
        *last = Some((Instant::now(), report.clone()));
        report
    }
}

/// Sets `palaver_dependency_up` from the current report (the checks run if it is older than `REUSE_FOR`).
pub(crate) async fn export(shared: &Shared) {
    let report = shared.readiness.report().await;
    for check in &shared.readiness.checks {
        let up = report.checks.get(check.name()).is_some_and(|c| c["ok"] == true);
        shared.service.metrics().dependency_up(check.name(), up);
    }
}

/// Answers `/readyz`.
pub(crate) async fn handle(shared: &Shared) -> Response<Body> {
    let draining = !shared.ready.load(Ordering::Relaxed) || shared.service.is_draining();
    let report = shared.readiness.report().await;
    let (status, state) = match (draining, report.serving) {
        (true, _) => (StatusCode::SERVICE_UNAVAILABLE, "draining"),
        (false, false) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        (false, true) => {
            let degraded = report.checks.values().any(|c| c["ok"] == false);
            (StatusCode::OK, if degraded { "degraded" } else { "ready" })
        }
    };
    let body = json!({ "status": state, "checks": report.checks });
    json(status, Bytes::from(body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Fake {
        name: &'static str,
        required: bool,
        fails: bool,
        hangs: bool,
        runs: AtomicUsize,
    }

    fn fake(name: &'static str, required: bool, fails: bool, hangs: bool) -> Arc<Fake> {
        Arc::new(Fake { name, required, fails, hangs, runs: AtomicUsize::new(0) })
    }

    #[async_trait::async_trait]
    impl HealthCheck for Fake {
        fn name(&self) -> &'static str {
            self.name
        }
        fn required(&self) -> bool {
            self.required
        }
        async fn check(&self) -> Result<(), String> {
            self.runs.fetch_add(1, Ordering::Relaxed);
            if self.hangs {
                std::future::pending::<()>().await;
            }
            if self.fails { Err(format!("{} is down", self.name)) } else { Ok(()) }
        }
    }

    #[tokio::test]
    async fn a_failing_required_check_stops_serving_and_a_degradable_one_does_not() {
        let db = fake("database", true, false, false);
        let redis = fake("redis", false, true, false);
        let report = Readiness::new(vec![db.clone(), redis.clone()]).report().await;
        assert!(report.serving, "Redis down degrades, it does not unready the node");
        assert_eq!(report.checks["database"]["ok"], true);
        assert_eq!(report.checks["redis"], json!({ "ok": false, "required": false, "error": "redis is down" }));

        let report = Readiness::new(vec![fake("database", true, true, false), redis]).report().await;
        assert!(!report.serving);
        assert_eq!(report.checks["database"]["error"], "database is down");
    }

    #[tokio::test(start_paused = true)]
    async fn a_check_that_never_answers_counts_as_down_and_reports_are_reused() {
        let stuck = fake("queue", false, false, true);
        let db = fake("database", true, false, false);
        let ready = Readiness::new(vec![stuck.clone(), db.clone()]);
        let report = ready.report().await;
        assert_eq!(report.checks["queue"]["error"], "no answer within 1000 ms");
        assert!(report.serving);
        ready.report().await;
        assert_eq!(db.runs.load(Ordering::Relaxed), 1, "a second probe within the second reuses the report");
        tokio::time::advance(REUSE_FOR).await;
        ready.report().await;
        assert_eq!(db.runs.load(Ordering::Relaxed), 2, "an older report is refreshed");
    }
}
