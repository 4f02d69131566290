//! Reading the change log into answers of `GET /v1/changes`: each logged record as it
//! stands at the answer's point (an upsert when the API shows it, a tombstone when it
//! does not), parts read in ranges and the latest kept decoded in a cache.

pub use super::parts::PartCache;
use super::parts::{DecodedPart, TAIL_POSITIONS};
use super::tokens::{FeedPoint, WHOLE_PART};
use crate::entities;
use crate::entries::{Change, LoggedId};
use crate::model::Entity;
use crate::state::WorkspaceState;
use crate::store::{LogWindow, Store, StoreError};
use crate::time::Stamp;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// One answer of the feed: the `data` array's JSON, the point after it, and whether
/// more is already waiting.
#[derive(Debug)]
pub struct FeedPage {
    pub data: Vec<u8>,
    pub changes: usize,
    pub next: FeedPoint,
    pub has_more: bool,
    /// When the newest of its changes (the last) was committed, in ms since the epoch
    /// (`None` when it holds none): what a delivery's lag is measured from.
    pub newest_commit_ms: Option<i64>,
}

/// Why the feed cannot answer.
#[derive(Debug)]
pub enum FeedError {
    /// The point is older than the kept log: the client must sync afresh.
    Pruned,
    /// The point lies beyond this state (a token of a store that was replaced).
    Ahead,
    Store(StoreError),
}

/// Most parts read per store round trip. A read asks for as many as the answer still
/// needs at the mean size of the parts read so far, starting with two: an import's
/// parts hold thousands of entries (one part fills a page), API write batches a few
/// (a page spans hundreds).
const MAX_PARTS_PER_READ: usize = 256;

/// How many parts the next read asks for, to find `wanted` more entries when `parts`
/// parts held `entries`.
fn parts_to_read(wanted: usize, parts: usize, entries: usize) -> usize {
    if parts == 0 || entries == 0 {
        // The rest of the part the point is in, and the next.
        return 2;
    }
    (wanted * parts / entries + 1).clamp(1, MAX_PARTS_PER_READ)
}

/// The changes after `since` as `ws` shows them, at most `limit` records, each once,
/// in commit order (of the first of its changes in the answer): an upsert with the
/// record as `GET /v1/{entity}/{id}` gives it when the state shows it, a tombstone
/// otherwise. Only the log up to the state's own position is read, so the answer is
/// exactly the state's. The answer's `data` array is appended to `out`.
pub async fn feed_page(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    entities: &[Entity],
    limit: usize,
    out: Vec<u8>,
) -> Result<FeedPage, FeedError> {
    feed_pick(store, cache, ws, since, entities, limit)
        .await?
        .render(ws, out)
}

/// The changes an answer of the feed shows, chosen from the log (the store's part of
/// [`feed_page`]), before they are rendered ([`Picked::render`], the CPU's part).
#[derive(Debug)]
pub struct Picked {
    /// Each change with its part's commit time.
    changes: Vec<(Change, i64)>,
    next: FeedPoint,
    has_more: bool,
}

impl Picked {
    pub fn has_more(&self) -> bool {
        self.has_more
    }

    pub fn next(&self) -> FeedPoint {
        self.next
    }

    /// The answer, rendered as `ws` (the state the changes were picked from) shows each
    /// record: the `data` array appended to `out`.
    ///
    /// A full page is rendered in two halves on the rayon pool: the answer is the
    /// longest the API writes record by record, and a client catching up waits for
    /// each one in turn.
    pub fn render(&self, ws: &WorkspaceState, mut out: Vec<u8>) -> Result<FeedPage, FeedError> {
        out.reserve(256 + self.changes.len() * 1024);
        out.push(b'[');
        let (first, second) = self
            .changes
            .split_at(if self.changes.len() >= RENDER_SPLIT_AT {
                self.changes.len() / 2
            } else {
                self.changes.len()
            });
        if second.is_empty() {
            write_changes(ws, first, &mut out)?;
        } else {
            let mut rest = Vec::with_capacity(second.len() * 1024);
            let (a, b) = rayon::join(
                || write_changes(ws, first, &mut out),
                || write_changes(ws, second, &mut rest),
            );
            a.and(b)?;
            out.push(b',');
            out.extend_from_slice(&rest);
        }
        out.push(b']');
        Ok(FeedPage {
            data: out,
            changes: self.changes.len(),
            next: self.next,
            has_more: self.has_more,
            // Picked in commit order: the last is of the newest commit.
            newest_commit_ms: self.changes.last().map(|(_, at)| *at),
        })
    }

