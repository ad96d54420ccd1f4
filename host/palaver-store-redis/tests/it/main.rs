//! Integration tests of the Redis adapters against a real Redis (see `common` for where it is and how to
//! skip), plus the storage contract suite run through the decorators.

mod cache;
mod common;
mod contract;
mod degrade;
mod flush;
mod hot;
mod keys;
mod presence;
mod seq;
mod short_state;
