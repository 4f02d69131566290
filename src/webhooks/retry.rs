//! When a failed delivery is tried again, and when its endpoint is given up on.
//!
//! A delivery fails when the answer is not 2xx, when none comes within
//! [`ANSWER_WITHIN`], or when the connection fails. The same delivery (same id, same
//! changes) is tried again [`FIRST_RETRY`] later, then at delays that double, each
//! drawn between half and all of its doubling (jitter, so that endpoints that failed
//! together do not come back together), never more than [`MOST_BETWEEN`] apart. An
//! endpoint failing for [`GIVE_UP_AFTER`] is disabled. `410 Gone` disables it at once:
//! its owner has said it is not coming back.

use std::time::Duration;

/// How long a receiver has to answer a delivery.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The delay before the first retry.
pub const FIRST_RETRY: Duration = Duration::from_secs(5);
/// The longest delay between two attempts.
pub const MOST_BETWEEN: Duration = Duration::from_secs(3600);
/// How long an endpoint may keep failing before it is disabled.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(72 * 3600);

/// What an attempt's answer means for the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the changes are acknowledged.
    Delivered,
    /// Anything else, no answer in time, or no connection: try again later.
    Failed,
    /// `410 Gone`: disable the endpoint now.
    Gone,
}

/// The meaning of an HTTP status (`None`: no answer, or not in time).
pub fn judge(status: Option<u16>) -> Answer {
    match status {
        Some(200..=299) => Answer::Delivered,
        Some(410) => Answer::Gone,
        _ => Answer::Failed,
    }
}

/// What follows a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Try the same delivery again after this long.
    RetryIn(Duration),
    /// Disable the endpoint (it has failed for [`GIVE_UP_AFTER`]).
    GiveUp,
}

/// The delays a failing endpoint is retried at: the contract's ([`Schedule::CONTRACT`]),
/// or in tests the same shape shorter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub first_retry: Duration,
    pub most_between: Duration,
    pub give_up_after: Duration,
}

impl Schedule {
    pub const CONTRACT: Schedule = Schedule {
        first_retry: FIRST_RETRY,
        most_between: MOST_BETWEEN,
        give_up_after: GIVE_UP_AFTER,
    };
}

/// What follows the `failures`th failed attempt in a row (1 for the first), the first of
/// them `failing_for` ago, on schedule `s`; `jitter` is a draw from `0.0..1.0`.
pub fn after_failure(s: &Schedule, failures: u32, failing_for: Duration, jitter: f64) -> Next {
    if failing_for >= s.give_up_after {
        return Next::GiveUp;
    }
    if failures <= 1 {
        return Next::RetryIn(s.first_retry);
    }
    let doublings = (failures - 1).min(20);
    let full = s
        .first_retry
        .saturating_mul(1 << doublings)
        .min(s.most_between);
    let jitter = jitter.clamp(0.0, 1.0);
    Next::RetryIn(full.mul_f64(0.5 + 0.5 * jitter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_mean_what_the_contract_says() {
        for ok in [200, 201, 202, 204, 299] {
            assert_eq!(judge(Some(ok)), Answer::Delivered, "{ok}");
        }
        assert_eq!(judge(Some(410)), Answer::Gone);
        for failed in [
            Some(199),
            Some(301),
            Some(302),
            Some(400),
            Some(404),
            Some(429),
            Some(500),
            Some(503),
            None,
        ] {
            assert_eq!(judge(failed), Answer::Failed, "{failed:?}");
        }
    }

    #[test]
    fn the_first_retry_is_after_five_seconds_then_delays_double_within_their_jitter() {
        let zero = Duration::ZERO;
        assert_eq!(
            after_failure(&Schedule::CONTRACT, 1, zero, 0.7),
            Next::RetryIn(FIRST_RETRY)
        );
        // Second failure: between half and all of 10 s.
        assert_eq!(
            after_failure(&Schedule::CONTRACT, 2, zero, 0.0),
            Next::RetryIn(Duration::from_secs(5))
        );
        assert_eq!(
            after_failure(&Schedule::CONTRACT, 2, zero, 1.0),
            Next::RetryIn(Duration::from_secs(10))
        );
        assert_eq!(
            after_failure(&Schedule::CONTRACT, 3, zero, 1.0),
            Next::RetryIn(Duration::from_secs(20))
        );
        for failures in 2..200 {
            for jitter in [0.0, 0.3, 0.999] {
                let Next::RetryIn(d) = after_failure(&Schedule::CONTRACT, failures, zero, jitter)
                else {
                    panic!("gave up before 72 h");
                };
                assert!(d <= MOST_BETWEEN, "{failures}: {d:?}");
                assert!(d >= FIRST_RETRY, "{failures}: {d:?}");
            }
        }
        assert_eq!(
            after_failure(&Schedule::CONTRACT, 60, zero, 1.0),
            Next::RetryIn(MOST_BETWEEN)
        );
    }

    #[test]
    fn an_endpoint_failing_for_72_hours_is_given_up_on_and_not_before() {
        // Every attempt fails at once; the delays are followed as drawn.
        let mut failing_for = Duration::ZERO;
        let mut attempts = 1u32;
        let mut draws = [0.1, 0.9, 0.5, 0.0, 1.0].into_iter().cycle();
        while let Next::RetryIn(d) = after_failure(
            &Schedule::CONTRACT,
            attempts,
            failing_for,
            draws.next().unwrap(),
        ) {
            assert!(failing_for < GIVE_UP_AFTER);
            failing_for += d;
            attempts += 1;
        }
        assert!(failing_for >= GIVE_UP_AFTER);
        assert!(failing_for < GIVE_UP_AFTER + MOST_BETWEEN);
        // Hourly at the most once the delays have grown: about one a hour for 72 h.
        assert!((72..200).contains(&attempts), "{attempts} attempts");
    }
}