    /// How many changes it holds.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Changes from which an answer is rendered in two halves (see [`Picked::render`]).
const RENDER_SPLIT_AT: usize = 128;

/// `changes`, as the feed shows them, comma-separated.
fn write_changes(
    ws: &WorkspaceState,
    changes: &[(Change, i64)],
    out: &mut Vec<u8>,
) -> Result<(), FeedError> {
    for (n, (change, at)) in changes.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_change(ws, change, *at, out)
            .map_err(|e| FeedError::Store(StoreError::Other(e.to_string())))?;
    }
    Ok(())
}

/// The store's part of [`feed_page`]: which changes after `since` the answer shows.
pub async fn feed_pick(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    entities: &[Entity],
    limit: usize,
) -> Result<Picked, FeedError> {
    let head = FeedPoint::at(ws.position);
    pick_upto(store, cache, ws, since, head, entities, limit).await
}

/// The changes between `since` and `upto`, an answer's two points, as `ws` shows them:
/// the same changes that answer held (a log's range never changes), each record as the
/// state shows it now. At most [`MOST_RANGE_CHANGES`] of them.
pub async fn feed_range(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    upto: FeedPoint,
    entities: &[Entity],
) -> Result<Picked, FeedError> {
    if upto.position > ws.position {
        return Err(FeedError::Ahead);
    }
    pick_upto(store, cache, ws, since, upto, entities, MOST_RANGE_CHANGES).await
}

/// Most changes [`feed_range`] gives: a range is one answer's, which holds at most 500.
pub const MOST_RANGE_CHANGES: usize = 500;

/// [`feed_pick`], stopping at `upto` (a point at or before the state's position).
async fn pick_upto(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    upto: FeedPoint,
    entities: &[Entity],
    limit: usize,
) -> Result<Picked, FeedError> {
    if since.position > ws.position {
        return Err(FeedError::Ahead);
    }
    // After all of `upto`'s position already (a follower up to date, at the start of its
    // wait): nothing to read.
    let boundary = since.index == WHOLE_PART && since.part == u32::MAX;
    if boundary && since.position == upto.position {
        return Ok(Picked {
            changes: Vec::new(),
            next: upto,
            has_more: upto.position < ws.position,
        });
    }
    // Whether entry `i` of part `(p, q)` lies before `upto`.
    let before_upto = |p: u64, q: u32, i: usize| {
        (p, q) < (upto.position, upto.part)
            || ((p, q) == (upto.position, upto.part) && (i as u64) < u64::from(upto.index))
    };
    let mut picked: Vec<(Change, i64)> = Vec::with_capacity(limit.min(1024));
    let mut seen: HashSet<Change, foldhash::fast::RandomState> = HashSet::default();
    let mut after = since.read_after();
    let mut skip = (since.index != WHOLE_PART).then_some((since.position, since.part, since.index));
    let mut next = since;
    let (mut parts_read, mut entries_read) = (0, 0);
    let mut pending: VecDeque<Arc<DecodedPart>> = VecDeque::new();
    // A point inside a part starts with that part, which the answer before this one
    // most likely read (a client catching up reads an import's part in several
    // answers): from the cache, it costs no store read.
    if since.index != WHOLE_PART {
        if let Some(part) = cache.get(ws.id(), since.position, since.part) {
            pending.push_back(part);
        }
    }
    // Whether a store read has said the log holds nothing more up to the state.
    let mut exhausted = None;
    // A point a few commits behind, at a position's end: the workspace's tail, which every
    // follower a commit wakes wants. One at a time, so that the first reads it from the
    // store and the others find it kept (but never long behind another's read).
    let near_head = boundary
        && upto.position > since.position
        && upto.position - since.position <= TAIL_POSITIONS;
    let _turn = match near_head {
        true => cache.tail_turn(ws.id()).await,
        false => None,
    };
    // The tail as this call reads it from the store, to be kept if it reads all of it.
    let mut tail_read: Option<(Vec<Arc<DecodedPart>>, u64)> = None;
    if near_head {
        match cache.tail(ws.id(), after, upto.position) {
            Some((parts, pruned_through)) => {
                if pruned_through > since.position {
                    return Err(FeedError::Pruned);
                }
                pending.extend(parts);
                exhausted = Some(true);
            }
            None => tail_read = Some((Vec::new(), 0)),
        }
    }
    loop {
        if pending.is_empty() {
            if exhausted == Some(true) {
                break;
            }
            let ask = parts_to_read(limit - picked.len(), parts_read, entries_read);
            let read = store
                .read_changes(
                    ws.id(),
                    LogWindow {
                        after,
                        upto: upto.position,
                        max_parts: ask,
                    },
                )
                .await
                .map_err(FeedError::Store)?;
            // Parts at or below `pruned_through` are gone: a point inside that very
            // position has lost the rest of it too.
            if read.pruned_through > since.position
                || (since.inside() && read.pruned_through >= since.position)
            {
                return Err(FeedError::Pruned);
            }
            exhausted = Some(read.parts.len() < ask);
            for part in read.parts {
                let decoded = Arc::new(DecodedPart::decode(part).map_err(FeedError::Store)?);
                cache.put(ws.id(), decoded.clone());
                if let Some((parts, pruned)) = tail_read.as_mut() {
                    parts.push(decoded.clone());
                    *pruned = read.pruned_through;
                }
                pending.push_back(decoded);
            }
            if pending.is_empty() {
                break;
            }
        }
        let part = pending.pop_front().expect("a part is pending");
        let first = match skip.take() {
            Some((p, q, i)) if (p, q) == (part.position, part.part) => i as usize,
            _ => 0,
        };
        parts_read += 1;
        entries_read += part.entries.len();
        for (i, change) in part.entries.iter().enumerate().skip(first) {
            if !before_upto(part.position, part.part, i) {
                return Ok(Picked {
                    changes: picked,
                    next: upto,
                    has_more: upto.position < ws.position,
                });
            }
            if picked.len() == limit {
                // Full: what remains of this part, or any part after it, waits.
                let more = i < part.entries.len()
                    || !pending.is_empty()
                    || exhausted == Some(false)
                    || !store
                        .read_changes(
                            ws.id(),
                            LogWindow {
                                after: (part.position, part.part),
                                upto: upto.position,
                                max_parts: 1,
                            },
                        )
                        .await
                        .map_err(FeedError::Store)?
                        .parts
                        .is_empty();
                return Ok(Picked {
                    changes: picked,
                    next,
                    has_more: more,
                });
            }
            next = FeedPoint {
                position: part.position,
                part: part.part,
                index: if i + 1 == part.entries.len() {
                    WHOLE_PART
                } else {
                    (i + 1) as u32
                },
            };
            if !entities.contains(&change.entity) || !seen.insert(change.clone()) {
                continue;
            }
            picked.push((change.clone(), part.committed_at_ms));
        }
        next = FeedPoint {
            position: part.position,
            part: part.part,
            index: WHOLE_PART,
        };
        after = (part.position, part.part);
    }
    // Read to `upto` (the state's position, for an answer): the next answer starts
    // after all of it.
    if let Some((parts, pruned_through)) = tail_read {
        let after = since.read_after();
        cache.put_tail(ws.id(), after, upto.position, pruned_through, parts);
    }
    Ok(Picked {
        changes: picked,
        next: upto,
        has_more: upto.position < ws.position,
    })
}

