//! The palaver binary: configuration, wiring of adapters, and process lifecycle.
fn main() {}
