//! The `cargo xtask` entry point.

fn main() {}
