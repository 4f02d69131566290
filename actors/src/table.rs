//! A table of records of one kind: the records by row number, an index by id, and the
//! visible ones ordered by (`updated_at`, id) for keyset pagination. All three are
//! persistent ([`crate::cow`]): a clone shares every chunk, so a workspace state that
//! holds tables is cheap to copy beside the published one, and a write copies only the
//! chunks it touches.

use crate::cow::{CowMap, CowVec, OrderIndex};
use crate::query::CursorId;
use crate::rendered::Rendered;
use crate::time::Stamp;
use std::hash::Hash;
use std::sync::Arc;
use uuid::Uuid;

/// The persistent hash map of the state's secondary indexes: entries inline in
/// copy-on-write chunks ([`crate::cow`]), with foldhash (seeded per map) instead of
/// SipHash: every rendered record costs several lookups, so the faster hasher pays.
pub type HashMap<K, V> = CowMap<K, V>;

/// A record in a table: the record itself and, when the record is visible through the
/// API, the `updated_at` it reports (its position in the sync order).
#[derive(Debug)]
pub struct Row<V: ?Sized> {
    pub rec: Arc<V>,
    /// The position, or [`HIDDEN`] (an `Option` would take a second word per row).
    at: Stamp,
}

/// The position of a row hidden from the API: no record is stamped this early.
const HIDDEN: Stamp = Stamp::MIN;

impl<V: ?Sized> Row<V> {
    fn new(rec: Arc<V>, order: Option<Stamp>) -> Self {
        debug_assert!(order != Some(HIDDEN));
        Row {
            rec,
            at: order.unwrap_or(HIDDEN),
        }
    }

    /// The `updated_at` the record reports, its position in the sync order; `None` for
    /// a record hidden from the API.
    pub fn order(&self) -> Option<Stamp> {
        (self.at != HIDDEN).then_some(self.at)
    }
}

// Not derived: a derive would demand `V: Clone`, but only the `Arc` is cloned.
impl<V: ?Sized> Clone for Row<V> {
    fn clone(&self) -> Self {
        Row {
            rec: self.rec.clone(),
            at: self.at,
        }
    }
}

/// One row number's content: the record's key and row, or nothing once it is removed
/// (row numbers are not reused, so an order entry never names another record).
struct Slot<K, V: ?Sized> {
    key: K,
    row: Row<V>,
}

impl<K: Clone, V: ?Sized> Clone for Slot<K, V> {
    fn clone(&self) -> Self {
        Slot {
            key: self.key.clone(),
            row: self.row.clone(),
        }
    }
}

/// Records of one kind by id, plus the visible ones ordered by (`updated_at`, id).
///
/// Rows live in a [`CowVec`] by row number; the map by id and the order hold row numbers,
/// so a page is read in order with one step from order entry to row, and each record
/// is held once.
///
/// A table may keep a second order over a subset of its rows ([`Self::with_subset`]:
/// the applications among the candidate rows), read through [`Self::subset`]: the
/// subset's records cost their order entry, not a row and id entry of their own.
pub struct Table<K, V: ?Sized> {
    slots: CowVec<Option<Slot<K, V>>>,
    ids: CowMap<K, u32>,
    order: OrderIndex<K>,
    /// Visible records (the order's length, also while the order is deferred).
    visible: usize,
    /// The order is not kept while a bulk load fills the table; see [`Self::defer_order`].
    order_deferred: bool,
    /// The second order, when the table keeps one.
    subset: Option<Box<Subset<K, V>>>,
}

/// A second order over the rows that `member` accepts.
struct Subset<K, V: ?Sized> {
    member: fn(&V) -> bool,
    order: OrderIndex<K>,
    visible: usize,
    /// Rows accepted, hidden ones included.
    len: usize,
}

impl<K: Clone, V: ?Sized> Clone for Subset<K, V> {
    fn clone(&self) -> Self {
        Subset {
            member: self.member,
            order: self.order.clone(),
            visible: self.visible,
            len: self.len,
        }
    }
}

