//! What the receiver of the `webhooks` scenario checks of each delivery, written from
//! the webhooks contract alone: the Standard Webhooks signature (HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the secret's decoded bytes), the
//! timestamp's freshness, the order (each delivery starts where the last one it
//! acknowledged ended), duplicates (a `webhook-id` seen before: a retry of a delivery
//! whose answer was lost), and what the receiver ends up holding, to compare with a
//! full sync.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use std::collections::{HashMap, HashSet};

/// A receiver refuses a timestamp further than this from its clock.
pub const TOLERANCE_SECONDS: i64 = 300;

/// The bytes a `whsec_…` secret signs with.
pub fn secret_bytes(secret: &str) -> Option<Vec<u8>> {
    STANDARD.decode(secret.strip_prefix("whsec_")?).ok()
}

/// Whether one of the header's `v1` signatures is `secret`'s over this delivery.
pub fn signed_by(secret: &[u8], header: &str, id: &str, timestamp: &str, body: &[u8]) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let expected = mac.finalize().into_bytes();
    header.split_whitespace().any(|sig| {
        sig.strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
            .is_some_and(|got| got.as_slice() == expected.as_slice())
    })
}

/// The headers a delivery came with.
pub struct Headers<'a> {
    pub id: &'a str,
    pub timestamp: &'a str,
    pub signature: &'a str,
}

#[derive(Deserialize)]
struct Delivery<'a> {
    #[serde(rename = "type")]
    kind: String,
    since: String,
    next_since: String,
    #[serde(borrow)]
    data: Vec<Item<'a>>,
}

/// One change of a delivery, its record (for an upsert) left as the text it came in.
#[derive(Deserialize)]
pub struct Item<'a> {
    pub entity: String,
    pub id: String,
    pub op: String,
    #[serde(borrow, default)]
    pub record: Option<&'a serde_json::value::RawValue>,
}

/// What the receiver makes of one delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// In order and signed: its changes are applied (answer 2xx).
    Accepted { changes: usize },
    /// A delivery already accepted, sent again (answer 2xx; nothing applied twice).
    /// `after_ack`: its first receipt was answered 2xx in time, so the sender had
    /// its acknowledgement, and lost it (a crash before it was stored); otherwise the
    /// first answer never reached it (a timeout, a reset): an ordinary retry.
    Duplicate { after_ack: bool },
    /// Signed, but not starting where the last accepted one ended.
    OutOfOrder { expected: String, got: String },
    /// No signature of the endpoint's secret matches.
    BadSignature,
    /// The timestamp is too far from the receiver's clock.
    Stale,
    /// Not a delivery of the contract's form.
    Malformed(String),
}

/// One endpoint's receiving side.
pub struct Ledger {
    secrets: Vec<Vec<u8>>,
    /// Where the next delivery must start: the endpoint's `position` when it was
    /// registered, then each accepted delivery's `next_since`.
    expected_since: String,
    accepted_ids: HashSet<String>,
    /// The accepted deliveries whose 2xx went out in time.
    acknowledged_ids: HashSet<String>,
    /// Each record the deliveries named, and whether its last change was an upsert.
    holds: HashMap<(String, String), bool>,
    pub accepted: u64,
    pub duplicates: u64,
    /// Duplicates of deliveries acknowledged in time (see [`Verdict::Duplicate`]).
    pub duplicates_after_ack: u64,
    pub refused: u64,
}

impl Ledger {
    /// A receiver for an endpoint registered at `position`, signing with `secrets`.
    pub fn new(position: &str, secrets: Vec<Vec<u8>>) -> Self {
        Ledger {
            secrets,
            expected_since: position.to_string(),
            accepted_ids: HashSet::new(),
            acknowledged_ids: HashSet::new(),
            holds: HashMap::new(),
            accepted: 0,
            duplicates: 0,
            duplicates_after_ack: 0,
            refused: 0,
        }
    }

    /// Checks one delivery at `now` (Unix seconds) and applies it when it is in order.
    pub fn receive(&mut self, h: &Headers<'_>, body: &[u8], now: i64) -> Verdict {
        self.receive_with(h, body, now, |_| {})
    }

