//! `mixed`: a day at the agency. Softphone lookups, integration writes and incremental
//! syncs arrive at their own open-loop rates at the same time, and a sync client
//! re-reads everything every `full_sync_every` seconds. Each part is checked as in its
//! own scenario; full syncs expect at least the announced `total_count` (writers add
//! notes and tasks while they run).

use super::sync::{Expect, Round, Syncer};
use crate::data::ENTITIES;
use crate::driver::Workload;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Incremental syncs, one entity per operation, in turn, from each entity's watermark.
pub struct IncrementalLoad {
    pub syncer: Arc<Syncer>,
    pub watermarks: Mutex<HashMap<&'static str, String>>,
}

/// Watermarks from a full sync of every entity, as a sync client's first run leaves
/// them (run before the measured run, with a recorder of its own).
pub async fn initial_watermarks(syncer: &Syncer) -> HashMap<&'static str, String> {
    let mut watermarks = HashMap::new();
    let now = Instant::now();
    for e in ENTITIES {
        let r = syncer.entity(e, None, Expect::AtLeastTotal, now, now).await;
        if let Some(w) = r.watermark {
            watermarks.insert(e, w);
        }
    }
    watermarks
}

impl Workload for IncrementalLoad {
    async fn warm(self: Arc<Self>, share: usize) {
        if let super::Backend::Api(pool) = &self.syncer.backend {
            if let Err(e) = pool.warm(share).await {
                eprintln!("opening connections: {e:#}");
            }
        }
    }

    async fn op(self: Arc<Self>, seq: u64, intended: Instant) {
        let entity = ENTITIES[seq as usize % ENTITIES.len()];
        let since = self.watermarks.lock().expect("lock").get(entity).cloned();
        let expect = Expect::AtLeast(u64::from(since.is_some()));
        let r = self
            .syncer
            .entity(entity, since.as_deref(), expect, intended, intended)
            .await;
        if let Some(w) = r.watermark {
            let mut g = self.watermarks.lock().expect("lock");
            let slot = g.entry(entity).or_default();
            if w > *slot {
                *slot = w;
            }
        }
    }
}

/// Full syncs of every entity, one after another, every `every` from the start of the
/// window until its end.
pub async fn periodic_full(syncer: Arc<Syncer>, every: Duration) -> Vec<Round> {
    let rec = syncer.rec.clone();
    let mut rounds = Vec::new();
    if every.is_zero() {
        return rounds;
    }
    let mut next = rec.measure_from;
    while next < rec.measure_to {
        tokio::time::sleep_until(next.into()).await;
        let t0 = Instant::now();
        let mut round = Round {
            kind: "full".into(),
            at: (t0 - rec.measure_from).as_secs_f64(),
            secs: 0.0,
            records: 0,
            measured: rec.measures(t0),
            failed: false,
        };
        for e in ENTITIES {
            let r = syncer
                .entity(e, None, Expect::AtLeastTotal, t0, Instant::now())
                .await;
            round.records += r.records;
            round.failed |= r.failed;
        }
        round.secs = t0.elapsed().as_secs_f64();
        rounds.push(round);
        next += every;
    }
    rounds
}
