//! TLS for the API: certificates and the rustls configuration ([`certs`]), and the
//! HTTPS-only listener that refuses plain HTTP before the TLS acceptor ([`listener`]).

pub mod certs;
pub mod listener;

pub use certs::{install_crypto_provider, self_signed_paths, server_config};
pub use listener::{https_server, HttpsOptions, HTTPS_REQUIRED_MESSAGE};
