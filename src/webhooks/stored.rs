//! An endpoint as the store keeps it: one JSON row (`Store::write_webhooks`), its
//! secrets sealed under the node's data key ([`super::sealing`]), and its attempts.
//!
//! The row holds what the API shows and what a new writer resumes from: the
//! acknowledged point, the status, and the delivery in flight (its `webhook-id`, the
//! points it runs between, its failures), written before its first attempt. A restart
//! or a new writer sends that delivery again as a retry of it: the same id over the same
//! changes, which a receiver deduplicating on `webhook-id` drops, and the 72 hours of
//! failures counted from its first failure, not from the restart.

use super::deliverer::{Deliverer, InFlight, Reason, Status};
use super::engine::Attempt;
use super::sealing::DataKey;
use super::secret::Secret;
use actors::changes::tokens::FeedPoint;
use actors::model::Entity;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// How long a rotated-out secret keeps signing beside the new one.
pub const OLD_SECRET_SIGNS_FOR_MS: i64 = 24 * 3600 * 1000;

/// How many attempts of an endpoint are kept.
pub const ATTEMPTS_KEPT: u32 = 100;

/// A feed point as the row writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub position: u64,
    pub part: u32,
    pub index: u32,
}

impl From<FeedPoint> for Point {
    fn from(p: FeedPoint) -> Self {
        Point {
            position: p.position,
            part: p.part,
            index: p.index,
        }
    }
}

impl From<Point> for FeedPoint {
    fn from(p: Point) -> Self {
        FeedPoint {
            position: p.position,
            part: p.part,
            index: p.index,
        }
    }
}

/// A secret, sealed, and until when it signs (`None`: the current one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    pub sealed: String,
    pub signs_until_ms: Option<i64>,
}

/// An attempt as the deliveries log keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAttempt {
    pub id: String,
    pub since: Point,
    pub next: Point,
    pub attempt: u32,
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
    pub at_ms: i64,
}

impl From<&Attempt> for StoredAttempt {
    fn from(a: &Attempt) -> Self {
        StoredAttempt {
            id: a.delivery_id.clone(),
            since: a.since.into(),
            next: a.next.into(),
            attempt: a.number,
            status: a.sent.status,
            error: a.sent.error.clone(),
            duration_ms: a.sent.took.as_millis() as u64,
            at_ms: a.at_ms,
        }
    }
}

/// An endpoint's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEndpoint {
    pub id: String,
    pub url: String,
    /// The entities it receives, by name; empty: all nine.
    #[serde(default)]
    pub entities: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The fingerprint of the data key its secrets are sealed under.
    pub key: String,
    /// The current secret first, then any rotated out that still sign.
    pub secrets: Vec<SealedSecret>,
    pub status: String,
    #[serde(default)]
    pub disabled_reason: Option<String>,
    pub acknowledged: Point,
    #[serde(default)]
    pub last_attempt: Option<StoredAttempt>,
    /// The delivery in flight, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<StoredFlight>,
}

/// A delivery in flight, as the row keeps it (see the module's docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredFlight {
    pub id: String,
    pub since: Point,
    pub next: Point,
    pub failures: u32,
    #[serde(default)]
    pub failing_since_ms: Option<i64>,
}

impl StoredEndpoint {
    /// Reads a row's body.
    pub fn parse(body: &str) -> Result<Self, String> {
        serde_json::from_str(body).map_err(|e| format!("a webhook endpoint's row: {e}"))
    }

    /// The row's body.
    pub fn to_body(&self) -> String {
        serde_json::to_string(self).expect("an endpoint's row serialises")
    }

    /// The entities it receives (all nine when it names none).
    pub fn entity_filter(&self) -> Vec<Entity> {
        if self.entities.is_empty() {
            return Entity::ALL.to_vec();
        }
        self.entities
            .iter()
            .filter_map(|e| Entity::parse(e))
            .collect()
    }

    /// The secrets that sign at `now_ms`, opened with `key`; `None` when `key` is not
    /// the one they were sealed under or one does not open.
    pub fn signing_secrets(&self, key: &DataKey, now_ms: i64) -> Option<Vec<Secret>> {
        if self.key != key.fingerprint() {
            return None;
        }
        self.secrets
            .iter()
            .filter(|s| s.signs_until_ms.is_none_or(|until| until > now_ms))
            .map(|s| key.open(&STANDARD.decode(&s.sealed).ok()?, &self.id))
            .collect()
    }

