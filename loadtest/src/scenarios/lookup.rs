//! `lookup`: who is calling? Phone searches of held numbers in the formats softphones
//! send, numbers nobody holds, too-short numbers, and e-mail searches (held addresses in
//! any letter case, and unknown ones). Every answer is compared with the answer the
//! harvested data implies.
//!
//! Queries and their expected answers are drawn before the run into a bank, so the
//! time between a request's slot and its send is not spent computing them.

use super::{judge, Backend};
use crate::cli::LookupSettings;
use crate::data::{Dataset, Lookup};
use crate::driver::Workload;
use crate::http::encode;
use crate::stats::{Recorder, Verdict};
use hyper::Method;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

/// Queries drawn before a run; operations take them in turn.
pub fn bank(ds: &Dataset, s: &LookupSettings, seed: u64, n: usize) -> Vec<Lookup> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let r: f64 = rng.gen();
            if r < s.invalid_share {
                ds.invalid_phone(&mut rng)
            } else if r < s.invalid_share + s.unknown_share || !ds.has_numbers() {
                ds.unknown_phone(&mut rng)
            } else if r < s.invalid_share + s.unknown_share + s.email_share {
                // One e-mail search in ten is for an address nobody holds.
                if ds.has_addresses() && rng.gen_bool(0.9) {
                    ds.known_email(&mut rng)
                } else {
                    ds.unknown_email(&mut rng)
                }
            } else {
                ds.known_phone(&mut rng)
            }
        })
        .collect()
}

pub const PHONE: &str = "GET /v1/search/phone";
pub const EMAIL: &str = "GET /v1/search/email";
pub const SQL_PHONE: &str = "SQL phone lookup";
pub const SQL_EMAIL: &str = "SQL e-mail lookup";

pub struct LookupLoad {
    pub backend: Backend,
    pub rec: Arc<Recorder>,
    pub bank: Arc<Vec<Lookup>>,
}

impl Workload for LookupLoad {
    async fn warm(self: Arc<Self>, share: usize) {
        if let Backend::Api(pool) = &self.backend {
            if let Err(e) = pool.warm(share).await {
                eprintln!("opening connections: {e:#}");
            }
        }
    }

    async fn op(self: Arc<Self>, seq: u64, intended: Instant) {
        let l = &self.bank[seq as usize % self.bank.len()];
        let describe = |why: String| format!("{} search {:?}: {why}", l.kind, l.query);
        match &self.backend {
            Backend::Api(pool) => {
                let (endpoint, path) = if l.kind == "phone" {
                    (
                        PHONE,
                        format!("/v1/search/phone?number={}", encode(&l.query)),
                    )
                } else {
                    (
                        EMAIL,
                        format!("/v1/search/email?address={}", encode(&l.query)),
                    )
                };
                let result = pool.send(Method::GET, &path, None).await;
                let done = Instant::now();
                let verdict = judge(result, 200, |a| l.expected.check(&a.body).map(describe));
                self.rec.record(endpoint, intended, done, verdict, 0);
            }
            Backend::Pg(pg) => {
                let endpoint = if l.kind == "phone" {
                    SQL_PHONE
                } else {
                    SQL_EMAIL
                };
                let result = pg.search(l).await;
                let done = Instant::now();
                let verdict = match result {
                    Ok(got) => match crate::baseline::check(&l.expected, &got) {
                        None => Verdict::Ok,
                        Some(why) => Verdict::Mismatch(describe(why)),
                    },
                    Err(e) => Verdict::Failed("sql", e.to_string()),
                };
                self.rec.record(endpoint, intended, done, verdict, 0);
            }
        }
    }
}
