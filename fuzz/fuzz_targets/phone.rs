//! Phone numbers: normalisation of stored numbers (`actors::phone::normalise_phone`, run
//! on every write and import) and reduction of search queries
//! (`actors::search::keys::PhoneQuery::new`). Neither may panic on any text; a normalised
//! number is E.164 or plain digits; a query keeps its digit count and its last nine
//! digits, and its keys exist exactly when it has nine (eight) digits.
#![no_main]

use actors::phone::{normalise_phone, parse_region, strip_extension};
use actors::search::keys::{phone_key, PhoneQuery};
use libfuzzer_sys::fuzz_target;

const REGIONS: [&str; 8] = ["GB", "US", "DE", "FR", "IN", "AU", "BR", "JP"];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(raw) = std::str::from_utf8(rest) else {
        return;
    };
    let region = REGIONS
        .get(first as usize % (REGIONS.len() + 1))
        .and_then(|r| parse_region(r));

    assert!(raw.starts_with(strip_extension(raw)));
    let digits: Vec<u8> = raw.bytes().filter(u8::is_ascii_digit).collect();
    match normalise_phone(raw, region) {
        None => assert!(
            strip_extension(raw).bytes().all(|b| !b.is_ascii_digit()),
            "{raw:?} has digits but no normal form"
        ),
        Some(n) => {
            let body = n.strip_prefix('+').unwrap_or(&n);
            assert!(
                !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()),
                "{raw:?} -> {n:?}"
            );
            if let Some(key) = phone_key(&n) {
                assert!(key.len() == 8 || key.len() == 9);
            }
        }
    }

    let q = PhoneQuery::new(raw);
    assert_eq!(q.digit_count, digits.len());
    let last: Vec<u8> = digits.iter().rev().take(9).copied().collect();
    assert_eq!(&q.reversed[..], &last[..]);
    assert_eq!(q.nine().is_some(), digits.len() >= 9);
    assert_eq!(q.eight().is_some(), digits.len() >= 8);
    if let Some(eight) = q.eight() {
        assert_eq!(eight, &last[..8]);
    }
});
