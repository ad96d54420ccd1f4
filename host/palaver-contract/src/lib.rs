//! The storage contract suite that every storage adapter must pass.