impl<K: std::fmt::Debug + Ord + Clone + 'static, V: std::fmt::Debug + ?Sized> std::fmt::Debug
    for Table<K, V>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("len", &self.ids.len())
            .field("visible", &self.visible)
            .finish_non_exhaustive()
    }
}

impl<K: Clone, V: ?Sized> Clone for Table<K, V> {
    fn clone(&self) -> Self {
        Table {
            slots: self.slots.clone(),
            ids: self.ids.clone(),
            order: self.order.clone(),
            visible: self.visible,
            order_deferred: self.order_deferred,
            subset: self.subset.clone(),
        }
    }
}

impl<K: Hash + Eq + Ord + Clone + 'static, V: ?Sized> Default for Table<K, V> {
    fn default() -> Self {
        Table {
            slots: CowVec::default(),
            ids: CowMap::default(),
            order: OrderIndex::default(),
            visible: 0,
            order_deferred: false,
            subset: None,
        }
    }
}

impl<K: Hash + Eq + Ord + Clone + 'static, V: ?Sized> Table<K, V> {
    /// An empty table that also keeps the order of the rows `member` accepts.
    pub fn with_subset(member: fn(&V) -> bool) -> Self {
        Table {
            subset: Some(Box::new(Subset {
                member,
                order: OrderIndex::default(),
                visible: 0,
                len: 0,
            })),
            ..Table::default()
        }
    }

    /// The whole table, to read.
    pub fn all(&self) -> TableRef<'_, K, V> {
        TableRef {
            table: self,
            subset: false,
        }
    }

    /// The subset the table keeps ([`Self::with_subset`]), to read. Panics for a table
    /// that keeps none.
    pub fn subset(&self) -> TableRef<'_, K, V> {
        assert!(self.subset.is_some(), "a table with a subset");
        TableRef {
            table: self,
            subset: true,
        }
    }

    fn slot(&self, row: u32) -> &Slot<K, V> {
        self.slots
            .get(row as usize)
            .and_then(Option::as_ref)
            .expect("an indexed row is present")
    }

    fn row_of<Q>(&self, id: &Q) -> Option<&Row<V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.get(id).map(|r| &self.slot(*r).row)
    }

    /// The row number of a record (stable while the record is in the table: a
    /// replacement keeps it, and a removed record's number is never given to another).
    pub fn row_number<Q>(&self, id: &Q) -> Option<u32>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.get(id).copied()
    }

    /// The record at a row number, with its key, if it is still there.
    pub fn at_row(&self, row: u32) -> Option<(&K, &Arc<V>)> {
        let slot = self.slots.get(row as usize)?.as_ref()?;
        Some((&slot.key, &slot.row.rec))
    }

    /// [`Self::at_row`], if the record is visible through the API.
    pub fn visible_at_row(&self, row: u32) -> Option<(&K, &Arc<V>)> {
        let slot = self.slots.get(row as usize)?.as_ref()?;
        slot.row.order()?;
        Some((&slot.key, &slot.row.rec))
    }

    /// Every row with its number and key, hidden ones included, by row number.
    pub fn rows(&self) -> impl Iterator<Item = (u32, &K, &Row<V>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(at, s)| s.as_ref().map(|s| (at as u32, &s.key, &s.row)))
    }

    pub fn get(&self, id: &K) -> Option<&Arc<V>> {
        self.row_of(id).map(|r| &r.rec)
    }

    /// The record if it is visible through the API.
    pub fn get_visible(&self, id: &K) -> Option<&Arc<V>> {
        self.all().get_visible(id)
    }

    pub fn contains<Q>(&self, id: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.contains_key(id)
    }

    /// Makes room in the id map for `additional` more records (a bulk fill whose size
    /// is known).
    pub fn reserve(&mut self, additional: usize) {
        self.ids.reserve(additional);
    }

    /// Stops keeping the order (and the subset's) while a bulk load fills the table:
    /// the load puts every row once and [`Self::build_order`] sorts them all at the end.
    pub fn defer_order(&mut self) {
        self.order_deferred = true;
    }

    /// Builds the order (and the subset's) from the rows, ending [`Self::defer_order`].
    pub fn build_order(&mut self) {
        let entries: Vec<(Stamp, K, u32)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(at, s)| {
                let s = s.as_ref()?;
                Some((s.row.order()?, s.key.clone(), at as u32))
            })
            .collect();
        if let Some(sub) = &mut self.subset {
            let member = sub.member;
            let of_subset = entries
                .iter()
                .filter(|(_, _, at)| {
                    member(
                        &self
                            .slots
                            .get(*at as usize)
                            .expect("a row")
                            .as_ref()
                            .expect("a row")
                            .row
                            .rec,
                    )
                })
                .cloned()
                .collect();
            sub.order = OrderIndex::build(of_subset);
        }
        self.order = OrderIndex::build(entries);
        self.order_deferred = false;
    }

    /// Takes a row out of the orders it is in (its record `rec`, its position `at`).
    fn unorder(&mut self, at: Option<Stamp>, id: &K, rec: &V) {
        if let Some(sub) = &mut self.subset {
            if (sub.member)(rec) {
                sub.len -= 1;
                if let Some(o) = at {
                    sub.visible -= 1;
                    if !self.order_deferred {
                        sub.order.remove(o, id);
                    }
                }
            }
        }
        if let Some(o) = at {
            self.visible -= 1;
            if !self.order_deferred {
                self.order.remove(o, id);
            }
        }
    }

    /// Puts a row into the orders it belongs in.
    fn enorder(&mut self, at: Option<Stamp>, id: &K, row: u32, rec: &V) {
        if let Some(sub) = &mut self.subset {
            if (sub.member)(rec) {
                sub.len += 1;
                if let Some(o) = at {
                    sub.visible += 1;
                    if !self.order_deferred {
                        sub.order.insert(o, id.clone(), row);
                    }
                }
            }
        }
        if let Some(o) = at {
            self.visible += 1;
            if !self.order_deferred {
                self.order.insert(o, id.clone(), row);
            }
        }
    }

    /// Inserts or replaces; `order` is `None` for a record hidden from the API.
    pub fn put(&mut self, id: K, rec: Arc<V>, order: Option<Stamp>) {
        let row = match self.ids.get(&id) {
            Some(&row) => {
                let old = self.slot(row).row.clone();
                self.unorder(old.order(), &id, &old.rec);
                let slot = self.slots.get_mut(row as usize).expect("indexed");
                *slot = Some(Slot {
                    key: id.clone(),
                    row: Row::new(rec.clone(), order),
                });
                row
            }
            None => {
                let row = u32::try_from(self.slots.len()).expect("fewer than 2^32 rows");
                self.slots.push(Some(Slot {
                    key: id.clone(),
                    row: Row::new(rec.clone(), order),
                }));
                self.ids.insert(id.clone(), row);
                row
            }
        };
        self.enorder(order, &id, row, &rec);
    }

    /// Replaces a record in place, keeping its position.
    pub fn replace(&mut self, id: &K, rec: Arc<V>) {
        if let Some(row) = self.row_of(id) {
            let order = row.order();
            self.put(id.clone(), rec, order);
        }
    }

    /// Moves a record to a new position (or hides it) without replacing it. The row's
    /// rendering starts afresh: what moved it (a cv's candidate row) is what it shows.
    pub fn reorder(&mut self, id: &K, order: Option<Stamp>) {
        if let Some(rec) = self.get(id).cloned() {
            self.put(id.clone(), rec, order);
        }
    }

    pub fn remove(&mut self, id: &K) -> Option<Arc<V>> {
        let row = self.ids.remove(id)?;
        let slot = self
            .slots
            .get_mut(row as usize)
            .and_then(Option::take)
            .expect("indexed");
        self.unorder(slot.row.order(), id, &slot.row.rec);
        Some(slot.row.rec)
    }

    /// Number of visible records.
    pub fn visible_len(&self) -> usize {
        self.visible
    }

    /// Number of records, hidden ones included.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Visible records oldest first, from `since` (inclusive) and strictly after the
    /// position `after` (a cursor), as borrowed entries of this state.
    pub fn iter_from(
        &self,
        since: Option<Stamp>,
        after: Option<(Stamp, K)>,
    ) -> impl Iterator<Item = (Stamp, &K, &Arc<V>)> + '_
    where
        K: MinKey,
    {
        self.all().iter_from(since, after)
    }

    /// [`Self::iter_from`], with each record's whole row.
    pub fn rows_from(
        &self,
        since: Option<Stamp>,
        after: Option<(Stamp, K)>,
    ) -> impl Iterator<Item = (Stamp, &K, &Row<V>)> + '_
    where
        K: MinKey,
    {
        self.all().rows_from(since, after)
    }

    /// The row of a visible record.
    pub fn visible_row<Q>(&self, id: &Q) -> Option<&Row<V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.all().visible_row(id)
    }

    /// Number of visible records with stamp >= `since` (all visible records without it).
    pub fn count_since(&self, since: Option<Stamp>) -> usize
    where
        K: MinKey,
    {
        self.all().count_since(since)
    }

    /// Every record: the visible ones in the sync order, then the hidden ones.
    pub fn in_sync_order(&self) -> impl Iterator<Item = (&K, &Arc<V>)>
    where
        K: MinKey,
    {
        self.iter_from(None, None).map(|(_, k, r)| (k, r)).chain(
            self.rows()
                .filter(|(_, _, r)| r.order().is_none())
                .map(|(_, k, r)| (k, &r.rec)),
        )
    }

    /// Every record, hidden ones included, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &Arc<V>)> {
        self.slots.iter().flatten().map(|s| (&s.key, &s.row.rec))
    }
}

