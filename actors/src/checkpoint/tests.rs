//! A checkpoint gives back the state it was written from, exactly, and nothing else is
//! ever taken for one: another position, region, workspace or format is stale; bytes cut
//! short, changed, or well summed but malformed are damage.

use super::*;
use crate::search::results::{search_email, search_phone};
use crate::snapshot::{parse_slice, plan_import, NoKeys};
use crate::store::{MemoryStore, Store};

const NOTE: &str = "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7";
const CV_ROW: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";

fn example_bytes() -> &'static [u8] {
    include_bytes!("../../../tests/fixtures/snapshot-small.json")
}

/// The example workspace as a server holds it after a load, then changed so that its
/// tables have holes (deleted records) and hidden rows (a private note).
fn example() -> WorkspaceState {
    let mut state = plan_import(None, parse_slice(example_bytes()).unwrap(), &NoKeys, true)
        .unwrap()
        .next
        .unwrap();
    assert!(state.delete(RecordKind::Note, NOTE));
    assert!(state.delete(RecordKind::Attachment, CV));
    let mut private = state
        .notes
        .iter()
        .next()
        .map(|(_, n)| n.raw())
        .expect("the example has notes");
    private.is_private = true;
    state.put(Record::Note(private));
    state
}

/// A commit position of `seq` commits, with a tag of its own.
fn at(seq: u64) -> CommitPosition {
    CommitPosition {
        seq,
        tag: Uuid::from_u128(0x5eed_0000 + seq as u128),
    }
}

fn written(state: &WorkspaceState, position: CommitPosition) -> Vec<u8> {
    let mut out = Vec::new();
    let n = write(state, position, &mut out).unwrap();
    assert_eq!(n as usize, out.len());
    out
}

fn restored(
    bytes: &[u8],
    state: &WorkspaceState,
    position: CommitPosition,
) -> Result<WorkspaceState, Refused> {
    restore(bytes, (*state.workspace).clone(), position)
}

#[test]
fn a_restored_state_is_the_state_it_was_written_from() {
    let state = example();
    let bytes = written(&state, at(7));
    let back = restored(&bytes, &state, at(7)).expect("restores");
    assert_eq!(back.describe(), state.describe());
    assert_eq!(back.stored_records(), state.stored_records());
    // The search indexes were built from the records: a number and an address find
    // their owners as before.
    let row = state
        .candidates
        .get(&Uuid::parse_str(CV_ROW).unwrap())
        .unwrap();
    let number = row.phone().or(row.mobile()).expect("the row has a number");
    let found = |s: &WorkspaceState| search_phone(s, number, 100).hits.persons.len();
    assert_eq!(found(&back), found(&state));
    assert!(found(&back) > 0);
    let email = row.email().expect("the row has an address");
    let found = |s: &WorkspaceState| search_email(s, email, 100).hits.persons.len();
    assert_eq!(found(&back), found(&state));
    assert!(found(&back) > 0);
}

/// The same as a full load from the store: what a restart would otherwise have built.
#[tokio::test]
async fn a_restored_state_is_what_a_load_from_the_store_gives() {
    let store = MemoryStore::new();
    let plan = plan_import(None, parse_slice(example_bytes()).unwrap(), &NoKeys, false).unwrap();
    store
        .commit(plan.workspace.id, &plan.change_set())
        .await
        .unwrap();
    let position = store.position(plan.workspace.id).await.unwrap();
    assert_eq!(position.seq, 1);
    let loaded = crate::loader::read::read_state(&*store, plan.workspace.clone())
        .await
        .unwrap();
    let back = restored(&written(&loaded, position), &loaded, position).unwrap();
    assert_eq!(back.describe(), loaded.describe());
}

#[test]
fn a_checkpoint_of_another_position_region_workspace_or_format_is_stale() {
    let state = example();
    let bytes = written(&state, at(7));
    let stale = |r: Result<WorkspaceState, Refused>| match r {
        Err(Refused::Stale(why)) => why,
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a stale checkpoint was restored"),
    };
    assert!(stale(restored(&bytes, &state, at(8))).contains("position 7"));
    // The same count with another tag: another store (a database replaced, a backup
    // restored and written again).
    let elsewhere = CommitPosition {
        seq: 7,
        tag: Uuid::new_v4(),
    };
    assert!(stale(restored(&bytes, &state, elsewhere)).contains("position 7"));
    let mut other_region = (*state.workspace).clone();
    other_region.default_region = Some("US".into());
    assert!(stale(restore(&bytes, other_region, at(7))).contains("region"));
    let mut other = (*state.workspace).clone();
    other.id = Uuid::new_v4();
    stale(restore(&bytes, other, at(7)));
    let mut other_format = bytes.clone();
    other_format[MAGIC.len()] ^= 0x40;
    assert!(stale(restored(&other_format, &state, at(7))).contains("format"));
}

