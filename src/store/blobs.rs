//! Where attachment bytes live.
//!
//! [`StoreBlobs`], what servers and imports use: the bytes in the store itself (table
//! `blobs`, by workspace and object name), written before the records that name them and
//! as durable; every node on one PostgreSQL reaches them. Files an older data dir holds
//! under `<data-dir>/blobs/` are still served where the store has no bytes for a name,
//! and removed with the attachment, or by the sweep.
//!
//! [`FileBlobs`], those files: one per attachment at `blobs/<object key>`, i.e.
//! `blobs/<workspace>/<sha256 of the attachment id>` ([`actors::store::object_key`]): ids
//! may hold any character, file names must not, and the same names serve a bucket. Writes
//! go to a temporary file, are synced, then renamed into place, so a reader never sees
//! half a file; a reader that has opened a file keeps its version across a replacement.
//! A large batch (an import's) is made durable by one `syncfs` rather than a sync per
//! file (`put_many`).
//!
//! Removal (`delete`, `sweep`) unlinks files without syncing the directory: a removal a
//! crash undoes leaves a file no attachment names, which the sweep at the next start
//! takes again. A sweep takes only files named as this store names them (object names and
//! the temporary files of interrupted writes); anything else in a workspace's directory
//! is left alone.

use actors::private_files;
use actors::store::StoreResult;
use actors::store::{
    object_key, object_name, Blob, BlobMeta, BlobStore, KeepKey, Reclaimed, Store, StoreError,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uuid::Uuid;

/// Attachment bytes in the store, with an older data dir's files read where the store
/// has none (see the module doc).
///
/// `BlobStore` is called from threads that may block (`spawn_blocking`, `web::block`);
/// each call waits for the store's answer there.
pub struct StoreBlobs {
    store: Arc<dyn Store>,
    files: FileBlobs,
    runtime: tokio::runtime::Handle,
}

/// Object names a sweep reads from the store at a time.
const SWEEP_PAGE: usize = 10_000;

impl StoreBlobs {
    /// Bytes in `store`, and the files under `files_root` of an older data dir. Call
    /// inside the runtime the store's connections belong to.
    pub fn new(store: Arc<dyn Store>, files_root: impl Into<PathBuf>) -> Self {
        StoreBlobs {
            store,
            files: FileBlobs::new(files_root),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Runs a store call to its end on this thread. On a worker of a multi-threaded
    /// runtime the worker's other tasks move elsewhere meanwhile (`block_in_place`);
    /// on a blocking thread this simply waits.
    fn wait<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let on_worker = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if on_worker {
            tokio::task::block_in_place(|| self.runtime.block_on(call))
        } else {
            self.runtime.block_on(call)
        }
    }

    /// Removes the older data dir's files of `names` in `workspace` once the store holds
    /// their bytes, so that the replaced bytes do not linger; nothing to do (one failed
    /// `stat`) when the workspace has no such directory.
    fn drop_files(&self, workspace: Uuid, names: impl Iterator<Item = String>) {
        let dir = self.files.root.join(workspace.to_string());
        if !dir.is_dir() {
            return;
        }
        for name in names {
            if let Err(e) = remove_file(&dir.join(&name)) {
                tracing::warn!(workspace = %workspace, error = %e, "removing a replaced blob file failed; the sweep takes it later");
            }
        }
    }
}

impl BlobStore for StoreBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> StoreResult<()> {
        let name = object_name(attachment_id);
        self.wait(self.store.put_blobs(workspace, &[(name.clone(), bytes)]))?;
        self.drop_files(workspace, std::iter::once(name));
        Ok(())
    }

    fn put_many(&self, workspace: Uuid, items: &[(String, Vec<u8>)]) -> StoreResult<()> {
        let mut named: Vec<(String, &[u8])> = items
            .iter()
            .map(|(id, bytes)| (object_name(id), bytes.as_slice()))
            .collect();
        // In key order: names are digests, and in the order given every insert would
        // land on another page of the store's index (three times slower at a million).
        named.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.wait(self.store.put_blobs(workspace, &named))?;
        self.drop_files(workspace, named.into_iter().map(|(name, _)| name));
        Ok(())
    }

    fn stat(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<BlobMeta>> {
        let name = object_name(attachment_id);
        match self.wait(self.store.blob_len(workspace, &name))? {
            Some(len) => Ok(Some(BlobMeta { len })),
            None => self.files.stat(workspace, attachment_id),
        }
    }

    fn open(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<Blob>> {
        let name = object_name(attachment_id);
        match self.wait(self.store.blob(workspace, &name))? {
            Some(bytes) => Ok(Some(Blob {
                len: bytes.len() as u64,
                reader: Box::new(std::io::Cursor::new(bytes)),
            })),
            None => self.files.open(workspace, attachment_id),
        }
    }

    fn delete(&self, keys: &[String]) -> StoreResult<Reclaimed> {
        let mut by_workspace: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
        for key in keys {
            let (ws, name) = key
                .split_once('/')
                .and_then(|(ws, name)| Some((Uuid::try_parse(ws).ok()?, name)))
                .ok_or_else(|| not_an_object_key(key))?;
            by_workspace.entry(ws).or_default().push(name.to_owned());
        }
        let mut done = Reclaimed::default();
        for (ws, names) in &by_workspace {
            done += self.wait(self.store.delete_blobs(*ws, names))?;
        }
        done += self.files.delete(keys)?;
        Ok(done)
    }

    fn sweep(&self, workspace: Uuid, keep: KeepKey<'_>) -> StoreResult<Reclaimed> {
        let mut done = Reclaimed::default();
        let mut after = String::new();
        loop {
            let names = self.wait(self.store.blob_names(workspace, &after, SWEEP_PAGE))?;
            let Some(last) = names.last() else { break };
            after = last.clone();
            let doomed: Vec<String> = names
                .into_iter()
                .filter(|name| !keep(&format!("{workspace}/{name}")))
                .collect();
            if !doomed.is_empty() {
                done += self.wait(self.store.delete_blobs(workspace, &doomed))?;
            }
        }
        done += self.files.sweep(workspace, keep)?;
        Ok(done)
    }
}

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

/// What `delete` answers for a key that names no object.
fn not_an_object_key(key: &str) -> StoreError {
    StoreError::Other(format!("{key:?} is not an object key"))
}

/// The file of an object key, if the key is one this store can hold: `<workspace
/// id>/<name>` with a name of one plain path component. Keys come from `object_key`;
/// this check keeps any other string from naming a file outside the store.
fn key_path(root: &Path, key: &str) -> Option<PathBuf> {
    let (ws, name) = key.split_once('/')?;
    Uuid::try_parse(ws).ok()?;
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    plain.then(|| root.join(ws).join(name))
}

/// Whether a file name is one this store writes: an object name (64 lower-case hex
/// digits), or that followed by `.tmp<pid>` (a write in progress, or interrupted).
fn is_store_file(name: &str) -> bool {
    let (Some(object), Some(rest)) = (name.get(..64), name.get(64..)) else {
        return false;
    };
    object
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && (rest.is_empty()
            || rest
                .strip_prefix(".tmp")
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())))
}

/// Unlinks a file; its length, or `None` when it was not there.
fn remove_file(path: &Path) -> std::io::Result<Option<u64>> {
    let len = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match std::fs::remove_file(path) {
        Ok(()) => Ok(Some(len)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("blob paths have a parent");
    private_files::create_dir(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = private_files::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    // The rename itself is durable only once the directory is synced.
    std::fs::File::open(dir)?.sync_all()
}

/// Threads writing the files of a batch: two overlap one's waits on the disk with the
/// other's copying. More gain nothing: creating names in one directory is serialised
/// by its lock, which waiting threads spin on.
const WRITING_THREADS: usize = 2;

/// Below this many files a batch is written file by file (fsync each): a `syncfs`
/// flushes whatever else the file system has pending too, which pays off only when it
/// replaces many syncs.
const BATCH_SYNC_THRESHOLD: usize = 64;

/// Makes every write to the file system that holds `file` durable (`syncfs`), where
/// there is such a call; elsewhere every file's data reaches the disk through `sync`.
fn sync_file_system(file: &std::fs::File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor this function borrows.
        if unsafe { libc::syncfs(file.as_raw_fd()) } == 0 {
            return Ok(());
        }
        Err(std::io::Error::last_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        // SAFETY: `sync` takes no arguments and cannot fail.
        unsafe { libc::sync() };
        Ok(())
    }
}

impl BlobStore for FileBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> StoreResult<()> {
        write_atomically(&self.path_of(workspace, attachment_id), bytes)
            .map_err(|e| StoreError::Other(format!("writing blob of {attachment_id}: {e}")))
    }

    fn stat(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<BlobMeta>> {
        match std::fs::metadata(self.path_of(workspace, attachment_id)) {
            Ok(m) if m.is_file() => Ok(Some(BlobMeta { len: m.len() })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::Other(format!(
                "reading blob of {attachment_id}: {e}"
            ))),
        }
    }

    fn open(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<Blob>> {
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

    /// A batch is written without a sync per file: every file is written (a name no
    /// file has yet is created as itself, `O_EXCL`; a replaced one goes beside its name
    /// first), then one `syncfs` makes all of them durable, then the replacements are
    /// renamed into place and the directory synced. A reader never sees half a file: a
    /// name created here is named by no record until the commit that follows this call,
    /// and a replaced name keeps its old bytes until the rename. After a crash a name
    /// has either its whole new bytes, its old ones, or (a name no record has yet) any
    /// prefix, which the next write of it replaces and the sweep takes meanwhile.
    fn put_many(&self, workspace: Uuid, items: &[(String, Vec<u8>)]) -> StoreResult<()> {
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
        private_files::create_dir(&dir).map_err(|e| fail("creating the directory", e))?;
        let tmp_extension = format!("tmp{}", std::process::id());
        // Creating many small files is latency-bound: a few threads overlap it.
        let chunk = items.len().div_ceil(WRITING_THREADS);
        let staged: Vec<(PathBuf, PathBuf)> = std::thread::scope(|scope| {
            let workers: Vec<_> = items
                .chunks(chunk)
                .map(|items| {
                    let tmp_extension = &tmp_extension;
                    scope.spawn(move || -> StoreResult<Vec<(PathBuf, PathBuf)>> {
                        let mut staged = Vec::new();
                        for (id, bytes) in items {
                            let path = self.path_of(workspace, id);
                            let mut file = match private_files::options()
                                .write(true)
                                .create_new(true)
                                .open(&path)
                            {
                                Ok(f) => f,
                                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                                    let tmp = path.with_extension(tmp_extension);
                                    let f = private_files::create(&tmp).map_err(|e| fail(id, e))?;
                                    staged.push((tmp, path));
                                    f
                                }
                                Err(e) => return Err(fail(id, e)),
                            };
                            file.write_all(bytes).map_err(|e| fail(id, e))?;
                        }
                        Ok(staged)
                    })
                })
                .collect();
            let mut staged = Vec::new();
            for w in workers {
                staged.extend(w.join().expect("blob writer panicked")?);
            }
            Ok::<_, StoreError>(staged)
        })?;
        let directory = std::fs::File::open(&dir).map_err(|e| fail("opening the directory", e))?;
        sync_file_system(&directory).map_err(|e| fail("syncing the files", e))?;
        if staged.is_empty() {
            return Ok(());
        }
        for (tmp, path) in &staged {
            std::fs::rename(tmp, path).map_err(|e| fail("renaming", e))?;
        }
        // The renames are durable once the directory is.
        directory
            .sync_all()
            .map_err(|e| fail("syncing the directory", e))
    }

    fn delete(&self, keys: &[String]) -> StoreResult<Reclaimed> {
        let mut done = Reclaimed::default();
        for key in keys {
            let path = key_path(&self.root, key).ok_or_else(|| not_an_object_key(key))?;
            let removed = remove_file(&path)
                .map_err(|e| StoreError::Other(format!("removing blob {key}: {e}")))?;
            if let Some(bytes) = removed {
                done += Reclaimed { objects: 1, bytes };
            }
        }
        Ok(done)
    }

    fn sweep(&self, workspace: Uuid, keep: KeepKey<'_>) -> StoreResult<Reclaimed> {
        let fail = |e: std::io::Error| StoreError::Other(format!("sweeping blobs: {e}"));
        let dir = self.root.join(workspace.to_string());
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Reclaimed::default()),
            Err(e) => return Err(fail(e)),
        };
        let mut done = Reclaimed::default();
        // One entry at a time: a workspace of millions of objects is never listed whole.
        for entry in entries {
            let entry = entry.map_err(fail)?;
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| is_store_file(n)) else {
                continue;
            };
            if !entry.file_type().map_err(fail)?.is_file() || keep(&format!("{workspace}/{name}")) {
                continue;
            }
            if let Some(bytes) = remove_file(&entry.path()).map_err(fail)? {
                done += Reclaimed { objects: 1, bytes };
            }
        }
        Ok(done)
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

    /// Batches below and above the size written with one `syncfs`; the large one both
    /// creates names and replaces some (changed bytes, and shorter ones, so that a
    /// replacement written over the old file would show its tail).
    #[test]
    fn batches_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let ws = Uuid::from_u128(2);
        let small: Vec<(String, Vec<u8>)> = (0..40)
            .map(|i| (format!("file:{i}"), vec![i as u8; i + 10]))
            .collect();
        blobs.put_many(ws, &small).unwrap();
        let large: Vec<(String, Vec<u8>)> = (0..3 * BATCH_SYNC_THRESHOLD)
            .map(|i| (format!("file:{i}"), vec![(i + 1) as u8; i / 2]))
            .collect();
        blobs.put_many(ws, &large).unwrap();
        for (id, bytes) in &large {
            assert_eq!(blobs.get(ws, id).unwrap().as_ref(), Some(bytes), "{id}");
        }
        let entries: Vec<_> = std::fs::read_dir(dir.path().join(ws.to_string()))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), large.len());
        let leftovers = entries.iter().filter(|p| p.extension().is_some()).count();
        assert_eq!(leftovers, 0, "no temporary files remain");
    }

    #[test]
    fn delete_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let ws = Uuid::from_u128(4);
        blobs.put(ws, "file:a", b"12345").unwrap();
        blobs.put(ws, "file:b", b"kept").unwrap();
        let done = blobs
            .delete(&[object_key(ws, "file:a"), object_key(ws, "file:never")])
            .unwrap();
        assert_eq!(
            done,
            Reclaimed {
                objects: 1,
                bytes: 5
            }
        );
        assert_eq!(blobs.get(ws, "file:a").unwrap(), None);
        assert_eq!(
            blobs.get(ws, "file:b").unwrap().as_deref(),
            Some(&b"kept"[..])
        );
        assert!(blobs
            .delete(&[object_key(ws, "file:a")])
            .unwrap()
            .is_empty());
        // Only object keys name files: nothing outside the store can be reached.
        std::fs::write(dir.path().join("outside"), b"x").unwrap();
        for bad in [
            "outside",
            "../outside",
            &format!("{ws}/../outside"),
            &format!("{ws}/"),
        ] {
            assert!(blobs.delete(&[bad.to_string()]).is_err(), "{bad}");
        }
        assert!(dir.path().join("outside").exists());
    }

    #[test]
    fn sweep_takes_unnamed_objects_and_leftovers_only() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = FileBlobs::new(dir.path());
        let (ws, other) = (Uuid::from_u128(5), Uuid::from_u128(6));
        assert!(
            blobs.sweep(ws, &|_| false).unwrap().is_empty(),
            "no directory yet"
        );
        blobs.put(ws, "file:live", b"live").unwrap();
        blobs.put(ws, "file:orphan", b"123").unwrap();
        blobs.put(other, "file:orphan", b"other").unwrap();
        let leftover = blobs.path_of(ws, "file:staged").with_extension("tmp77");
        std::fs::write(&leftover, b"half").unwrap();
        let foreign = dir.path().join(ws.to_string()).join("notes.txt");
        std::fs::write(&foreign, b"not the store's").unwrap();
        let live = object_key(ws, "file:live");
        let done = blobs.sweep(ws, &|k| k == live).unwrap();
        assert_eq!(
            done,
            Reclaimed {
                objects: 2,
                bytes: 7
            }
        );
        assert!(blobs.get(ws, "file:live").unwrap().is_some());
        assert_eq!(blobs.get(ws, "file:orphan").unwrap(), None);
        assert!(!leftover.exists());
        assert!(foreign.exists(), "not a name the store writes");
        assert!(blobs.get(other, "file:orphan").unwrap().is_some());
    }

    #[test]
    fn store_file_names() {
        let name = object_key(Uuid::nil(), "x")
            .split_once('/')
            .unwrap()
            .1
            .to_string();
        assert!(is_store_file(&name));
        assert!(is_store_file(&format!("{name}.tmp123")));
        assert!(!is_store_file(&format!("{name}.tmp")));
        assert!(!is_store_file(&format!("{name}.txt")));
        assert!(!is_store_file(&name.to_uppercase()));
        assert!(!is_store_file(&name[1..]));
        assert!(!is_store_file("README"));
        assert!(
            !is_store_file(&format!("{}é", &name[1..])),
            "not cut inside a character"
        );
    }
}