/// A table to read, whole or its subset ([`Table::all`], [`Table::subset`]): what the
/// API's lists, lookups and counts see of one entity.
pub struct TableRef<'t, K, V: ?Sized> {
    table: &'t Table<K, V>,
    subset: bool,
}

impl<K, V: ?Sized> Clone for TableRef<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V: ?Sized> Copy for TableRef<'_, K, V> {}

impl<'t, K: Hash + Eq + Ord + Clone + 'static, V: ?Sized> TableRef<'t, K, V> {
    fn sub(&self) -> Option<&'t Subset<K, V>> {
        self.subset
            .then(|| self.table.subset.as_deref().expect("a table with a subset"))
    }

    /// Whether a record is in this view.
    fn holds(&self, rec: &V) -> bool {
        self.sub().is_none_or(|s| (s.member)(rec))
    }

    fn order(&self) -> &'t OrderIndex<K> {
        debug_assert!(!self.table.order_deferred, "the order is built");
        match self.sub() {
            Some(s) => &s.order,
            None => &self.table.order,
        }
    }

    /// The row of a visible record.
    pub fn visible_row<Q>(&self, id: &Q) -> Option<&'t Row<V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.table
            .row_of(id)
            .filter(|r| r.order().is_some() && self.holds(&r.rec))
    }

    /// The record if it is visible through the API.
    pub fn get_visible(&self, id: &K) -> Option<&'t Arc<V>> {
        self.visible_row(id).map(|r| &r.rec)
    }

    /// Number of visible records.
    pub fn visible_len(&self) -> usize {
        self.sub().map_or(self.table.visible, |s| s.visible)
    }

    /// Number of records, hidden ones included.
    pub fn len(&self) -> usize {
        self.sub().map_or(self.table.ids.len(), |s| s.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`Table::rows_from`] of this view.
    pub fn rows_from(
        self,
        since: Option<Stamp>,
        after: Option<(Stamp, K)>,
    ) -> impl Iterator<Item = (Stamp, &'t K, &'t Row<V>)> + 't
    where
        K: MinKey,
    {
        use std::ops::Bound;
        let since_bound = since.map(|s| (s, K::min_key()));
        let lower = match (since_bound, after) {
            (Some(s), Some(a)) if s > a => Bound::Included(s),
            (_, Some(a)) => Bound::Excluded(a),
            (Some(s), None) => Bound::Included(s),
            (None, None) => Bound::Unbounded,
        };
        let table = self.table;
        self.order()
            .range(lower)
            .map(move |(st, k, row)| (st, k, &table.slot(row).row))
    }

    /// [`Table::iter_from`] of this view.
    pub fn iter_from(
        self,
        since: Option<Stamp>,
        after: Option<(Stamp, K)>,
    ) -> impl Iterator<Item = (Stamp, &'t K, &'t Arc<V>)> + 't
    where
        K: MinKey,
    {
        self.rows_from(since, after)
            .map(|(st, k, r)| (st, k, &r.rec))
    }

    /// [`Table::count_since`] of this view.
    pub fn count_since(&self, since: Option<Stamp>) -> usize
    where
        K: MinKey,
    {
        match since {
            None => self.visible_len(),
            Some(s) => self
                .order()
                .count_from(std::ops::Bound::Included((s, K::min_key()))),
        }
    }

    /// Every record of this view, hidden ones included, in no particular order.
    pub fn iter(self) -> impl Iterator<Item = (&'t K, &'t Arc<V>)> + 't {
        self.table.iter().filter(move |(_, r)| self.holds(r))
    }
}

