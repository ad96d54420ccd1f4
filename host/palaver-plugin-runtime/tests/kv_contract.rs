//! Runs the shared plugin key-value contract suite against the in-process [`MemoryKv`], on the wall clock (the
//! suite's TTL cases sleep, as they must for the durable adapters).

use palaver_plugin_runtime::{MemoryKv, SystemClock};
use std::sync::Arc;

palaver_contract::plugin_kv_contract_tests!(async { MemoryKv::new(Arc::new(SystemClock)) });
