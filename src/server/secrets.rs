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
    let text = text.trim();
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!("{} does not hold 64 hex digits", path.display());
    }
    let mut key = [0u8; 32];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("checked hex");
    }
    Ok(key)
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
