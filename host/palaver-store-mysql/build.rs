//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the files it found at compile time but
//! only watches those, so without this a new file in `migrations/mysql` would be silently left out.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/mysql");
}
