//! Certificates and the rustls configuration of the API.
//!
//! - [`install_crypto_provider`]: makes rustls's `ring` provider the process default. The
//!   build uses `ring` only (no `aws-lc-rs`); call this once at start-up so that any rustls
//!   user that asks for the process default (HTTP clients, sqlx) finds the same provider.
//! - [`server_config`]: the rustls [`ServerConfig`] of the API. PEM files given by the
//!   operator (`--tls-cert`/`--tls-key`) are loaded; without them a self-signed pair for
//!   `localhost` and `127.0.0.1` is created once under `<data-dir>/tls/` and reused.
//!   TLS 1.2 and 1.3 only, ALPN `http/1.1` alone, rustls defaults otherwise.
//!
//! The generated private key is never readable by other users (mode `0600`, written to a
//! fresh file so that a pre-existing file's permissions cannot leak into it).

use std::{
    fs,
    io::{self, Write as _},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{bail, Context as _};
use rustls::{
    crypto::ring,
    pki_types::{pem::PemObject as _, CertificateDer, PrivateKeyDer},
    ServerConfig,
};

/// Installs rustls's `ring` provider as the process-wide default.
///
/// Idempotent: a second call, or a provider installed earlier by someone else, is fine
/// (rustls then keeps the first one; this build only links `ring`, so both are the same).
/// [`server_config`] does not depend on this (it names its provider explicitly); it exists
/// for rustls users that only consult the process default, such as HTTP clients.
pub fn install_crypto_provider() {
    // `Err` only means "already installed", which is the state we want.
    let _ = ring::default_provider().install_default();
}

/// The client side of the API's TLS: a client may present a certificate, and need not.
/// Any certificate is taken as far as TLS goes (the handshake proves its key): it grants
/// nothing by itself. The listener then compares it with the certificates the cluster's
/// nodes published (`HttpsOptions::node_certificates`), and only a node's connection
/// is counted apart; a request is still authenticated by its API key, or by the node's
/// secret between nodes.
#[derive(Debug)]
struct AnyClientCertificate {
    schemes: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.schemes)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.schemes)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.schemes.supported_schemes()
    }
}