/// A table's key as the API and its cursors know it.
pub trait TableKey: Hash + Eq + Ord + Clone + MinKey + 'static {
    /// The key as a cursor carries it.
    fn to_cursor_id(&self) -> CursorId;
    /// The key a cursor carries, if it is one of this table's kind.
    fn from_cursor_id(id: CursorId) -> Option<Self>;
    /// The visible row an id of the API names (a path segment as written).
    fn find<'t, V: ?Sized>(table: TableRef<'t, Self, V>, raw: &str) -> Option<&'t Row<V>>;
    /// The visible row of a UUID id (as the change log holds one), without writing it
    /// out and parsing it back where the table is keyed by UUIDs.
    fn find_uuid<'t, V: ?Sized>(table: TableRef<'t, Self, V>, id: Uuid) -> Option<&'t Row<V>> {
        Self::find(table, &id.to_string())
    }
}

impl TableKey for Uuid {
    fn to_cursor_id(&self) -> CursorId {
        CursorId::Uuid(*self)
    }

    fn from_cursor_id(id: CursorId) -> Option<Self> {
        match id {
            CursorId::Uuid(u) => Some(u),
            CursorId::Text(_) => None,
        }
    }

    /// Only the canonical form (hyphenated, 36 characters): anything else is "an id in
    /// an unexpected format", which names no record.
    fn find<'t, V: ?Sized>(table: TableRef<'t, Self, V>, raw: &str) -> Option<&'t Row<V>> {
        if raw.len() != 36 {
            return None;
        }
        table.visible_row(&Uuid::try_parse(raw).ok()?)
    }

    fn find_uuid<'t, V: ?Sized>(table: TableRef<'t, Self, V>, id: Uuid) -> Option<&'t Row<V>> {
        table.visible_row(&id)
    }
}

