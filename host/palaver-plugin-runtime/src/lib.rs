//! Palaver's plugin runtime: sandboxed WebAssembly components behind the host's hook ports.

#[allow(unreachable_pub)]
mod bindings;
