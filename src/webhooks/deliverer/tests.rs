use super::*;
use crate::webhooks::retry::{Schedule, FIRST_RETRY, GIVE_UP_AFTER, MOST_BETWEEN};

fn p(position: u64, index: u32) -> FeedPoint {
    FeedPoint {
        position,
        part: 0,
        index,
    }
}

const HOUR_MS: i64 = 3_600_000;

/// A deliverer with the batch `id` (from its acknowledged point to `next`) in flight.
fn in_flight(d: &mut Deliverer, id: &str, next: FeedPoint, now: i64, head: u64) {
    assert_eq!(d.next_step(now, head), Step::Prepare(d.acknowledged));
    d.prepared(Ok((id.to_string(), d.acknowledged, next)));
    assert_eq!(d.next_step(now, head), Step::Send);
}

#[test]
fn the_point_moves_only_on_a_2xx_and_only_to_the_end_of_the_answered_batch() {
    let mut d = Deliverer::new(FeedPoint::at(0));
    assert_eq!(d.next_step(0, 0), Step::Idle, "nothing committed yet");
    in_flight(&mut d, "a", p(3, 500), 0, 5);
    // While one is in flight, no second is prepared, whatever is committed.
    assert_eq!(d.next_step(0, 9), Step::Send);
    assert_eq!(
        d.answered("a", Answer::Failed, &Schedule::CONTRACT, 0, 0.5),
        Some(Outcome::RetryAt(5_000))
    );
    assert_eq!(d.acknowledged, FeedPoint::at(0));
    assert_eq!(d.status, Status::Failing);
    assert_eq!(d.next_step(4_999, 9), Step::WaitUntil(5_000));
    assert_eq!(d.next_step(5_000, 9), Step::Send);
    // The retry is the same delivery.
    assert_eq!(d.in_flight.as_ref().unwrap().id, "a");
    assert_eq!(
        d.answered("a", Answer::Delivered, &Schedule::CONTRACT, 5_100, 0.5),
        Some(Outcome::Acknowledged(p(3, 500)))
    );
    assert_eq!(d.status, Status::Active);
    assert_eq!(d.next_step(5_100, 9), Step::Prepare(p(3, 500)));
}

#[test]
fn an_answer_to_a_delivery_no_longer_in_flight_changes_nothing() {
    let mut d = Deliverer::new(FeedPoint::at(0));
    in_flight(&mut d, "a", FeedPoint::at(2), 0, 2);
    d.replay(FeedPoint::at(1));
    assert_eq!(
        d.answered("a", Answer::Delivered, &Schedule::CONTRACT, 10, 0.5),
        None
    );
    assert_eq!(d.acknowledged, FeedPoint::at(1));
    assert_eq!(d.next_step(10, 2), Step::Prepare(FeedPoint::at(1)));
}

#[test]
fn a_410_disables_at_once_and_nothing_is_sent_until_re_enabled_from_the_acknowledged_point() {
    let mut d = Deliverer::new(FeedPoint::at(4));
    in_flight(&mut d, "a", FeedPoint::at(6), 0, 6);
    assert_eq!(
        d.answered("a", Answer::Gone, &Schedule::CONTRACT, 0, 0.5),
        Some(Outcome::Disabled(Reason::Gone))
    );
    assert_eq!(d.status, Status::Disabled);
    assert_eq!(d.reason.map(Reason::as_str), Some("gone"));
    assert_eq!(d.next_step(HOUR_MS, 9), Step::Idle);
    d.enable();
    assert_eq!((d.status, d.reason), (Status::Active, None));
    // The batch that was in flight is made again from the acknowledged point.
    assert_eq!(d.next_step(HOUR_MS, 9), Step::Prepare(FeedPoint::at(4)));
}

#[test]
fn retries_follow_the_schedule_and_an_endpoint_failing_for_72_hours_is_disabled() {
    let mut d = Deliverer::new(FeedPoint::at(0));
    let mut now = 1_000;
    in_flight(&mut d, "a", FeedPoint::at(1), now, 1);
    let mut delays = Vec::new();
    let outcome = loop {
        match d
            .answered("a", Answer::Failed, &Schedule::CONTRACT, now, 0.25)
            .unwrap()
        {
            Outcome::RetryAt(at) => {
                assert!(at > now);
                delays.push(at - now);
                assert_eq!(d.next_step(at - 1, 1), Step::WaitUntil(at));
                assert_eq!(d.next_step(at, 1), Step::Send);
                now = at;
            }
            other => break other,
        }
    };
    assert_eq!(outcome, Outcome::Disabled(Reason::Failing));
    assert_eq!(d.reason.map(Reason::as_str), Some("failing_for_72_hours"));
    assert_eq!(delays[0], FIRST_RETRY.as_millis() as i64);
    assert!(delays
        .iter()
        .all(|&ms| ms <= MOST_BETWEEN.as_millis() as i64));
    assert!(delays.windows(2).take(5).all(|w| w[1] > w[0]), "{delays:?}");
    let failed_for = now - 1_000;
    assert!(failed_for >= GIVE_UP_AFTER.as_millis() as i64);
    assert!(failed_for < (GIVE_UP_AFTER + MOST_BETWEEN).as_millis() as i64);
    assert_eq!(d.acknowledged, FeedPoint::at(0), "nothing was acknowledged");
    assert_eq!(d.next_step(now + HOUR_MS, 1), Step::Idle);
}

#[test]
fn a_success_ends_a_failing_spell_and_the_next_failure_starts_the_schedule_afresh() {
    let mut d = Deliverer::new(FeedPoint::at(0));
    in_flight(&mut d, "a", FeedPoint::at(1), 0, 3);
    for _ in 0..6 {
        let Some(Outcome::RetryAt(_)) =
            d.answered("a", Answer::Failed, &Schedule::CONTRACT, 0, 0.5)
        else {
            panic!("gave up");
        };
    }
    d.answered("a", Answer::Delivered, &Schedule::CONTRACT, 10, 0.5);
    in_flight(&mut d, "b", FeedPoint::at(3), 10, 3);
    assert_eq!(
        d.answered("b", Answer::Failed, &Schedule::CONTRACT, 20, 0.5),
        Some(Outcome::RetryAt(20 + FIRST_RETRY.as_millis() as i64))
    );
}

#[test]
fn a_feed_with_nothing_for_the_endpoint_moves_its_point_without_a_delivery() {
    let mut d = Deliverer::new(FeedPoint::at(2));
    assert_eq!(d.next_step(0, 5), Step::Prepare(FeedPoint::at(2)));
    d.prepared(Err(FeedPoint::at(5)));
    assert_eq!(d.in_flight, None);
    assert_eq!(d.next_step(0, 5), Step::Idle);
    // Inside a position, the rest of it may still hold changes.
    let mut inside = Deliverer::new(p(5, 10));
    assert_eq!(inside.next_step(0, 5), Step::Prepare(p(5, 10)));
    inside.prepared(Err(FeedPoint::at(5)));
    assert_eq!(inside.next_step(0, 5), Step::Idle);
}

#[test]
fn a_point_the_log_no_longer_keeps_disables_with_resync_required() {
    let mut d = Deliverer::new(FeedPoint::at(1));
    d.pruned();
    assert_eq!(d.status, Status::Disabled);
    assert_eq!(d.reason.map(Reason::as_str), Some("resync_required"));
    assert_eq!(d.next_step(0, 9), Step::Idle);
    d.replay(FeedPoint::at(7));
    assert_eq!(d.status.as_str(), "active");
    assert_eq!(d.next_step(0, 9), Step::Prepare(FeedPoint::at(7)));
}
