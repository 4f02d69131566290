//! The BlobStore port: where attachment bytes live, how their objects are named, and
//! `MemoryBlobs`, the port in memory for tests. Apart from the record store's port: the
//! two are separate stores to the domain (bytes are written before the commit that
//! records them, and removed after the one that drops them).

use super::StoreResult;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// What a blob store knows of an object without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobMeta {
    /// Length in bytes.
    pub len: u64,
}

/// An object being read: its length and a reader over its bytes. The reader sees one
/// version of the object whole, even if the object is replaced meanwhile.
pub struct Blob {
    pub len: u64,
    pub reader: Box<dyn std::io::Read + Send>,
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blob")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// What removing objects gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    pub objects: u64,
    pub bytes: u64,
}

impl Reclaimed {
    /// Objects of these lengths.
    pub fn of_lengths(lengths: impl IntoIterator<Item = u64>) -> Self {
        lengths
            .into_iter()
            .fold(Reclaimed::default(), |done, bytes| Reclaimed {
                objects: done.objects + 1,
                bytes: done.bytes + bytes,
            })
    }

    pub fn is_empty(&self) -> bool {
        self.objects == 0
    }
}

impl std::ops::AddAssign for Reclaimed {
    fn add_assign(&mut self, other: Reclaimed) {
        self.objects += other.objects;
        self.bytes += other.bytes;
    }
}

/// The name of an attachment's object in every blob store:
/// `<workspace id>/<sha256 of the attachment id, lower-case hex>`. Attachment ids may hold
/// any character and object names must not; one naming for every store means objects
/// move between stores (a directory tree, a bucket) by plain copying.
pub fn object_key(workspace: Uuid, attachment_id: &str) -> String {
    format!("{workspace}/{}", object_name(attachment_id))
}

/// The name part of an attachment's [`object_key`]: the SHA-256 of its id, in lower-case
/// hex (how a store that keys objects by workspace and name names them).
pub fn object_name(attachment_id: &str) -> String {
    use std::fmt::Write;
    let mut name = String::with_capacity(64);
    for b in object_digest(attachment_id) {
        write!(name, "{b:02x}").expect("writing to a String");
    }
    name
}

/// The SHA-256 of an attachment id: the name part of its [`object_key`], as bytes.
pub fn object_digest(attachment_id: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(attachment_id.as_bytes()).into()
}

/// The digest an object key names, if the key is one [`object_key`] makes for `workspace`
/// (anything else, such as a write left half-way, names no attachment).
pub fn digest_of_key(workspace: Uuid, key: &str) -> Option<[u8; 32]> {
    let (ws, name) = key.split_once('/')?;
    if Uuid::try_parse(ws).ok()? != workspace || name.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, pair) in name.as_bytes().chunks_exact(2).enumerate() {
        let hex = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        digest[i] = hex(pair[0])? << 4 | hex(pair[1])?;
    }
    Some(digest)
}

