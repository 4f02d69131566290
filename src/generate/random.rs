//! Randomness, ids and time: ChaCha8 streams keyed by (seed, purpose, index), UUIDs
//! drawn from them, and the timestamps of the data's world.

use super::*;

/// Independent stream families; a person's data in one family never depends on draws
/// made in another, which keeps re-derivation exact.
#[derive(Clone, Copy)]
#[repr(u64)]
pub(super) enum Family {
    World = 1,
    Person = 2,
    Phone = 3,
    Notes = 4,
    Tasks = 5,
    Attachments = 6,
    OrgNotes = 7,
    OrgTasks = 8,
    OrgAttachments = 9,
}

pub(super) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn stream(seed: u64, family: Family, index: u64) -> ChaCha8Rng {
    let mut state = seed ^ (family as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix(&mut state).to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(index);
    rng
}

/// A version-4 UUID from the stream (never from the OS).
pub(super) fn uuid(rng: &mut ChaCha8Rng) -> Uuid {
    uuid::Builder::from_random_bytes(rng.gen()).into_uuid()
}

pub(super) const DAY: i64 = 86_400_000;
/// 2025-06-01T00:00:00Z: the oldest record.
pub(super) const START: i64 = 1_748_736_000_000;
/// 2026-11-01T00:00:00Z: "now" for the generated workspace.
pub(super) const END: i64 = 1_793_491_200_000;
/// Edits before this are not tracked by the product (`updated_at` stays `created_at`).
pub(super) const TRACK: i64 = CHANGE_TRACKING_START.millis();

pub(super) fn between(rng: &mut ChaCha8Rng, lo: i64, hi: i64) -> i64 {
    if hi <= lo {
        lo
    } else {
        rng.gen_range(lo..hi)
    }
}

/// `updated_at` for a record created at `created`: unchanged with probability `same`,
/// else one later edit. Edits land after the change-tracking start, because the product
/// reports older edits as `updated_at == created_at` anyway.
pub(super) fn updated(rng: &mut ChaCha8Rng, created: i64, same: f64) -> i64 {
    if rng.gen_bool(same) {
        return created;
    }
    let lo = (created + 1).max(TRACK);
    if lo >= END {
        created
    } else {
        rng.gen_range(lo..END)
    }
}

/// `updated_at` after an event (a completion, a rejection) at `at`.
pub(super) fn touched(created: i64, at: i64) -> i64 {
    if at < TRACK {
        created
    } else {
        at.max(created)
    }
}

pub(super) fn stamp(ms: i64) -> Stamp {
    Stamp::from_millis(ms)
}

pub(super) fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())]
}

/// Index into `weights` drawn with those relative weights.
pub(super) fn weighted(rng: &mut ChaCha8Rng, weights: &[u32]) -> usize {
    let total: u32 = weights.iter().sum();
    let mut x = rng.gen_range(0..total);
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}