/// The certificate and key the node presents to the other nodes as a TLS client (its
/// API's own pair).
pub fn node_identity(
    data_dir: &Path,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> anyhow::Result<crate::cluster::forward::ClientIdentity> {
    let (cert, key) = match (cert, key) {
        (Some(cert), Some(key)) => (cert.to_path_buf(), key.to_path_buf()),
        _ => self_signed_paths(data_dir),
    };
    Ok(crate::cluster::forward::ClientIdentity {
        chain: load_cert_chain(&cert)?,
        key: load_private_key(&key)?,
    })
}

/// Where the self-signed pair lives: `(<data-dir>/tls/cert.pem, <data-dir>/tls/key.pem)`.
pub fn self_signed_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// Builds the API's rustls configuration.
///
/// With `cert` and `key` (the `--tls-cert`/`--tls-key` PEM files) those are loaded: `cert`
/// holds the certificate chain, leaf first; `key` one PKCS#8, PKCS#1 or SEC1 private key.
/// With neither, the self-signed pair at [`self_signed_paths`] is loaded, after being
/// generated if it does not exist yet. Exactly one of the two is an error.
///
/// Errors name the file at fault. The result enables TLS 1.2 and 1.3 only, advertises ALPN
/// `http/1.1` alone (see the listener's module docs on HTTP/2), and otherwise keeps
/// rustls's defaults.
pub fn server_config(
    data_dir: &Path,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> anyhow::Result<ServerConfig> {
    let (cert_path, key_path) = match (cert, key) {
        (Some(cert), Some(key)) => (cert.to_path_buf(), key.to_path_buf()),
        (None, None) => ensure_self_signed(data_dir)?,
        (Some(cert), None) => bail!(
            "TLS certificate {} was given without a key: pass both --tls-cert and --tls-key, \
             or neither to use the generated self-signed pair",
            cert.display()
        ),
        (None, Some(key)) => bail!(
            "TLS key {} was given without a certificate: pass both --tls-cert and --tls-key, \
             or neither to use the generated self-signed pair",
            key.display()
        ),
    };

    let chain = load_cert_chain(&cert_path)?;
    let private_key = load_private_key(&key_path)?;

    // The provider is named rather than taken from the process default so that the result
    // does not depend on whether (or by whom) a default was installed first.
    let provider = Arc::new(ring::default_provider());
    let client_certificates = Arc::new(AnyClientCertificate {
        schemes: provider.signature_verification_algorithms,
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("rustls's ring provider does not support TLS 1.2 and 1.3")?
        .with_client_cert_verifier(client_certificates)
        .with_single_cert(chain, private_key)
        .with_context(|| {
            format!(
                "TLS certificate {} and key {} cannot be used together",
                cert_path.display(),
                key_path.display()
            )
        })?;
    config.alpn_protocols = vec![super::listener::ALPN_HTTP_1_1.to_vec()];
    Ok(config)
}

/// Returns the self-signed pair's paths, generating the pair first if there is none.
///
/// The certificate is renamed into place last, so its presence means a complete pair was
/// written: a key without a certificate can only be the leftover of an interrupted run and
/// is replaced, while a certificate without its key is an error (the operator may already
/// trust that certificate, so we do not silently swap it).
fn ensure_self_signed(data_dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (cert_path, key_path) = self_signed_paths(data_dir);
    let cert_exists = exists(&cert_path)?;
    let key_exists = exists(&key_path)?;
    match (cert_exists, key_exists) {
        (true, true) => {
            warn_if_key_readable_by_others(&key_path);
            Ok((cert_path, key_path))
        }
        (true, false) => bail!(
            "self-signed TLS certificate {} exists but its key {} is missing; \
             remove the certificate to have a new pair generated",
            cert_path.display(),
            key_path.display()
        ),
        (false, _) => {
            generate_self_signed(&cert_path, &key_path)?;
            tracing::info!(
                cert = %cert_path.display(),
                key = %key_path.display(),
                "generated a self-signed TLS certificate for localhost and 127.0.0.1"
            );
            Ok((cert_path, key_path))
        }
    }
}

fn exists(path: &Path) -> anyhow::Result<bool> {
    path.try_exists()
        .with_context(|| format!("cannot check whether {} exists", path.display()))
}

/// Generates an ECDSA P-256 key and a certificate for `localhost` and `127.0.0.1`, and
/// writes them (key first, certificate last; see [`ensure_self_signed`]).
fn generate_self_signed(cert_path: &Path, key_path: &Path) -> anyhow::Result<()> {
    use rcgen::{
        CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair,
        KeyUsagePurpose,
    };

    let key_pair = KeyPair::generate().context("cannot generate a TLS key pair")?;
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .context("invalid subject alternative names for the self-signed certificate")?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "recruitd self-signed (localhost)");
    params.distinguished_name = name;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    // rcgen's default validity (1975 to 4096) is accepted by most clients but looks like a
    // mistake in any certificate viewer; start a day early to absorb clock skew and last
    // ten years, which outlives any development setup this pair is meant for.
    let ymd = |date: chrono::NaiveDate| {
        use chrono::Datelike as _;
        // `month()` is 1..=12 and `day()` 1..=31: the narrowing casts cannot truncate.
        rcgen::date_time_ymd(date.year(), date.month() as u8, date.day() as u8)
    };
    let today = chrono::Utc::now().date_naive();
    params.not_before = ymd(today - chrono::Days::new(1));
    params.not_after = ymd(today + chrono::Days::new(3650));
    let cert = params
        .self_signed(&key_pair)
        .context("cannot sign the self-signed TLS certificate")?;

    let dir = cert_path
        .parent()
        .context("the TLS certificate path has no parent directory")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_then_rename(key_path, key_pair.serialize_pem().as_bytes(), 0o600)?;
    write_then_rename(cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok(())
}

/// Writes `contents` to a fresh sibling temporary file created with `mode` (on Unix), syncs
/// it and renames it over `path`, so that a crash never leaves a truncated PEM behind and a
/// pre-existing file's looser permissions never apply to the new contents.
fn write_then_rename(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let file_name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);

    // A leftover from an interrupted run must go: `create_new` below refuses to reuse it,
    // because reusing would keep whatever permissions it has.
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("cannot remove {}", tmp.display())),
    }

    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;

    let mut file = options
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(file);
    fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

#[cfg(unix)]
fn warn_if_key_readable_by_others(key_path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = fs::metadata(key_path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                key = %key_path.display(),
                mode = format_args!("{:o}", meta.permissions().mode() & 0o777),
                "the TLS private key is accessible to other users; chmod 600 it"
            );
        }
    }
}

#[cfg(not(unix))]
fn warn_if_key_readable_by_others(_key_path: &Path) {}

/// SHA-256 (hex) of the first certificate in the PEM file at `path`: the certificate
/// the server presents, which other nodes of a cluster pin.
pub fn cert_sha256(path: &Path) -> anyhow::Result<String> {
    let chain = load_cert_chain(path)?;
    Ok(crate::cluster::forward::sha256_hex(chain[0].as_ref()))
}

