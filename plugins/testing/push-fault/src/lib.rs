//! A test push filter driven by the push's preview text: `boom` traps, `spin` never returns, `drop` drops,
//! `delay` delays 50 ms, `relocate` tries to rewrite a locating field (which the host must refuse), anything else
//! is rewritten to the body `filtered: <preview>` with a data field `filtered = yes`.

use palaver_plugin_sdk::{Context, Host, Push, PushDecision, PushFilter};
use std::collections::BTreeMap;

/// Does what it is told.
#[derive(Default)]
pub struct PushFault;

impl PushFilter for PushFault {
    fn before_push<H: Host>(&mut self, _cx: &mut Context<'_, H>, push: &Push) -> PushDecision {
        let preview = push.preview.clone().unwrap_or_default();
        match preview.as_str() {
            "boom" => panic!("boom requested"),
            "spin" => {
                let mut n = push.seq as u64;
                // `black_box` keeps the optimiser from proving the loop useless.
                loop {
                    n = std::hint::black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                }
            }
            "drop" => PushDecision::drop("asked to"),
            "delay" => PushDecision::Delay(50),
            "relocate" => PushDecision::Rewrite {
                body: None,
                set: BTreeMap::from([("topic".to_owned(), "grpElsewhere".to_owned())]),
                remove: Vec::new(),
            },
            _ => PushDecision::Rewrite {
                body: Some(format!("filtered: {preview}")),
                set: BTreeMap::from([("filtered".to_owned(), "yes".to_owned())]),
                remove: Vec::new(),
            },
        }
    }
}

palaver_plugin_sdk::push_filter!(PushFault);
