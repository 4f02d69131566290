//! TLS for the API: certificates and the rustls configuration ([`certs`]), and the
//! HTTPS-only listener that refuses plain HTTP before the TLS acceptor ([`listener`]),
//! and what one client may hold of it ([`connections`]).

pub mod certs;
pub mod connections;
pub mod listener;

pub use certs::{cert_sha256, install_crypto_provider, self_signed_paths, server_config};
pub use listener::{https_server, HttpsOptions, HTTPS_REQUIRED_MESSAGE};
