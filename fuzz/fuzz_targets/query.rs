//! The strict query-string decoder (`recruitd::http::query`): never panics; decodes
//! exactly `%XX` escapes (a `+` stays a plus sign) and refuses a malformed escape or
//! invalid UTF-8; every parameter it returns is the decoding of one `&`-separated part,
//! split at its first `=`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use recruitd::http::query::{percent_decode_strict, Query};

/// A plain restatement of strict percent-decoding.
fn reference(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hi = (*b.get(i + 1)? as char).to_digit(16)?;
            let lo = (*b.get(i + 2)? as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    assert_eq!(
        percent_decode_strict(raw).map(|c| c.into_owned()),
        reference(raw),
        "{raw:?}"
    );
    let parts: Vec<(Option<String>, Option<String>)> = raw
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (reference(k), reference(v))
        })
        .collect();
    let valid = parts.iter().all(|(k, v)| k.is_some() && v.is_some());
    match Query::parse(raw) {
        Ok(q) => {
            assert!(valid, "{raw:?} accepted");
            for (k, v) in &parts {
                let (k, v) = (k.as_deref().unwrap(), v.as_deref().unwrap());
                let given = parts
                    .iter()
                    .filter(|(other, _)| other.as_deref() == Some(k))
                    .count();
                match q.get(k) {
                    Ok(found) => {
                        assert_eq!(given, 1, "{k:?} given {given} times in {raw:?}");
                        assert_eq!(found, Some(v));
                    }
                    Err(_) => assert!(given > 1, "{k:?} refused in {raw:?}"),
                }
            }
        }
        Err(_) => assert!(!valid, "{raw:?} refused"),
    }
});