/// Which object keys a sweep keeps ([`BlobStore::sweep`]): true for a key to keep.
pub type KeepKey<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// Where attachment bytes live. Bytes are written before the commit that records them,
/// so a record never claims bytes the blob store lacks; they are removed only after the
/// commit that drops the last record naming them (`crate::reclaim`).
///
/// Objects are named by [`object_key`]. The operations are those of an S3-compatible
/// object store — `put` is a PutObject, `put_many` concurrent PutObjects, `stat` a
/// HeadObject, `open` a GetObject whose body is streamed, `delete` DeleteObjects,
/// `sweep` a paged ListObjectsV2 of the workspace's prefix with DeleteObjects of what
/// is not kept — so a bucket-backed store implements this trait as it stands. Calls may
/// block on disk or network: the server makes them from blocking threads, never from
/// its async workers.
pub trait BlobStore: Send + Sync + 'static {
    /// Stores (or replaces) the bytes of one attachment, durably.
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> StoreResult<()>;

    /// Stores many attachments, durably once it returns. Stores override this when a
    /// batch can be made durable more cheaply than item by item.
    fn put_many(&self, workspace: Uuid, items: &[(String, Vec<u8>)]) -> StoreResult<()> {
        for (id, bytes) in items {
            self.put(workspace, id, bytes)?;
        }
        Ok(())
    }

    /// The object's metadata; `None` when the store holds no bytes for the attachment.
    fn stat(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<BlobMeta>>;

    /// Opens the object for reading; `None` when the store holds no bytes for it.
    fn open(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<Blob>>;

    /// Removes objects by key; a key the store does not hold is skipped. What was
    /// removed. A removal need not be durable: one a crash undoes leaves an object nothing
    /// names, which the next sweep takes.
    fn delete(&self, keys: &[String]) -> StoreResult<Reclaimed>;

    /// Removes every object of the workspace for which `keep(key)` is false, including
    /// whatever the store itself left unfinished there (a write a crash interrupted).
    /// Must not run while objects of the workspace are being written.
    fn sweep(&self, workspace: Uuid, keep: KeepKey<'_>) -> StoreResult<Reclaimed>;
}

/// Objects in memory by (workspace, attachment id); bytes shared with open readers.
type MemoryObjects = BTreeMap<(Uuid, String), Arc<[u8]>>;

/// Blobs in memory, for tests.
#[derive(Default)]
pub struct MemoryBlobs {
    // One mutex over the map: tests are small, and no call holds it while reading bytes.
    inner: Mutex<MemoryObjects>,
}

impl MemoryBlobs {
    pub fn get(&self, workspace: Uuid, attachment_id: &str) -> Option<Vec<u8>> {
        self.inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .map(|b| b.to_vec())
    }

    /// Forgets an object (to test bytes that vanish).
    pub fn remove(&self, workspace: Uuid, attachment_id: &str) -> bool {
        self.inner
            .lock()
            .remove(&(workspace, attachment_id.to_string()))
            .is_some()
    }
}

impl BlobStore for MemoryBlobs {
    fn put(&self, workspace: Uuid, attachment_id: &str, bytes: &[u8]) -> StoreResult<()> {
        self.inner
            .lock()
            .insert((workspace, attachment_id.to_string()), Arc::from(bytes));
        Ok(())
    }

    fn stat(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<BlobMeta>> {
        Ok(self
            .inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .map(|b| BlobMeta {
                len: b.len() as u64,
            }))
    }

    fn open(&self, workspace: Uuid, attachment_id: &str) -> StoreResult<Option<Blob>> {
        // The bytes are shared, not copied: a reader keeps the version it opened.
        let bytes = self
            .inner
            .lock()
            .get(&(workspace, attachment_id.to_string()))
            .cloned();
        Ok(bytes.map(|b| Blob {
            len: b.len() as u64,
            reader: Box::new(std::io::Cursor::new(SharedBytes(b))),
        }))
    }

    fn delete(&self, keys: &[String]) -> StoreResult<Reclaimed> {
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        Ok(self.remove_where(|ws, id| keys.contains(object_key(ws, id).as_str())))
    }

    fn sweep(&self, workspace: Uuid, keep: KeepKey<'_>) -> StoreResult<Reclaimed> {
        Ok(self.remove_where(|ws, id| ws == workspace && !keep(&object_key(ws, id))))
    }
}

impl MemoryBlobs {
    /// Removes every object `doomed` names, counting what went.
    fn remove_where(&self, doomed: impl Fn(Uuid, &str) -> bool) -> Reclaimed {
        let mut done = Reclaimed::default();
        self.inner.lock().retain(|(ws, id), bytes| {
            let drop = doomed(*ws, id);
            if drop {
                done += Reclaimed {
                    objects: 1,
                    bytes: bytes.len() as u64,
                };
            }
            !drop
        });
        done
    }
}

/// `Arc<[u8]>` as `AsRef<[u8]>`, for a `Cursor`.
struct SharedBytes(Arc<[u8]>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