impl TableKey for Arc<str> {
    fn to_cursor_id(&self) -> CursorId {
        CursorId::Text(self.to_string())
    }

    fn from_cursor_id(id: CursorId) -> Option<Self> {
        match id {
            CursorId::Text(t) => Some(Arc::from(t)),
            CursorId::Uuid(_) => None,
        }
    }

    /// Attachment ids, with their prefix or without it ("accepted with or without its
    /// prefix"): without one, each of the four prefixes is tried.
    fn find<'t, V: ?Sized>(table: TableRef<'t, Self, V>, raw: &str) -> Option<&'t Row<V>> {
        if raw.contains(':') {
            crate::model::split_attachment_id(raw)?;
            return table.visible_row(raw);
        }
        crate::model::ATTACHMENT_PREFIXES
            .iter()
            .find_map(|p| table.visible_row(format!("{p}:{raw}").as_str()))
    }
}

/// The smallest value of a key type, so that `(stamp, min_key)` bounds a range by stamp.
pub trait MinKey {
    fn min_key() -> Self;
}

impl MinKey for Uuid {
    fn min_key() -> Self {
        Uuid::nil()
    }
}

impl MinKey for Arc<str> {
    fn min_key() -> Self {
        Arc::from("")
    }
}

/// How far ahead of the record being written [`write_rows`] asks for the next ones:
/// first the row's record (`FAR`), then what the view reads through it (`NEAR`).
const PREFETCH_FAR: usize = 8;
const PREFETCH_NEAR: usize = 4;