    /// Seals `secret` as the current one; the one it replaces (if any) signs on until
    /// `old_until_ms`, and secrets already past are dropped.
    pub fn set_secret(&mut self, key: &DataKey, secret: &Secret, now_ms: i64, old_until_ms: i64) {
        self.secrets
            .retain(|s| s.signs_until_ms.is_none_or(|until| until > now_ms));
        for s in &mut self.secrets {
            if s.signs_until_ms.is_none() {
                s.signs_until_ms = Some(old_until_ms);
            }
        }
        self.secrets.insert(
            0,
            SealedSecret {
                sealed: STANDARD.encode(key.seal(secret, &self.id)),
                signs_until_ms: None,
            },
        );
        self.key = key.fingerprint().to_string();
    }

    /// Seals the secrets again under `to`: those `from` opens (the key they were
    /// sealed under, when known) and that still sign at `now_ms`. A secret no known key
    /// opens is dropped: a rotation then leaves only the new one.
    pub fn reseal(&mut self, from: Option<&DataKey>, to: &DataKey, now_ms: i64) {
        let opened: Vec<(Secret, Option<i64>)> = match from.filter(|k| k.fingerprint() == self.key)
        {
            Some(from) => self
                .secrets
                .iter()
                .filter(|s| s.signs_until_ms.is_none_or(|until| until > now_ms))
                .filter_map(|s| {
                    let sealed = STANDARD.decode(&s.sealed).ok()?;
                    Some((from.open(&sealed, &self.id)?, s.signs_until_ms))
                })
                .collect(),
            None => Vec::new(),
        };
        self.secrets = opened
            .into_iter()
            .map(|(secret, signs_until_ms)| SealedSecret {
                sealed: STANDARD.encode(to.seal(&secret, &self.id)),
                signs_until_ms,
            })
            .collect();
        self.key = to.fingerprint().to_string();
    }

    /// The delivery state a task starts from.
    pub fn deliverer(&self) -> Deliverer {
        let mut d = Deliverer::new(self.acknowledged.into());
        match self.status.as_str() {
            "disabled" => d.disable(reason_of(self.disabled_reason.as_deref())),
            "failing" => d.status = Status::Failing,
            _ => {}
        }
        if d.status != Status::Disabled {
            // Attempted again at once: its body is rendered again from its points.
            d.in_flight = self.in_flight.as_ref().map(|f| InFlight {
                id: f.id.clone(),
                since: f.since.into(),
                next: f.next.into(),
                failures: f.failures,
                failing_since_ms: f.failing_since_ms,
                not_before_ms: i64::MIN,
            });
        }
        d
    }

    /// Takes the delivery state a task reached.
    pub fn follow(&mut self, d: &Deliverer) {
        self.acknowledged = d.acknowledged.into();
        self.status = d.status.as_str().to_string();
        self.disabled_reason = d.reason.map(|r| r.as_str().to_string());
        self.in_flight = d.in_flight.as_ref().map(|f| StoredFlight {
            id: f.id.clone(),
            since: f.since.into(),
            next: f.next.into(),
            failures: f.failures,
            failing_since_ms: f.failing_since_ms,
        });
    }
}

/// An active endpoint of every entity at `acknowledged`, made at the epoch, with no
/// secret yet: what tests start from.
#[cfg(test)]
impl StoredEndpoint {
    pub(crate) fn example(id: &str, acknowledged: FeedPoint) -> StoredEndpoint {
        StoredEndpoint {
            id: id.into(),
            url: "https://example.com/hook".into(),
            entities: vec![],
            description: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            key: String::new(),
            secrets: vec![],
            status: "active".into(),
            disabled_reason: None,
            acknowledged: acknowledged.into(),
            last_attempt: None,
            in_flight: None,
        }
    }
}

