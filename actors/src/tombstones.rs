//! Tombstones: records that left what the API shows (deleted, made private, a removed
//! user, an application whose job went), by entity, with the time they left. Lists
//! with `include_deleted=true` merge them into their (`updated_at`, id) order, so a
//! watermark client learns of deletions too.
//!
//! A commit decides them from the states before and after it ([`changes_of`]): each
//! record it changed, directly or not, that was shown before and is not after gets one
//! at the commit's time; one shown again loses it. The store keeps them in the commit's
//! transaction (`ChangeSet::tombstones`) and retention prunes them with the change log,
//! in the store and then here ([`Tombstones::forget_before`]).

use crate::cow::{CowMap, SortedSet};
use crate::entries::{Change, LoggedId};
use crate::model::Entity;
use crate::time::Stamp;
use std::ops::Bound;

/// Every tombstone of a workspace, persistent like the rest of the state: a clone
/// shares them.
#[derive(Clone, Debug, Default)]
pub struct Tombstones {
    /// Per entity, in list order.
    order: Vec<SortedSet<(Stamp, LoggedId)>>,
    /// When each one's record left.
    at: CowMap<Change, Stamp>,
}

/// A tombstone set (`Some`: the record left at that time) or cleared (`None`: it is
/// shown again), as a commit writes it.
pub type TombstoneChange = (Change, Option<Stamp>);

impl Tombstones {
    /// From the store's rows.
    pub fn build(rows: Vec<(Change, Stamp)>) -> Tombstones {
        let mut t = Tombstones::default();
        for (change, at) in rows {
            t.set(change, at);
        }
        t
    }

    fn order_mut(&mut self, entity: Entity) -> &mut SortedSet<(Stamp, LoggedId)> {
        if self.order.is_empty() {
            self.order = Entity::ALL.iter().map(|_| SortedSet::default()).collect();
        }
        &mut self.order[usize::from(entity.tag())]
    }

    pub fn set(&mut self, change: Change, at: Stamp) {
        self.clear(&change);
        self.order_mut(change.entity)
            .insert((at, change.id.clone()));
        self.at.insert(change, at);
    }

    pub fn clear(&mut self, change: &Change) {
        if let Some(at) = self.at.remove(change) {
            self.order_mut(change.entity)
                .remove(&(at, change.id.clone()));
        }
    }

    pub fn apply(&mut self, changes: &[TombstoneChange]) {
        for (change, at) in changes {
            match at {
                Some(at) => self.set(change.clone(), *at),
                None => self.clear(change),
            }
        }
    }

    pub fn contains(&self, change: &Change) -> bool {
        self.at.contains_key(change)
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// An entity's tombstones in list order, from `since` (inclusive) and after the
    /// position `after`.
    pub fn from(
        &self,
        entity: Entity,
        since: Option<Stamp>,
        after: Option<(Stamp, LoggedId)>,
    ) -> Box<dyn Iterator<Item = &(Stamp, LoggedId)> + '_> {
        let Some(set) = self.order.get(usize::from(entity.tag())) else {
            return Box::new(std::iter::empty());
        };
        // The least id orders first among equal stamps (UUIDs before texts, nil first).
        let from = (
            since.unwrap_or(Stamp::MIN),
            LoggedId::Uuid(uuid::Uuid::nil()),
        );
        match after {
            Some(after) if after >= from => {
                Box::new(set.range(Bound::Excluded(&after), Bound::Unbounded))
            }
            _ => Box::new(set.range(Bound::Included(&from), Bound::Unbounded)),
        }
    }

    /// Forgets the tombstones of records that left before `before` (retention has pruned
    /// them from the store); how many.
    pub fn forget_before(&mut self, before: Stamp) -> usize {
        let first_kept = (before, LoggedId::Uuid(uuid::Uuid::nil()));
        let old: Vec<Change> = self
            .order
            .iter()
            .zip(Entity::ALL)
            .flat_map(|(set, entity)| {
                set.range(Bound::Unbounded, Bound::Excluded(&first_kept))
                    .map(move |(_, id)| Change {
                        entity,
                        id: id.clone(),
                    })
            })
            .collect();
        for change in &old {
            self.clear(change);
        }
        old.len()
    }

    /// Every tombstone (for the store and tests).
    pub fn iter(&self) -> impl Iterator<Item = (&Change, &Stamp)> + '_ {
        self.at.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn change(entity: Entity, n: u128) -> Change {
        Change {
            entity,
            id: LoggedId::Uuid(Uuid::from_u128(n)),
        }
    }

    #[test]
    fn retention_forgets_only_what_left_before_its_cutoff() {
        let at = Stamp::from_millis;
        let mut t = Tombstones::default();
        t.set(change(Entity::Notes, 1), at(10));
        t.set(change(Entity::Notes, 2), at(20));
        t.set(change(Entity::Users, 3), at(19));
        t.set(change(Entity::Tasks, 4), at(30));
        assert_eq!(t.forget_before(at(20)), 2);
        assert_eq!(t.len(), 2);
        assert!(t.contains(&change(Entity::Notes, 2)));
        assert!(t.contains(&change(Entity::Tasks, 4)));
        assert!(!t.contains(&change(Entity::Users, 3)));
        assert_eq!(t.from(Entity::Users, None, None).count(), 0);
        assert_eq!(t.forget_before(at(20)), 0);
        assert_eq!(t.forget_before(at(31)), 2);
        assert!(t.is_empty());
    }

    #[test]
    fn tombstones_are_kept_in_list_order_per_entity() {
        let at = Stamp::from_millis;
        let mut t = Tombstones::default();
        t.set(change(Entity::Notes, 2), at(20));
        t.set(change(Entity::Notes, 1), at(20));
        t.set(change(Entity::Notes, 3), at(10));
        t.set(change(Entity::Tasks, 4), at(5));
        let ids = |it: Box<dyn Iterator<Item = &(Stamp, LoggedId)> + '_>| -> Vec<String> {
            it.map(|(_, id)| id.to_string()).collect()
        };
        let u = |n: u128| Uuid::from_u128(n).to_string();
        assert_eq!(ids(t.from(Entity::Notes, None, None)), [u(3), u(1), u(2)]);
        assert_eq!(ids(t.from(Entity::Notes, Some(at(15)), None)), [u(1), u(2)]);
        let after = Some((at(20), LoggedId::Uuid(Uuid::from_u128(1))));
        assert_eq!(ids(t.from(Entity::Notes, None, after)), [u(2)]);
        // Set again: moved, not doubled; cleared: gone.
        t.set(change(Entity::Notes, 3), at(30));
        assert_eq!(ids(t.from(Entity::Notes, None, None)), [u(1), u(2), u(3)]);
        t.clear(&change(Entity::Notes, 1));
        assert_eq!(ids(t.from(Entity::Notes, None, None)), [u(2), u(3)]);
        assert_eq!(t.len(), 3);
        assert!(ids(t.from(Entity::Users, None, None)).is_empty());
    }
}
