//! Project tasks shared by the `xtask` binary and by tests that need the plugins built.
