//! One endpoint's deliveries, as a state machine free of I/O and of the clock.
//!
//! The engine asks [`Deliverer::next_step`] what to do, does it (renders a batch, sends
//! an attempt, stores an acknowledgement), and tells the machine how it went. The rules
//! live here, where they can be checked one by one:
//! - **One in flight, in order.** A batch is prepared only from the acknowledged point
//!   and only when none is in flight; the point moves only on a 2xx, and only to the end
//!   of the batch that was answered.
//! - **The same delivery until it is answered.** A retry sends the in-flight batch again
//!   (same id, same changes); only re-enabling or a replay drops it, and the next batch
//!   starts from the acknowledged point again, so nothing in between is skipped.
//! - **Retries** as [`retry::after_failure`] says; `failing` meanwhile; disabled after
//!   the schedule's `give_up_after` ([`retry::GIVE_UP_AFTER`]), or at once on `410 Gone`.

use super::retry::{self, Answer, Next, Schedule};
use actors::changes::tokens::FeedPoint;

/// An endpoint's status, as the API shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Active,
    /// Its last attempt failed; retries go on.
    Failing,
    Disabled,
}

/// Why an endpoint was disabled (`disabled_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its owner disabled it.
    Requested,
    /// It answered `410 Gone`.
    Gone,
    /// It failed for [`retry::GIVE_UP_AFTER`].
    Failing,
    /// Its acknowledged point is older than the change log keeps.
    ResyncRequired,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Requested => "requested",
            Reason::Gone => "gone",
            Reason::Failing => "failing_for_72_hours",
            Reason::ResyncRequired => "resync_required",
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Failing => "failing",
            Status::Disabled => "disabled",
        }
    }
}

/// The delivery being made: what it carries is kept with it (by the engine, keyed by
/// `id`), so that every attempt sends the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// `webhook-id`.
    pub id: String,
    pub since: FeedPoint,
    pub next: FeedPoint,
    /// Failed attempts so far.
    pub failures: u32,
    /// When the first of them failed (milliseconds since the epoch).
    pub failing_since_ms: Option<i64>,
    /// Not attempted again before then.
    pub not_before_ms: i64,
}

/// What the engine should do next for the endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing: disabled, or nothing committed after the acknowledged point.
    Idle,
    /// Render the batch after this point, then tell [`Deliverer::prepared`].
    Prepare(FeedPoint),
    /// Attempt the in-flight delivery now, then tell [`Deliverer::answered`].
    Send,
    /// Ask again at this time.
    WaitUntil(i64),
}

/// What an answer did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged up to this point: store it before anything else is sent.
    Acknowledged(FeedPoint),
    /// Tried again at this time.
    RetryAt(i64),
    Disabled(Reason),
}

/// One endpoint's delivery state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deliverer {
    pub acknowledged: FeedPoint,
    pub status: Status,
    pub reason: Option<Reason>,
    pub in_flight: Option<InFlight>,
}

impl Deliverer {
    /// An active endpoint whose deliveries start after `acknowledged`.
    pub fn new(acknowledged: FeedPoint) -> Self {
        Deliverer {
            acknowledged,
            status: Status::Active,
            reason: None,
            in_flight: None,
        }
    }

    /// What to do now, `head` being the workspace's position.
    pub fn next_step(&self, now_ms: i64, head: u64) -> Step {
        if self.status == Status::Disabled {
            return Step::Idle;
        }
        match &self.in_flight {
            Some(f) if f.not_before_ms > now_ms => Step::WaitUntil(f.not_before_ms),
            Some(_) => Step::Send,
            None if behind(self.acknowledged, head) => Step::Prepare(self.acknowledged),
            None => Step::Idle,
        }
    }

    /// The batch after the acknowledged point was rendered: `id` and its end, or
    /// `None` when the feed had nothing for the endpoint's entities (the point moves to
    /// `seen`, where the feed stopped looking, with nothing to send).
    pub fn prepared(&mut self, batch: Result<(String, FeedPoint, FeedPoint), FeedPoint>) {
        match batch {
            Ok((id, since, next)) => {
                debug_assert_eq!(since, self.acknowledged);
                self.in_flight = Some(InFlight {
                    id,
                    since,
                    next,
                    failures: 0,
                    failing_since_ms: None,
                    not_before_ms: i64::MIN,
                });
            }
            Err(seen) => self.acknowledged = seen,
        }
    }

    /// The acknowledged point is older than the log keeps: nothing can be sent from it.
    pub fn pruned(&mut self) {
        self.disable(Reason::ResyncRequired);
    }

    /// How the attempt of the delivery `id` went, failures retried on `schedule`;
    /// `jitter` is a draw from `0.0..1.0`. An answer to a delivery no longer in flight
    /// (dropped by a replay or a re-enable meanwhile) changes nothing.
    pub fn answered(
        &mut self,
        id: &str,
        answer: Answer,
        schedule: &Schedule,
        now_ms: i64,
        jitter: f64,
    ) -> Option<Outcome> {
        let flight = self.in_flight.as_mut().filter(|f| f.id == id)?;
        Some(match answer {
            Answer::Delivered => {
                self.acknowledged = flight.next;
                self.in_flight = None;
                self.status = Status::Active;
                Outcome::Acknowledged(self.acknowledged)
            }
            Answer::Gone => {
                self.disable(Reason::Gone);
                Outcome::Disabled(Reason::Gone)
            }
            Answer::Failed => {
                flight.failures += 1;
                let since = *flight.failing_since_ms.get_or_insert(now_ms);
                let failing_for = std::time::Duration::from_millis((now_ms - since).max(0) as u64);
                match retry::after_failure(schedule, flight.failures, failing_for, jitter) {
                    Next::RetryIn(d) => {
                        flight.not_before_ms = now_ms + d.as_millis() as i64;
                        self.status = Status::Failing;
                        Outcome::RetryAt(flight.not_before_ms)
                    }
                    Next::GiveUp => {
                        self.disable(Reason::Failing);
                        Outcome::Disabled(Reason::Failing)
                    }
                }
            }
        })
    }

    /// Stops deliveries (the owner's PATCH, or a rule above).
    pub fn disable(&mut self, reason: Reason) {
        self.status = Status::Disabled;
        self.reason = Some(reason);
        self.in_flight = None;
    }

    /// Deliveries go on from the acknowledged point: the delivery that was in flight is
    /// rendered again from there, so nothing in between is skipped.
    pub fn enable(&mut self) {
        self.status = Status::Active;
        self.reason = None;
        self.in_flight = None;
    }

    /// Deliveries start again after `since` (a point the feed still accepts).
    pub fn replay(&mut self, since: FeedPoint) {
        self.acknowledged = since;
        self.enable();
    }
}

/// Whether commits after `point` exist at `head`.
/// Whether changes committed up to `head` lie after `point`.
pub fn behind(point: FeedPoint, head: u64) -> bool {
    point.position < head || (point.position == head && point != FeedPoint::at(head))
}

#[cfg(test)]
mod tests;
