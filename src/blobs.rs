//! The file blob store: attachment bytes under `<data-dir>/blobs/`.
//!
//! One file per attachment at `blobs/<workspace>/<sha256 of the attachment id>`: ids may
//! hold any character, file names must not. Writes go to a temporary file, are synced,
//! then renamed into place, so a reader never sees half a file.

use actors::store::{BlobStore, StoreError};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use uuid::Uuid;

pub struct FileBlobs {
    root: PathBuf,
}

impl FileBlobs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileBlobs { root: root.into() }
    }

    pub fn path_of(&self, workspace: Uuid, attachment_id: &str) -> PathBuf {
        let digest = Sha256::digest(attachment_id.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.root.join(workspace.to_string()).join(name)
    }

    /// The bytes of an attachment, if they are here.
    pub fn get(&self, workspace: Uuid, attachment_id: &str) -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.path_of(workspace, attachment_id)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("blob paths have a parent");
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    // The rename itself is durable only once the directory is synced.
    std::fs::File::open(dir)?.sync_all()
}

impl BlobStore for FileBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        write_atomically(&self.path_of(workspace, attachment_id), bytes)
            .map_err(|e| StoreError::Other(format!("writing blob of {attachment_id}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_get() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let ws = Uuid::from_u128(1);
        assert_eq!(blobs.get(ws, "cv:a b/c").unwrap(), None);
        blobs.put(ws, "cv:a b/c", b"hello").unwrap();
        assert_eq!(
            blobs.get(ws, "cv:a b/c").unwrap().as_deref(),
            Some(&b"hello"[..])
        );
        blobs.put(ws, "cv:a b/c", b"again").unwrap();
        assert_eq!(
            blobs.get(ws, "cv:a b/c").unwrap().as_deref(),
            Some(&b"again"[..])
        );
    }
}
