//! Server secrets kept in the data dir: the admin token and the signing key.
//!
//! Both are generated once (mode 0600) and reused; neither is ever logged.

use anyhow::Context;
use rand::RngCore;
use std::io::Write;
use std::path::Path;

fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(contents)?;
    f.sync_all()?;
    Ok(())
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The admin token: the one given, else `<data-dir>/admin-token`, generated when absent.
pub fn admin_token(data_dir: &Path, given: Option<&str>) -> anyhow::Result<String> {
    if let Some(t) = given.filter(|t| !t.is_empty()) {
        return Ok(t.to_string());
    }
    let path = data_dir.join("admin-token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        Ok(_) | Err(_) if !path.exists() => {
            let t = random_hex(32);
            write_private(&path, t.as_bytes())?;
            Ok(t)
        }
        Ok(_) => anyhow::bail!("{} is empty", path.display()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The server's signing secret (the seed of the key that seals cursors, feed tokens
/// and download URLs: `actors::signing`): `<data-dir>/signing-key`.
pub fn signing_key(data_dir: &Path) -> anyhow::Result<[u8; 32]> {
    let path = data_dir.join("signing-key");
    if !path.exists() {
        write_private(&path, random_hex(32).as_bytes())?;
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    hex_bytes(text.trim())
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .with_context(|| format!("{} does not hold 64 hex digits", path.display()))
}

/// The keys webhook endpoints' secrets are sealed under (`crate::webhooks::sealing`):
/// `<data-dir>/webhooks-key`, one hex key a line, the node's own first (generated when
/// the file is absent), then any learned from other nodes. The store holds the secrets
/// sealed, never these keys.
pub fn webhooks_keys(
    data_dir: &Path,
) -> anyhow::Result<(Vec<crate::webhooks::sealing::DataKey>, std::path::PathBuf)> {
    let path = data_dir.join("webhooks-key");
    if !path.exists() {
        let line = random_hex(crate::webhooks::sealing::KEY_LEN) + "\n";
        write_private(&path, line.as_bytes())?;
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let keys = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            hex_bytes(line)
                .and_then(|b| crate::webhooks::sealing::DataKey::from_bytes(&b))
                .with_context(|| {
                    format!("{} holds a line that is not 64 hex digits", path.display())
                })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!keys.is_empty(), "{} is empty", path.display());
    Ok((keys, path))
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let a = admin_token(dir.path(), None).unwrap();
        assert_eq!(admin_token(dir.path(), None).unwrap(), a);
        assert_eq!(admin_token(dir.path(), Some("given")).unwrap(), "given");
        let k = signing_key(dir.path()).unwrap();
        assert_eq!(signing_key(dir.path()).unwrap(), k);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("admin-token"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