fn reason_of(text: Option<&str>) -> Reason {
    match text {
        Some("gone") => Reason::Gone,
        Some("failing_for_72_hours") => Reason::Failing,
        Some("resync_required") => Reason::ResyncRequired,
        _ => Reason::Requested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(key: &DataKey) -> StoredEndpoint {
        let mut e = StoredEndpoint::example("whe_1", FeedPoint::at(3));
        e.set_secret(key, &Secret::generate(), 0, 0);
        e
    }

    #[test]
    fn a_row_keeps_no_secret_in_plain_and_opens_only_under_its_key() {
        let (key, _) = DataKey::generate();
        let mut e = endpoint(&key);
        let first = e.signing_secrets(&key, 1).unwrap();
        assert_eq!(first.len(), 1);
        let body = e.to_body();
        assert!(
            !body.contains(&first[0].reveal()["whsec_".len()..]),
            "{body}"
        );
        let (other, _) = DataKey::generate();
        assert_eq!(e.signing_secrets(&other, 1), None);
        assert_eq!(StoredEndpoint::parse(&body).unwrap(), e);

        // A rotation: both sign until the old one's time is up.
        let second = Secret::generate();
        e.set_secret(&key, &second, 10, 10 + OLD_SECRET_SIGNS_FOR_MS);
        let both = e.signing_secrets(&key, 11).unwrap();
        assert_eq!(both, vec![second.clone(), first[0].clone()]);
        let later = e
            .signing_secrets(&key, 10 + OLD_SECRET_SIGNS_FOR_MS)
            .unwrap();
        assert_eq!(later, vec![second]);
    }

    #[test]
    fn resealed_secrets_open_under_the_new_key_and_unknown_ones_are_dropped() {
        let (a, _) = DataKey::generate();
        let (b, _) = DataKey::generate();
        let mut e = endpoint(&a);
        let secret = e.signing_secrets(&a, 1).unwrap();
        e.reseal(Some(&a), &b, 1);
        assert_eq!(e.key, b.fingerprint());
        assert_eq!(e.signing_secrets(&b, 1).unwrap(), secret);
        assert_eq!(e.signing_secrets(&a, 1), None);
        // A key that is not the row's opens nothing: the secrets go.
        let (c, _) = DataKey::generate();
        e.reseal(Some(&a), &c, 1);
        assert_eq!(e.signing_secrets(&c, 1).unwrap(), vec![]);
    }

    #[test]
    fn the_delivery_state_round_trips_through_the_row() {
        let (key, _) = DataKey::generate();
        let mut e = endpoint(&key);
        let mut d = e.deliverer();
        assert_eq!(d.acknowledged, FeedPoint::at(3));
        d.disable(Reason::Gone);
        e.follow(&d);
        assert_eq!(e.status, "disabled");
        assert_eq!(e.disabled_reason.as_deref(), Some("gone"));
        let back = StoredEndpoint::parse(&e.to_body()).unwrap().deliverer();
        assert_eq!(back.status, Status::Disabled);
        assert_eq!(back.reason, Some(Reason::Gone));
    }

    #[test]
    fn a_delivery_in_flight_round_trips_through_the_row_due_at_once() {
        let (key, _) = DataKey::generate();
        let mut e = endpoint(&key);
        let mut d = e.deliverer();
        let (since, next) = (FeedPoint::at(3), FeedPoint::at(9));
        d.prepared(Ok(("whd_1".into(), since, next)));
        let flight = d.in_flight.as_mut().unwrap();
        flight.failures = 4;
        flight.failing_since_ms = Some(1_000);
        flight.not_before_ms = 99_000;
        d.status = Status::Failing;
        e.follow(&d);
        let back = StoredEndpoint::parse(&e.to_body()).unwrap().deliverer();
        let f = back.in_flight.expect("kept in flight");
        assert_eq!((f.id.as_str(), f.since, f.next), ("whd_1", since, next));
        // The 72 hours count from the first failure, not from the restart.
        assert_eq!((f.failures, f.failing_since_ms), (4, Some(1_000)));
        assert_eq!(f.not_before_ms, i64::MIN);
        assert_eq!(back.status, Status::Failing);
        // Acknowledged: nothing in flight any more, and the row says so.
        d.in_flight = None;
        d.acknowledged = next;
        e.follow(&d);
        assert!(!e.to_body().contains("in_flight"));
        assert!(StoredEndpoint::parse(&e.to_body())
            .unwrap()
            .deliverer()
            .in_flight
            .is_none());
    }
}