    /// As [`receive`](Self::receive), and `accepted` sees the changes of a delivery
    /// applied (parsed once, for the receiver's own bookkeeping).
    pub fn receive_with(
        &mut self,
        h: &Headers<'_>,
        body: &[u8],
        now: i64,
        accepted: impl FnOnce(&[Item<'_>]),
    ) -> Verdict {
        let verdict = self.judge(h, body, now, accepted);
        match verdict {
            Verdict::Accepted { .. } => self.accepted += 1,
            Verdict::Duplicate { after_ack } => {
                self.duplicates += 1;
                self.duplicates_after_ack += u64::from(after_ack);
            }
            _ => self.refused += 1,
        }
        verdict
    }

    /// The accepted delivery `id` was answered 2xx in time: the sender has it.
    pub fn answered(&mut self, id: &str) {
        if self.accepted_ids.contains(id) {
            self.acknowledged_ids.insert(id.to_string());
        }
    }

    fn judge(
        &mut self,
        h: &Headers<'_>,
        body: &[u8],
        now: i64,
        accepted: impl FnOnce(&[Item<'_>]),
    ) -> Verdict {
        if !self
            .secrets
            .iter()
            .any(|s| signed_by(s, h.signature, h.id, h.timestamp, body))
        {
            return Verdict::BadSignature;
        }
        match h.timestamp.parse::<i64>() {
            Ok(t) if (now - t).abs() <= TOLERANCE_SECONDS => {}
            _ => return Verdict::Stale,
        }
        if self.accepted_ids.contains(h.id) {
            return Verdict::Duplicate {
                after_ack: self.acknowledged_ids.contains(h.id),
            };
        }
        let d: Delivery = match serde_json::from_slice(body) {
            Ok(d) => d,
            Err(e) => return Verdict::Malformed(e.to_string()),
        };
        if d.kind != "changes" {
            return Verdict::Malformed(format!("type {:?}", d.kind));
        }
        if d.since != self.expected_since {
            return Verdict::OutOfOrder {
                expected: self.expected_since.clone(),
                got: d.since,
            };
        }
        for item in &d.data {
            self.holds
                .insert((item.entity.clone(), item.id.clone()), item.op == "upsert");
        }
        accepted(&d.data);
        self.expected_since = d.next_since;
        self.accepted_ids.insert(h.id.to_string());
        Verdict::Accepted {
            changes: d.data.len(),
        }
    }

    /// The records the receiver holds now (named by an upsert last), by entity.
    pub fn holds(&self) -> HashMap<&str, HashSet<&str>> {
        let mut out: HashMap<&str, HashSet<&str>> = HashMap::new();
        for ((entity, id), shown) in &self.holds {
            if *shown {
                out.entry(entity).or_default().insert(id);
            }
        }
        out
    }

    /// The secrets it checks signatures with.
    pub fn secrets(self) -> Vec<Vec<u8>> {
        self.secrets
    }

    /// Where the next delivery must start.
    pub fn expected_since(&self) -> &str {
        &self.expected_since
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's example.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn sign(secret: &[u8], id: &str, ts: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(format!("{id}.{ts}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    fn delivery(since: &str, next: &str, items: &[(&str, &str)]) -> Vec<u8> {
        let data: Vec<_> = items
            .iter()
            .map(|(id, op)| serde_json::json!({"entity": "notes", "id": id, "op": op}))
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "type": "changes", "workspace_id": "w", "endpoint_id": "e",
            "since": since, "next_since": next, "data": data
        }))
        .unwrap()
    }

    #[test]
    fn the_specifications_example_verifies() {
        let secret = secret_bytes(SECRET).unwrap();
        let body = br#"{"test": 2432232314}"#;
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        assert!(signed_by(&secret, SIGNATURE, id, "1614265330", body));
        assert!(signed_by(
            &secret,
            &format!("v1,bm90IGl0 {SIGNATURE}"),
            id,
            "1614265330",
            body
        ));
        assert!(!signed_by(&secret, SIGNATURE, id, "1614265331", body));
        assert!(!signed_by(&secret, SIGNATURE, id, "1614265330", b"{}"));
    }

    #[test]
    fn deliveries_in_order_are_applied_and_repeats_and_gaps_are_told_apart() {
        let secret = secret_bytes(SECRET).unwrap();
        let mut l = Ledger::new("t0", vec![secret.clone()]);
        let now = 1_800_000_000;
        let ts = now.to_string();
        let first = delivery("t0", "t1", &[("a", "upsert"), ("b", "upsert")]);
        let sig = sign(&secret, "d1", &ts, &first);
        let h = Headers {
            id: "d1",
            timestamp: &ts,
            signature: &sig,
        };
        assert_eq!(l.receive(&h, &first, now), Verdict::Accepted { changes: 2 });
        // The same delivery again: a retry whose answer was lost.
        assert_eq!(
            l.receive(&h, &first, now + 5),
            Verdict::Duplicate { after_ack: false }
        );
        // Once its answer went out in time, a repeat means the sender lost it.
        l.answered("d1");
        assert_eq!(
            l.receive(&h, &first, now + 6),
            Verdict::Duplicate { after_ack: true }
        );
        // A delivery that skips ahead.
        let gap = delivery("t2", "t3", &[("c", "upsert")]);
        let sig = sign(&secret, "d3", &ts, &gap);
        let h3 = Headers {
            id: "d3",
            timestamp: &ts,
            signature: &sig,
        };
        assert_eq!(
            l.receive(&h3, &gap, now),
            Verdict::OutOfOrder {
                expected: "t1".into(),
                got: "t2".into()
            }
        );
        let second = delivery("t1", "t2", &[("a", "delete")]);
        let sig = sign(&secret, "d2", &ts, &second);
        let h2 = Headers {
            id: "d2",
            timestamp: &ts,
            signature: &sig,
        };
        assert_eq!(
            l.receive(&h2, &second, now),
            Verdict::Accepted { changes: 1 }
        );
        assert_eq!(l.receive(&h3, &gap, now), Verdict::Accepted { changes: 1 });
        assert_eq!((l.accepted, l.duplicates, l.refused), (3, 2, 1));
        assert_eq!(l.duplicates_after_ack, 1);
        let holds = l.holds();
        let notes: Vec<&str> = {
            let mut v: Vec<&str> = holds["notes"].iter().copied().collect();
            v.sort();
            v
        };
        assert_eq!(notes, vec!["b", "c"]);
        assert_eq!(l.expected_since(), "t3");
    }

    #[test]
    fn a_forged_or_stale_delivery_is_refused_and_applies_nothing() {
        let secret = secret_bytes(SECRET).unwrap();
        let mut l = Ledger::new("t0", vec![secret.clone()]);
        let now = 1_800_000_000;
        let ts = now.to_string();
        let body = delivery("t0", "t1", &[("a", "upsert")]);
        let forged = sign(b"another secret of enough length!", "d1", &ts, &body);
        let h = Headers {
            id: "d1",
            timestamp: &ts,
            signature: &forged,
        };
        assert_eq!(l.receive(&h, &body, now), Verdict::BadSignature);
        let old = (now - TOLERANCE_SECONDS - 1).to_string();
        let sig = sign(&secret, "d1", &old, &body);
        let h = Headers {
            id: "d1",
            timestamp: &old,
            signature: &sig,
        };
        assert_eq!(l.receive(&h, &body, now), Verdict::Stale);
        assert!(l.holds().is_empty());
        assert_eq!(l.expected_since(), "t0");
        // During a rotation, the old secret's signature beside the new one verifies.
        let new = b"a brand new secret of 32 bytes!!".to_vec();
        let mut rotated = Ledger::new("t0", vec![new.clone()]);
        let both = format!(
            "{} {}",
            sign(&new, "d1", &ts, &body),
            sign(&secret, "d1", &ts, &body)
        );
        let h = Headers {
            id: "d1",
            timestamp: &ts,
            signature: &both,
        };
        assert_eq!(
            rotated.receive(&h, &body, now),
            Verdict::Accepted { changes: 1 }
        );
    }
}
