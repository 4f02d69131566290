//! # recruitd — the server
//!
//! Adapts the domain crate `actors` to the outside world: HTTP (routes, extractors,
//! auth, errors), TLS, the sqlx store adapters, the admin interface and the CLI.

pub mod generate;
pub mod store;
pub mod tls;
