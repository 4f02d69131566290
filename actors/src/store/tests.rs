//! Tests of the blob port's naming and of the in-memory blob store.

use super::*;
use std::io::Read;

#[test]
fn object_keys_name_the_workspace_and_hide_the_id() {
    let key = object_key(Uuid::from_u128(7), "cv:a b/c");
    let (ws, name) = key.split_once('/').unwrap();
    assert_eq!(ws, Uuid::from_u128(7).to_string());
    assert_eq!(name.len(), 64);
    assert!(name
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_ne!(key, object_key(Uuid::from_u128(7), "cv:a b/d"));
}

#[test]
fn memory_blobs_stat_open_and_remove() {
    let blobs = MemoryBlobs::default();
    let ws = Uuid::from_u128(1);
    assert_eq!(blobs.stat(ws, "cv:x").unwrap(), None);
    assert!(blobs.open(ws, "cv:x").unwrap().is_none());
    blobs.put(ws, "cv:x", b"hello").unwrap();
    assert_eq!(blobs.stat(ws, "cv:x").unwrap(), Some(BlobMeta { len: 5 }));
    let mut blob = blobs.open(ws, "cv:x").unwrap().unwrap();
    blobs.put(ws, "cv:x", b"replaced").unwrap();
    let mut read = String::new();
    blob.reader.read_to_string(&mut read).unwrap();
    assert_eq!(
        (blob.len, read.as_str()),
        (5, "hello"),
        "the opened version"
    );
    assert!(blobs.remove(ws, "cv:x"));
    assert_eq!(blobs.stat(ws, "cv:x").unwrap(), None);
}

#[test]
fn digests_read_back_from_keys() {
    let ws = Uuid::from_u128(7);
    let key = object_key(ws, "cv:a b/c");
    assert_eq!(digest_of_key(ws, &key), Some(object_digest("cv:a b/c")));
    assert_eq!(
        digest_of_key(Uuid::from_u128(8), &key),
        None,
        "another workspace"
    );
    assert_eq!(digest_of_key(ws, &format!("{key}.tmp42")), None);
    assert_eq!(digest_of_key(ws, &key.to_uppercase()), None);
    assert_eq!(digest_of_key(ws, "nonsense"), None);
}

#[test]
fn memory_blobs_delete_by_key_and_sweep() {
    let blobs = MemoryBlobs::default();
    let (ws, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
    blobs.put(ws, "cv:gone", b"12345").unwrap();
    blobs.put(ws, "cv:kept", b"kept").unwrap();
    blobs.put(ws, "file:orphan", b"123").unwrap();
    blobs.put(other, "cv:gone", b"other workspace").unwrap();
    let done = blobs
        .delete(&[object_key(ws, "cv:gone"), object_key(ws, "cv:never")])
        .unwrap();
    assert_eq!(
        done,
        Reclaimed {
            objects: 1,
            bytes: 5
        }
    );
    assert_eq!(blobs.get(ws, "cv:gone"), None);
    assert!(
        blobs.get(other, "cv:gone").is_some(),
        "a key names one workspace"
    );
    let kept = object_key(ws, "cv:kept");
    let done = blobs.sweep(ws, &|k| k == kept).unwrap();
    assert_eq!(
        done,
        Reclaimed {
            objects: 1,
            bytes: 3
        }
    );
    assert_eq!(blobs.get(ws, "cv:kept").as_deref(), Some(&b"kept"[..]));
    assert!(
        blobs.get(other, "cv:gone").is_some(),
        "other workspaces untouched"
    );
}
