//! Rebuild when a migration is added: `sqlx::migrate!` embeds the files of
//! `migrations/` at compile time but only notices edits to files it already knows.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
