//! `updated_since` (`actors::query::parse_updated_since`): never panics; accepts only
//! strings that match the pattern the OpenAPI document publishes (so the document's
//! negative examples are always refused); a value it accepts names the instant it
//! writes, and the API's own rendering of that instant parses back to it.
#![no_main]

use actors::query::parse_updated_since;
use actors::time::Stamp;
use libfuzzer_sys::fuzz_target;
use regex::Regex;
use std::sync::OnceLock;

fn documented() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(actors::query::UPDATED_SINCE_PATTERN).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(stamp) = parse_updated_since(raw) else {
        return;
    };
    assert!(
        documented().is_match(raw),
        "accepted {raw:?}, which the document rules out"
    );
    // Four-digit years with an offset stay within a day of years 0000..=9999.
    let year_ms = 366 * 86_400_000i64;
    assert!(stamp.millis() >= -62_167_219_200_000 - year_ms, "{raw:?}");
    assert!(stamp.millis() < 253_402_300_800_000 + year_ms, "{raw:?}");
    let rendered = stamp.to_string();
    if rendered != "0000-01-01T00:00:00.000Z" || stamp.millis() == -62_167_219_200_000 {
        assert_eq!(
            parse_updated_since(&rendered),
            Ok(stamp),
            "{raw:?} rendered as {rendered:?}"
        );
        assert_eq!(Stamp::parse_rfc3339(&rendered), Some(stamp), "{rendered:?}");
    }
});