/// Recomputes the trailer's sum, as a file written with a malformed record would have.
fn resum(bytes: &mut [u8]) {
    let body = bytes.len() - 8;
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..body + 4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn damaged_checkpoints_are_refused_never_restored() {
    let state = example();
    let bytes = written(&state, at(7));
    let damaged = |b: &[u8]| match restored(b, &state, at(7)) {
        Err(Refused::Damaged(why)) => why,
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a damaged checkpoint was restored"),
    };
    // Cut short anywhere: no trailer.
    for cut in [0, 5, 40, bytes.len() / 2, bytes.len() - 1] {
        damaged(&bytes[..cut]);
    }
    // One bit flipped in a record.
    let mut flipped = bytes.clone();
    let flip = bytes.len() * 2 / 3;
    flipped[flip] ^= 0x01;
    assert!(damaged(&flipped).contains("checksum"));
    // Summed well, but a record's text is not UTF-8 / its lengths do not add up: every
    // byte of the last record (an attachment) in turn.
    let last_len_at = {
        let mut c = Cursor {
            bytes: &bytes[..bytes.len() - 8],
            at: 0,
        };
        check_header(&mut c, &state.workspace, at(7)).unwrap();
        let mut last = 0;
        for _ in TABLES {
            for _ in 0..c.u64().unwrap() {
                last = c.at;
                let len = c.u32().unwrap() as usize;
                c.take(len).unwrap();
            }
        }
        last
    };
    let mut oversized = bytes.clone();
    oversized[last_len_at..last_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    resum(&mut oversized);
    damaged(&oversized);
    let mut not_utf8 = bytes.clone();
    let end = not_utf8.len() - 9;
    not_utf8[end] = 0xff;
    resum(&mut not_utf8);
    damaged(&not_utf8);
    // Summed well and well formed, but without the fields its kind requires (an empty
    // record: a mask of no fields): damage, not a crash.
    let len = u32::from_le_bytes(bytes[last_len_at..last_len_at + 4].try_into().unwrap());
    let record_end = last_len_at + 4 + len as usize;
    let mut empty = bytes[..last_len_at].to_vec();
    empty.extend_from_slice(&8u32.to_le_bytes());
    empty.extend_from_slice(&0u64.to_le_bytes());
    empty.extend_from_slice(&bytes[record_end..]);
    resum(&mut empty);
    let why = damaged(&empty);
    assert!(why.contains("malformed"), "{why}");
}

/// The packed layouts, fingerprinted: packing every record of the example gives these
/// bytes. When this fails, a layout changed: bump [`FORMAT`] (so that checkpoints of the
/// old layout are never read as the new one) and update the fingerprint.
#[test]
fn the_packed_layouts_are_those_of_this_format() {
    let state = plan_import(None, parse_slice(example_bytes()).unwrap(), &NoKeys, true)
        .unwrap()
        .next
        .unwrap();
    let bytes = written(&state, at(0));
    // Every record's bytes with its table, in sorted order (tables iterate in no fixed
    // order).
    let mut c = Cursor {
        bytes: &bytes[..bytes.len() - 8],
        at: 0,
    };
    check_header(&mut c, &state.workspace, at(0)).unwrap();
    let mut records = Vec::new();
    for kind in TABLES {
        for _ in 0..c.u64().unwrap() {
            let len = c.u32().unwrap() as usize;
            records.push((kind.as_str(), c.take(len).unwrap()));
        }
    }
    records.sort();
    let mut crc = crc32fast::Hasher::new();
    for (kind, record) in &records {
        crc.update(kind.as_bytes());
        crc.update(record);
    }
    assert_eq!(
        (FORMAT, records.len(), crc.finalize()),
        (2, state.stored_records(), 2434969753),
        "the packed layout changed: bump checkpoint::FORMAT and update this fingerprint"
    );
}

/// A checkpoint written while its commit runs, its position filled in afterwards, is
/// byte for byte the one written at once with that position; one never finished is
/// removed, and leaves the workspace's checkpoint as it was.
#[test]
fn a_checkpoint_begun_before_its_position_is_the_one_written_with_it() {
    let state = example();
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = files::CheckpointDir::new(dir.path());
    let saved = checkpoints.begin(&state).unwrap().finish(at(9)).unwrap();
    let path = checkpoints.path(state.id());
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, written(&state, at(9)));
    assert_eq!(saved.bytes as usize, bytes.len());
    assert_eq!(saved.records, state.stored_records());
    let back = checkpoints.load(&state.workspace, at(9)).unwrap().unwrap();
    assert_eq!(back.describe(), state.describe());

    let tmp = path.with_extension("ckpt.tmp");
    let unfinished = checkpoints.begin(&example()).unwrap();
    assert!(tmp.exists(), "written beside the checkpoint");
    drop(unfinished);
    assert!(!tmp.exists(), "removed unfinished");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the checkpoint as it was"
    );
}

