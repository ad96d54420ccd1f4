//! The one wasmtime `Engine` of the process, its epoch ticker and its compile step. The engine has fuel and epoch
//! interruption on, the pooling allocator when it can reserve its slots, and wasmtime's disk cache (keyed by the
//! component's content hash and the engine's version and settings) when a cache directory is configured.

use crate::config::RuntimeConfig;
use crate::error::{LoadError, RuntimeError};
use crate::http::HttpClient;
use crate::services::HostServices;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use wasmtime::component::Component;
use wasmtime::{Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig};

/// The engine with what every call needs from outside.
pub(crate) struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) config: RuntimeConfig,
    pub(crate) services: HostServices,
    /// Identifies the engine's code format; part of the compile cache's key.
    pub(crate) engine_id: String,
    pub(crate) pooling: bool,
    /// The `http` import's two clients (public addresses only, and `private_addresses`), each built on first use
    /// with its own connection pool, shared by every plugin.
    pub(crate) http: Arc<HttpClient>,
    _ticker: EpochTicker,
}

impl Runtime {
    pub(crate) fn new(config: RuntimeConfig, services: HostServices) -> Result<Runtime, RuntimeError> {
        let (engine, pooling) = match build_engine(&config, config.pooling.is_some()) {
            Ok(engine) => (engine, config.pooling.is_some()),
            // Pooling reserves address space up front; where that is refused, on-demand allocation still works.
            Err(e) if config.pooling.is_some() => {
                tracing::warn!(error = %e, "pooling allocator unavailable; falling back to on-demand allocation");
                (build_engine(&config, false)?, false)
            }
            Err(e) => return Err(e),
        };
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_id = format!("{:016x}", hasher.finish());
        let ticker = EpochTicker::start(engine.clone(), config.epoch_tick)?;
        let http = Arc::new(HttpClient::default());
        Ok(Runtime { engine, config, services, engine_id, pooling, http, _ticker: ticker })
    }

    /// Checks that `wasm` is a component and compiles it, from the disk cache when it has been compiled before.
    pub(crate) fn compile(&self, wasm: &[u8]) -> Result<Component, LoadError> {
        check_header(wasm)?;
        Component::new(&self.engine, wasm).map_err(|e| LoadError::Compile(format!("{e:#}")))
    }
}

fn build_engine(config: &RuntimeConfig, pooling: bool) -> Result<Engine, RuntimeError> {
    let engine_err = |e: wasmtime::Error| RuntimeError::Engine(format!("{e:#}"));
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.consume_fuel(true);
    c.max_wasm_stack(512 << 10);
    c.async_stack_size(2 << 20);
    c.parallel_compilation(true);
    c.cranelift_opt_level(OptLevel::Speed);
    if let Some(dir) = &config.cache_dir {
        std::fs::create_dir_all(dir).map_err(|e| RuntimeError::Engine(format!("cache dir {}: {e}", dir.display())))?;
        // wasmtime wants an absolute cache path; a relative one would move with the working directory.
        let dir = std::path::absolute(dir).map_err(|e| RuntimeError::Engine(e.to_string()))?;
        let mut cc = CacheConfig::new();
        cc.with_directory(dir);
        c.cache(Some(Cache::new(cc).map_err(engine_err)?));
    }
    if let Some(p) = config.pooling.filter(|_| pooling) {
        let n = p.max_instances.max(1);
        let mut pc = PoolingAllocationConfig::default();
        pc.total_component_instances(n);
        pc.total_core_instances(n.saturating_mul(4));
        pc.max_core_instances_per_component(16);
        pc.total_memories(n);
        pc.max_memories_per_component(2);
        pc.total_tables(n.saturating_mul(4));
        pc.max_tables_per_component(8);
        pc.total_stacks(n);
        pc.max_memory_size(usize::try_from(p.max_memory_bytes).unwrap_or(usize::MAX));
        // Keeping a little of each memory resident makes reuse of a slot cheap; more makes drop slow (memset).
        pc.linear_memory_keep_resident(64 << 10);
        pc.table_keep_resident(16 << 10);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pc));
    }
    Engine::new(&c).map_err(engine_err)
}

/// Tells a component from a core module or anything else, with a message that says what to do about it.
fn check_header(wasm: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    const COMPONENT: &[u8] = &[0x0d, 0x00, 0x01, 0x00];
    const CORE: &[u8] = &[0x01, 0x00, 0x00, 0x00];
    if wasm.len() < 8 || &wasm[..4] != MAGIC {
        return Err(LoadError::NotAComponent("not a WebAssembly binary".to_owned()));
    }
    match &wasm[4..8] {
        v if v == COMPONENT => Ok(()),
        v if v == CORE => Err(LoadError::NotAComponent(
            "a core WebAssembly module; turn it into a component with wit-component (`cargo xtask plugins`)".to_owned(),
        )),
        v => Err(LoadError::NotAComponent(format!("unknown WebAssembly version or layer {v:02x?}"))),
    }
}

/// Advances the engine's epoch every tick on its own thread, so that epoch deadlines measure wall time. Dropping
/// it stops the thread.
struct EpochTicker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: Engine, tick: std::time::Duration) -> Result<EpochTicker, RuntimeError> {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("plugin-epoch".to_owned())
            .spawn(move || {
                // A closed channel is the stop signal; a timeout is a tick.
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(tick) {
                    engine.increment_epoch();
                }
            })
            .map_err(|e| RuntimeError::Ticker(e.to_string()))?;
        Ok(EpochTicker { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::error!("the epoch ticker thread panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_tell_components_from_modules_and_junk() {
        let component = [b"\0asm".as_slice(), &[0x0d, 0, 1, 0]].concat();
        let core = [b"\0asm".as_slice(), &[1, 0, 0, 0]].concat();
        assert!(check_header(&component).is_ok());
        let e = check_header(&core).unwrap_err().to_string();
        assert!(e.contains("core WebAssembly module"), "{e}");
        assert!(check_header(b"hello world").is_err());
        assert!(check_header(b"").is_err());
    }

    #[test]
    fn the_engine_starts_with_and_without_pooling() {
        let rt = Runtime::new(RuntimeConfig::default(), HostServices::in_memory()).unwrap();
        assert_eq!(rt.engine_id.len(), 16);
        let cfg = RuntimeConfig { pooling: None, ..RuntimeConfig::default() };
        let plain = Runtime::new(cfg, HostServices::in_memory()).unwrap();
        assert!(!plain.pooling);
    }
}
