//! `limit` (`actors::query::Limit::parse`): plain decimal digits, at least 1, clamped to
//! the endpoint's maximum; anything else refused. Checked against a plain restatement of
//! that rule, for every maximum the API uses.
#![no_main]

use actors::query::Limit;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    for max in [100usize, 500] {
        let digits = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
        let value = raw.trim_start_matches('0');
        match Limit::parse(raw, max) {
            Ok(limit) => {
                assert!(digits && !value.is_empty(), "accepted {raw:?}");
                let n = limit.get();
                assert!((1..=max).contains(&n), "{raw:?} gave {n}");
                // Below the maximum the value is the number written; above, the maximum.
                let small = value.len() < 20 && value.parse::<u64>().unwrap() <= max as u64;
                if small {
                    assert_eq!(n as u64, value.parse::<u64>().unwrap(), "{raw:?}");
                } else {
                    assert_eq!(n, max, "{raw:?}");
                }
            }
            Err(message) => {
                assert!(!digits || value.is_empty(), "refused {raw:?}: {message}");
                assert!(message.starts_with("limit"), "{message}");
            }
        }
    }
});