/// Appends `rows` as JSON through `view`, comma-separated, each record's memory asked
/// for a few records ahead so that the misses of a page overlap instead of queueing.
pub fn write_rows<'r, V: ?Sized, T: Rendered>(
    rows: &[&'r Row<V>],
    view: impl Fn(&'r V) -> T,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    for (i, row) in rows.iter().enumerate() {
        if let Some(ahead) = rows.get(i + PREFETCH_FAR) {
            crate::rendered::prefetch(Arc::as_ptr(&ahead.rec));
        }
        if let Some(ahead) = rows.get(i + PREFETCH_NEAR) {
            view(&ahead.rec).prefetch();
        }
        if i > 0 {
            out.push(b',');
        }
        row.write_json(&view, out)?;
    }
    Ok(())
}

impl<V: ?Sized> Row<V> {
    /// Appends the record as JSON, seen through `view`.
    pub fn write_json<'r, T: Rendered>(
        &'r self,
        view: impl FnOnce(&'r V) -> T,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        view(&self.rec).write_json(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Stamp {
        Stamp::from_millis(ms)
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn ids<V>(t: &Table<Uuid, V>, since: Option<Stamp>, after: Option<(Stamp, Uuid)>) -> Vec<u128> {
        t.iter_from(since, after)
            .map(|(_, k, _)| k.as_u128())
            .collect()
    }

    #[test]
    fn visible_rows_are_ordered_by_stamp_then_id() {
        let mut t: Table<Uuid, &str> = Table::default();
        t.put(id(3), Arc::new("c"), Some(at(10)));
        t.put(id(1), Arc::new("a"), Some(at(20)));
        t.put(id(2), Arc::new("b"), Some(at(10)));
        t.put(id(9), Arc::new("hidden"), None);
        assert_eq!(ids(&t, None, None), [2, 3, 1]);
        assert_eq!((t.len(), t.visible_len()), (4, 3));
        assert!(t.get(&id(9)).is_some() && t.get_visible(&id(9)).is_none());
        // `since` is inclusive; `after` (a cursor) is exclusive and wins when later.
        assert_eq!(ids(&t, Some(at(10)), None), [2, 3, 1]);
        assert_eq!(ids(&t, Some(at(11)), None), [1]);
        assert_eq!(ids(&t, None, Some((at(10), id(2)))), [3, 1]);
        assert_eq!(ids(&t, Some(at(20)), Some((at(10), id(2)))), [1]);
        assert_eq!(t.count_since(Some(at(10))), 3);
        assert_eq!(t.count_since(Some(at(11))), 1);
    }

    #[test]
    fn a_put_moves_a_row_and_a_removal_forgets_it() {
        let mut t: Table<Uuid, &str> = Table::default();
        t.put(id(1), Arc::new("a"), Some(at(10)));
        t.put(id(2), Arc::new("b"), Some(at(20)));
        // A newer version moves to its new place; hiding takes it out of the order only.
        t.put(id(1), Arc::new("a2"), Some(at(30)));
        assert_eq!(ids(&t, None, None), [2, 1]);
        assert_eq!(**t.get(&id(1)).unwrap(), "a2");
        t.reorder(&id(2), None);
        assert_eq!(ids(&t, None, None), [1]);
        assert!(t.contains(&id(2)));
        assert_eq!(t.remove(&id(1)).map(|r| *r), Some("a2"));
        assert_eq!(ids(&t, None, None), Vec::<u128>::new());
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_clone_is_a_snapshot() {
        let mut t: Table<Uuid, &str> = Table::default();
        t.put(id(1), Arc::new("a"), Some(at(10)));
        let before = t.clone();
        t.put(id(2), Arc::new("b"), Some(at(20)));
        t.remove(&id(1));
        assert_eq!(ids(&before, None, None), [1]);
        assert_eq!(ids(&t, None, None), [2]);
    }
}