/// One change as the feed shows it (see [`feed_page`]).
fn write_change(
    ws: &WorkspaceState,
    change: &Change,
    committed_at_ms: i64,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"entity\":\"");
    out.extend_from_slice(change.entity.name().as_bytes());
    out.extend_from_slice(b"\",\"id\":");
    match &change.id {
        // A UUID needs no escaping: written straight from its bytes.
        LoggedId::Uuid(id) => {
            out.push(b'"');
            out.extend_from_slice(
                id.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    .as_bytes(),
            );
            out.push(b'"');
        }
        LoggedId::Text(id) => serde_json::to_writer(&mut *out, &**id)?,
    }
    let at = out.len();
    out.extend_from_slice(b",\"op\":\"upsert\",\"record\":");
    if entities::write_visible_logged(ws, change.entity, &change.id, out)? {
        out.push(b'}');
    } else {
        out.truncate(at);
        out.extend_from_slice(b",\"op\":\"delete\",\"deleted_at\":\"");
        let mut stamp = [0u8; 24];
        Stamp::from_millis(committed_at_ms).write_iso_ascii(&mut stamp);
        out.extend_from_slice(&stamp);
        out.extend_from_slice(b"\"}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RecordKind;
    use uuid::Uuid;

    #[test]
    fn reads_ask_for_what_the_answer_still_needs() {
        // Nothing read yet: the point's part and the next.
        assert_eq!(parts_to_read(500, 0, 0), 2);
        // Import parts of 4,096 entries: one more part fills any page.
        assert_eq!(parts_to_read(500, 1, 4096), 1);
        // API batches of two or three entries: a page needs some two hundred parts.
        assert_eq!(parts_to_read(500, 4, 10), 201);
        // Never more than the cap, never none.
        assert_eq!(parts_to_read(500, 100, 100), MAX_PARTS_PER_READ);
        assert_eq!(parts_to_read(0, 3, 9), 1);
    }

    fn state_at(position: u64) -> WorkspaceState {
        let mut ws = WorkspaceState::new(crate::model::Workspace {
            id: Uuid::new_v4(),
            name: None,
            default_region: None,
        });
        ws.position = position;
        ws
    }

    #[tokio::test]
    async fn a_point_behind_the_pruned_log_or_ahead_of_the_state_is_refused() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let ws = state_at(0);
        let id = ws.id();
        for _ in 0..3 {
            let changes = crate::store::ChangeSet {
                deletes: vec![(RecordKind::Task, Uuid::new_v4().to_string())],
                ..Default::default()
            };
            store.commit(id, &changes).await.unwrap();
        }
        let mut ws = ws;
        ws.position = 3;
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            100,
            Vec::new(),
        )
        .await
        .unwrap();
        // Tasks the state does not hold: shown as tombstones, each once.
        assert_eq!(page.changes, 3);
        assert_eq!(page.next, FeedPoint::at(3));
        assert!(!page.has_more);
        let two = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            2,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(two.changes, 2);
        assert!(two.has_more);
        let rest = feed_page(&*store, &cache, &ws, two.next, &Entity::ALL, 2, Vec::new())
            .await
            .unwrap();
        assert_eq!(rest.changes, 1);
        assert!(!rest.has_more);
        assert!(matches!(
            feed_page(
                &*store,
                &cache,
                &ws,
                FeedPoint::at(4),
                &Entity::ALL,
                10,
                Vec::new()
            )
            .await,
            Err(FeedError::Ahead)
        ));
        store
            .prune_changes(id, crate::store::now_ms() + 1)
            .await
            .unwrap();
        assert!(matches!(
            feed_page(
                &*store,
                &cache,
                &ws,
                FeedPoint::at(2),
                &Entity::ALL,
                10,
                Vec::new()
            )
            .await,
            Err(FeedError::Pruned)
        ));
        // Inside the pruned position (a token taken half-way through it), the rest of
        // it is gone too.
        let inside = FeedPoint {
            position: 3,
            part: 0,
            index: 0,
        };
        assert!(matches!(
            feed_page(&*store, &cache, &ws, inside, &Entity::ALL, 10, Vec::new()).await,
            Err(FeedError::Pruned)
        ));
        // At the pruned point itself nothing is missing.
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(3),
            &Entity::ALL,
            10,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(page.changes, 0);
    }

    #[tokio::test]
    async fn followers_at_one_point_share_one_read_of_the_tail() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        let commit = |n: usize| crate::store::ChangeSet {
            deletes: (0..n)
                .map(|_| (RecordKind::Task, Uuid::new_v4().to_string()))
                .collect(),
            ..Default::default()
        };
        store.commit(ws.id(), &commit(4)).await.unwrap();
        ws.position = 1;
        async fn page(
            (store, cache, ws): (&crate::store::MemoryStore, &PartCache, &WorkspaceState),
            since: FeedPoint,
            limit: usize,
        ) -> Result<FeedPage, FeedError> {
            feed_page(store, cache, ws, since, &Entity::ALL, limit, Vec::new()).await
        }
        let first = page((&*store, &cache, &ws), FeedPoint::at(0), 500)
            .await
            .unwrap();
        assert_eq!((first.changes, first.next), (4, FeedPoint::at(1)));
        // A commit wakes its followers, each up to date at the same point.
        store.commit(ws.id(), &commit(3)).await.unwrap();
        ws.position = 2;
        let read = page((&*store, &cache, &ws), first.next, 500).await.unwrap();
        assert_eq!((read.changes, read.has_more), (3, false));
        // With the store down, the others find what the first read.
        store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        for limit in [500, 3] {
            let kept = page((&*store, &cache, &ws), first.next, limit)
                .await
                .unwrap();
            assert_eq!(kept.data, read.data);
            assert_eq!((kept.next, kept.has_more), (FeedPoint::at(2), false));
        }
        // Fewer than the tail holds: a page of them, and more to come.
        let part = page((&*store, &cache, &ws), first.next, 2).await.unwrap();
        assert_eq!((part.changes, part.has_more), (2, true));
        // Up to date already: nothing to read, no store needed.
        let none = page((&*store, &cache, &ws), FeedPoint::at(2), 500)
            .await
            .unwrap();
        assert_eq!(
            (none.changes, none.next, none.has_more),
            (0, FeedPoint::at(2), false)
        );
        // A point the tail does not start at is read from the store, which is down.
        assert!(page((&*store, &cache, &ws), FeedPoint::at(0), 500)
            .await
            .is_err());
        store.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        // The next commit's tail starts from the new point.
        store.commit(ws.id(), &commit(2)).await.unwrap();
        ws.position = 3;
        let next = page((&*store, &cache, &ws), FeedPoint::at(2), 500)
            .await
            .unwrap();
        assert_eq!(next.changes, 2);
    }

    #[tokio::test]
    async fn a_reader_whose_turn_does_not_come_reads_the_store_itself() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        let changes = crate::store::ChangeSet {
            deletes: vec![(RecordKind::Task, Uuid::new_v4().to_string())],
            ..Default::default()
        };
        store.commit(ws.id(), &changes).await.unwrap();
        ws.position = 1;
        // Another reader of the workspace's tail, stuck (a store that stalls).
        let held = cache.tail_turn(ws.id()).await.expect("free");
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            feed_page(
                &*store,
                &cache,
                &ws,
                FeedPoint::at(0),
                &Entity::ALL,
                500,
                Vec::new(),
            ),
        )
        .await
        .expect("not held up behind the stuck reader")
        .unwrap();
        assert_eq!(read.changes, 1);
        drop(held);
    }

    #[tokio::test]
    async fn a_point_inside_a_part_reads_that_part_from_the_cache() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        let tasks: Vec<_> = (0..10).map(|_| Uuid::new_v4().to_string()).collect();
        let changes = crate::store::ChangeSet {
            deletes: tasks
                .iter()
                .map(|t| (RecordKind::Task, t.clone()))
                .collect(),
            ..Default::default()
        };
        // The first commit logs nothing: a second one, of ten entries in one part.
        store.commit(ws.id(), &Default::default()).await.unwrap();
        store.commit(ws.id(), &changes).await.unwrap();
        ws.position = 2;
        let first = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            3,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((first.changes, first.has_more), (3, true));
        // The store is down: the rest of the part comes from the cache, in order.
        store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let second = feed_page(
            &*store,
            &cache,
            &ws,
            first.next,
            &Entity::ALL,
            3,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((second.changes, second.has_more), (3, true));
        let shown = String::from_utf8(second.data.clone()).unwrap();
        for t in &tasks[3..6] {
            assert!(shown.contains(t.as_str()), "{t} not in {shown}");
        }
        // Past the part's end the store is needed again.
        assert!(feed_page(
            &*store,
            &cache,
            &ws,
            second.next,
            &Entity::ALL,
            10,
            Vec::new()
        )
        .await
        .is_err());
        store.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        let rest = feed_page(
            &*store,
            &cache,
            &ws,
            second.next,
            &Entity::ALL,
            10,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((rest.changes, rest.has_more), (4, false));
        assert_eq!(rest.next, FeedPoint::at(2));
        // The range of the second answer, read again: the same changes, no more,
        // though the state has moved on since.
        let more = crate::store::ChangeSet {
            deletes: vec![(RecordKind::Task, Uuid::new_v4().to_string())],
            ..Default::default()
        };
        store.commit(ws.id(), &more).await.unwrap();
        ws.position = 3;
        let again = feed_range(&*store, &cache, &ws, first.next, second.next, &Entity::ALL)
            .await
            .unwrap()
            .render(&ws, Vec::new())
            .unwrap();
        assert_eq!(again.data, second.data);
        assert_eq!((again.next, again.has_more), (second.next, true));
        // A range ending beyond the state is refused.
        ws.position = second.next.position - 1;
        let beyond = feed_range(&*store, &cache, &ws, first.next, second.next, &Entity::ALL).await;
        assert!(matches!(beyond, Err(FeedError::Ahead)), "{beyond:?}");
    }

    #[tokio::test]
    async fn a_large_answer_is_rendered_whole_and_in_commit_order() {
        // 301 changes: rendered in two halves (`RENDER_SPLIT_AT`), joined into one array.
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        store.commit(ws.id(), &Default::default()).await.unwrap();
        let tasks: Vec<_> = (0..301).map(|_| Uuid::new_v4().to_string()).collect();
        for chunk in tasks.chunks(7) {
            let changes = crate::store::ChangeSet {
                deletes: chunk
                    .iter()
                    .map(|t| (RecordKind::Task, t.clone()))
                    .collect(),
                ..Default::default()
            };
            store.commit(ws.id(), &changes).await.unwrap();
            ws.position += 1;
        }
        ws.position += 1;
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            500,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((page.changes, page.has_more), (301, false));
        let shown: Vec<serde_json::Value> = serde_json::from_slice(&page.data).unwrap();
        let ids: Vec<&str> = shown.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, tasks);
    }
}
