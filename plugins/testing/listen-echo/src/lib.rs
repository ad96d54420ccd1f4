//! A test listener driven by what it is delivered. `after-publish`: content text containing `fail` answers `err`
//! (naming the attempt), `boom` traps, `spin` never returns; anything else is recorded under `msg:<topic>:<seq>`
//! as `<label> attempt <n> <text>`. `on-account`: a `fail` tag answers `err`, anything else is recorded under
//! `acc:<user>` as `<label> <change> attempt <n>`. `label` is a setting, so that two versions (a canary) differ.

use palaver_plugin_sdk::{AccountEvent, Context, Host, Listener, Published};

/// Does what it is told.
#[derive(Default)]
pub struct ListenEcho;

fn label<H: Host>(cx: &mut Context<'_, H>) -> String {
    let s: palaver_plugin_sdk::Value = cx.settings().unwrap_or_default();
    s.get("label").and_then(|l| l.as_str()).unwrap_or("?").to_owned()
}

impl Listener for ListenEcho {
    fn after_publish<H: Host>(&mut self, cx: &mut Context<'_, H>, msg: &Published) -> Result<(), String> {
        let text = msg.text().unwrap_or_default();
        if text.contains("fail") {
            return Err(format!("asked to fail (attempt {})", msg.attempt));
        }
        match text {
            "boom" => panic!("boom requested"),
            "spin" => {
                let mut n = msg.seq;
                // `black_box` keeps the optimiser from proving the loop useless.
                loop {
                    n = std::hint::black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                }
            }
            _ => {}
        }
        let record = format!("{} attempt {} {text}", label(cx), msg.attempt);
        let key = format!("msg:{}:{}", msg.topic, msg.seq);
        cx.kv().set(&key, record.as_bytes(), None).map_err(|e| e.to_string())
    }

    fn on_account<H: Host>(&mut self, cx: &mut Context<'_, H>, event: &AccountEvent) -> Result<(), String> {
        if event.tags.iter().any(|t| t == "fail") {
            return Err(format!("asked to fail (attempt {})", event.attempt));
        }
        let record = format!("{} {} attempt {}", label(cx), event.change.as_str(), event.attempt);
        cx.kv().set(&format!("acc:{}", event.user), record.as_bytes(), None).map_err(|e| e.to_string())
    }
}

palaver_plugin_sdk::listener!(ListenEcho);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::AccountChange;
    use palaver_plugin_sdk::testing::{Harness, run_listener_fixtures};

    const MANIFEST: &str = include_str!("../plugin.toml");

    #[test]
    fn the_manifest_fixtures_pass() {
        assert_eq!(run_listener_fixtures::<ListenEcho>(MANIFEST), Ok(3));
    }

    #[test]
    fn deliveries_are_recorded_with_the_label_and_attempt() {
        let mut h = Harness::<ListenEcho>::with_manifest(MANIFEST).unwrap();
        let mut msg = Published::new("hi");
        msg.attempt = 2;
        assert_eq!(h.after_publish(&msg), Ok(()));
        assert_eq!(h.host.kv_value("msg:grpTest:1"), Some(b"v1 attempt 2 hi".as_slice()));
        h.settings(palaver_plugin_sdk::json!({ "label": "v2" }));
        assert_eq!(h.on_account(&AccountEvent::new("usrX", AccountChange::Deleted)), Ok(()));
        assert_eq!(h.host.kv_value("acc:usrX"), Some(b"v2 deleted attempt 1".as_slice()));
    }
}