fn load_cert_chain(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = fs::read(path)
        .with_context(|| format!("cannot read TLS certificate file {}", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("invalid PEM in TLS certificate file {}", path.display()))?;
    if chain.is_empty() {
        bail!(
            "TLS certificate file {} contains no CERTIFICATE block",
            path.display()
        );
    }
    Ok(chain)
}

fn load_private_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem =
        fs::read(path).with_context(|| format!("cannot read TLS key file {}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&pem).with_context(|| {
        format!(
            "TLS key file {} holds no usable private key (PKCS#8, PKCS#1 or SEC1 PEM)",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn self_signed_pair_is_generated_once_and_reused() {
        let data_dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = self_signed_paths(data_dir.path());
        assert_eq!(cert_path, data_dir.path().join("tls").join("cert.pem"));
        assert_eq!(key_path, data_dir.path().join("tls").join("key.pem"));

        server_config(data_dir.path(), None, None).unwrap();
        let cert = fs::read(&cert_path).unwrap();
        let key = fs::read(&key_path).unwrap();
        assert!(cert.starts_with(b"-----BEGIN CERTIFICATE-----"));
        assert!(key.starts_with(b"-----BEGIN PRIVATE KEY-----"));
        #[cfg(unix)]
        assert_eq!(mode(&key_path), 0o600);

        server_config(data_dir.path(), None, None).unwrap();
        assert_eq!(
            fs::read(&cert_path).unwrap(),
            cert,
            "certificate was regenerated"
        );
        assert_eq!(fs::read(&key_path).unwrap(), key, "key was regenerated");
        // No temporary files are left beside the pair.
        let mut names: Vec<_> = fs::read_dir(cert_path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["cert.pem", "key.pem"]);
    }

    #[test]
    fn leftover_key_without_certificate_is_replaced_but_lone_certificate_is_an_error() {
        let data_dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = self_signed_paths(data_dir.path());
        fs::create_dir_all(key_path.parent().unwrap()).unwrap();
        fs::write(&key_path, "stale").unwrap();
        server_config(data_dir.path(), None, None).unwrap();
        assert_ne!(fs::read(&key_path).unwrap(), b"stale");
        #[cfg(unix)]
        assert_eq!(mode(&key_path), 0o600);

        fs::remove_file(&key_path).unwrap();
        let err = server_config(data_dir.path(), None, None).unwrap_err();
        assert!(
            format!("{err:#}").contains(&key_path.display().to_string()),
            "{err:#}"
        );
        assert!(cert_path.exists());
    }

    #[test]
    fn given_files_are_loaded_and_must_come_in_pairs() {
        // A pair generated elsewhere stands in for operator-provided files.
        let elsewhere = tempfile::tempdir().unwrap();
        server_config(elsewhere.path(), None, None).unwrap();
        let (cert, key) = self_signed_paths(elsewhere.path());

        let data_dir = tempfile::tempdir().unwrap();
        let config = server_config(data_dir.path(), Some(&cert), Some(&key)).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        assert!(
            !data_dir.path().join("tls").exists(),
            "nothing is generated when files are given"
        );

        let only_cert = server_config(data_dir.path(), Some(&cert), None).unwrap_err();
        assert!(
            format!("{only_cert:#}").contains("without a key"),
            "{only_cert:#}"
        );
        let only_key = server_config(data_dir.path(), None, Some(&key)).unwrap_err();
        assert!(
            format!("{only_key:#}").contains("without a certificate"),
            "{only_key:#}"
        );
    }

    #[test]
    fn errors_name_the_file_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        server_config(dir.path(), None, None).unwrap();
        let (cert, key) = self_signed_paths(dir.path());
        let missing = dir.path().join("missing.pem");
        let garbage = dir.path().join("garbage.pem");
        fs::write(&garbage, "not a pem file").unwrap();

        for (c, k, named) in [
            (&missing, &key, &missing),
            (&cert, &missing, &missing),
            (&garbage, &key, &garbage),
            (&cert, &garbage, &garbage),
            // Swapped: the key file holds no certificate, the certificate file no key.
            (&key, &cert, &key),
        ] {
            let err = server_config(dir.path(), Some(c), Some(k)).unwrap_err();
            let text = format!("{err:#}");
            assert!(text.contains(&named.display().to_string()), "{text}");
        }

        // A valid certificate with some other valid key: both files are named.
        let other = tempfile::tempdir().unwrap();
        server_config(other.path(), None, None).unwrap();
        let other_key = self_signed_paths(other.path()).1;
        let err = server_config(dir.path(), Some(&cert), Some(&other_key)).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains(&cert.display().to_string()), "{text}");
        assert!(text.contains(&other_key.display().to_string()), "{text}");
    }
}
