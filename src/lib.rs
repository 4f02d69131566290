//! # recruitd — the server
//!
//! Adapts the domain crate `actors` to the outside world: HTTP (routes, extractors,
//! auth, errors), TLS, the sqlx store adapters, the admin interface and the CLI.

pub mod admin;
pub mod admin_client;
pub mod app;
pub mod blobs;
pub mod cli;
pub mod clock;
pub mod demo;
pub mod generate;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod offline;
pub mod openapi;
pub mod ratelimit;
pub mod secrets;
pub mod signed_urls;
pub mod store;
pub mod tls;