/// Written behind itself in steps, a file holds every byte in order, whatever the
/// sizes of the writes (across steps, within one, larger than one).
#[test]
fn a_file_written_behind_itself_holds_what_was_written() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("behind");
    let file = std::fs::File::create(&path).unwrap();
    let mut expected = Vec::new();
    {
        let mut out = super::files::WriteBehind::new(&file);
        let mut n: u32 = 0;
        for size in [1, 4096, 1 << 20, (1 << 20) - 1, 3 << 20, 17, 2 << 20] {
            let chunk: Vec<u8> = (0..size)
                .map(|_| {
                    n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (n >> 16) as u8
                })
                .collect();
            out.write_all(&chunk).unwrap();
            expected.extend_from_slice(&chunk);
        }
        out.flush().unwrap();
    }
    file.sync_all().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), expected);
}

/// The example saved at position 9, with a descriptor held open on its file.
fn saved_and_held() -> (
    WorkspaceState,
    tempfile::TempDir,
    files::CheckpointDir,
    std::fs::File,
) {
    let state = example();
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = files::CheckpointDir::new(dir.path());
    checkpoints.save(&state, at(9)).unwrap();
    let held = std::fs::File::open(checkpoints.path(state.id())).unwrap();
    (state, dir, checkpoints, held)
}

/// A replaced checkpoint's blocks are freed (`CheckpointDir::release`): a descriptor
/// still open on it finds it empty. One that another name still links is left whole.
#[test]
fn a_replaced_checkpoint_is_freed_unless_another_name_links_it() {
    let (state, dir, checkpoints, held) = saved_and_held();
    let path = checkpoints.path(state.id());
    checkpoints.save(&state, at(10)).unwrap();
    assert_eq!(
        held.metadata().unwrap().len(),
        0,
        "the old file's blocks were freed"
    );
    assert_eq!(std::fs::read(&path).unwrap(), written(&state, at(10)));

    let linked = dir.path().join("kept.ckpt");
    std::fs::hard_link(&path, &linked).unwrap();
    checkpoints.save(&state, at(11)).unwrap();
    assert_eq!(std::fs::read(&linked).unwrap(), written(&state, at(10)));
    let back = checkpoints.load(&state.workspace, at(11)).unwrap().unwrap();
    assert_eq!(back.describe(), state.describe());

    // Removed: its blocks are freed the same way.
    let held = std::fs::File::open(&path).unwrap();
    checkpoints.remove(state.id());
    assert!(!path.exists());
    assert_eq!(held.metadata().unwrap().len(), 0);
}

/// A load that may have opened the old file before the rename is let finish before
/// the old file is freed: the save that replaced it returns only after.
#[test]
fn a_replaced_checkpoint_is_freed_only_after_the_loads_reading_it() {
    let (state, _dir, checkpoints, held) = saved_and_held();
    let path = checkpoints.path(state.id());
    let (done, saved) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let reading = checkpoints.reading();
        s.spawn(|| {
            let saved = checkpoints.save(&state, at(10));
            done.send(saved.is_ok()).unwrap();
        });
        // Renamed into place, but not freed while the load reads.
        let renamed = std::time::Instant::now();
        while std::fs::read(&path).unwrap() != written(&state, at(10)) {
            assert!(renamed.elapsed() < std::time::Duration::from_secs(20));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(saved.try_recv().is_err(), "the save waits for the load");
        assert_eq!(
            held.metadata().unwrap().len() as usize,
            written(&state, at(9)).len()
        );
        drop(reading);
        assert!(saved.recv().unwrap());
    });
    assert_eq!(held.metadata().unwrap().len(), 0);
}
