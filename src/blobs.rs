//! The file blob store: attachment bytes under `<data-dir>/blobs/`.
//!
//! One file per attachment at `blobs/<object key>`, i.e.
//! `blobs/<workspace>/<sha256 of the attachment id>` ([`actors::store::object_key`]): ids
//! may hold any character, file names must not, and the same names serve a bucket. Writes
//! go to a temporary file, are synced, then renamed into place, so a reader never sees
//! half a file; a reader that has opened a file keeps its version across a replacement.

use actors::store::{object_key, Blob, BlobMeta, BlobStore, StoreError};
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
        self.root.join(object_key(workspace, attachment_id))
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

/// Threads writing the files of a batch. Each file is synced on its own (`fsync`), and
/// concurrent syncs share the file system's journal commits, so many threads make a batch
/// durable far faster than one — without flushing unrelated data as `syncfs` would.
const STAGING_THREADS: usize = 32;

/// Below this many files a batch is written file by file (fsync each).
const BATCH_SYNC_THRESHOLD: usize = 16;

impl BlobStore for FileBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        write_atomically(&self.path_of(workspace, attachment_id), bytes)
            .map_err(|e| StoreError::Other(format!("writing blob of {attachment_id}: {e}")))
    }

    fn stat(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<BlobMeta>, StoreError> {
        match std::fs::metadata(self.path_of(workspace, attachment_id)) {
            Ok(m) if m.is_file() => Ok(Some(BlobMeta { len: m.len() })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::Other(format!(
                "reading blob of {attachment_id}: {e}"
            ))),
        }
    }

    fn open(&self, workspace: Uuid, attachment_id: &str) -> Result<Option<Blob>, StoreError> {
        let fail =
            |e: std::io::Error| StoreError::Other(format!("reading blob of {attachment_id}: {e}"));
        let file = match std::fs::File::open(self.path_of(workspace, attachment_id)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        // The length of the file opened, not of whatever the name points to later: a
        // replacement is a rename, and this handle keeps the old file whole.
        let meta = file.metadata().map_err(fail)?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some(Blob {
            len: meta.len(),
            reader: Box::new(file),
        }))
    }

    fn put_many(&self, workspace: Uuid, items: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        if items.len() < BATCH_SYNC_THRESHOLD {
            for (id, bytes) in items {
                self.put(workspace, id, bytes)?;
            }
            return Ok(());
        }
        fn fail(what: &str, e: std::io::Error) -> StoreError {
            StoreError::Other(format!("writing blobs: {what}: {e}"))
        }
        let dir = self.root.join(workspace.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| fail("creating the directory", e))?;
        // Write every file beside its final name and make it durable, then rename them
        // into place and make the renames durable: a reader never sees half a file, and
        // after a crash a name has either its whole new bytes or its old ones.
        let staged: Vec<(PathBuf, PathBuf)> = items
            .iter()
            .map(|(id, _)| {
                let path = self.path_of(workspace, id);
                (
                    path.with_extension(format!("tmp{}", std::process::id())),
                    path,
                )
            })
            .collect();
        // Creating many small files is latency-bound: a few threads overlap it.
        let chunk = items.len().div_ceil(STAGING_THREADS);
        std::thread::scope(|scope| {
            let workers: Vec<_> = items
                .chunks(chunk)
                .zip(staged.chunks(chunk))
                .map(|(items, staged)| {
                    scope.spawn(move || -> Result<(), StoreError> {
                        for ((id, bytes), (tmp, _)) in items.iter().zip(staged) {
                            let mut f = std::fs::File::create(tmp).map_err(|e| fail(id, e))?;
                            f.write_all(bytes).map_err(|e| fail(id, e))?;
                            f.sync_all().map_err(|e| fail(id, e))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("blob writer panicked"))
        })?;
        for (tmp, path) in &staged {
            std::fs::rename(tmp, path).map_err(|e| fail("renaming", e))?;
        }
        // The renames are durable once the directory is.
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| fail("syncing the directory", e))
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

    #[test]
    fn stat_and_open_see_one_version() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let ws = Uuid::from_u128(3);
        assert_eq!(blobs.stat(ws, "file:x").unwrap(), None);
        assert!(blobs.open(ws, "file:x").unwrap().is_none());
        blobs.put(ws, "file:x", b"first").unwrap();
        assert_eq!(blobs.stat(ws, "file:x").unwrap(), Some(BlobMeta { len: 5 }));
        let mut blob = blobs.open(ws, "file:x").unwrap().unwrap();
        blobs.put(ws, "file:x", b"second, longer").unwrap();
        let mut read = Vec::new();
        blob.reader.read_to_end(&mut read).unwrap();
        assert_eq!((blob.len, &read[..]), (5, &b"first"[..]));
        assert_eq!(
            blobs.stat(ws, "file:x").unwrap(),
            Some(BlobMeta { len: 14 })
        );
        std::fs::remove_file(blobs.path_of(ws, "file:x")).unwrap();
        assert_eq!(blobs.stat(ws, "file:x").unwrap(), None);
    }

    #[test]
    fn batches_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let ws = Uuid::from_u128(2);
        let items: Vec<(String, Vec<u8>)> = (0..40)
            .map(|i| (format!("file:{i}"), vec![i as u8; i]))
            .collect();
        blobs.put_many(ws, &items).unwrap();
        for (id, bytes) in &items {
            assert_eq!(blobs.get(ws, id).unwrap().as_ref(), Some(bytes));
        }
        let leftovers = std::fs::read_dir(dir.path().join(ws.to_string()))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some())
            .count();
        assert_eq!(leftovers, 0, "no temporary files remain");
    }
}
