//! Index keys: what a stored number or address becomes in an index, and what a query
//! becomes at lookup. Stored values are normalised once, when written; a query is only
//! stripped to its digits (or lower-cased), never parsed.

use smallvec::SmallVec;

/// Digits of the primary match key (spec, search rule 1).
pub const KEY_DIGITS: usize = 9;
/// Digits of the fallback key (rule 2); fewer digits than this is `invalid` (rule 3).
pub const FALLBACK_DIGITS: usize = 8;

/// A phone key: the last nine digits of a number, reversed (ASCII digits). Only the
/// last nine digits ever take part in a match, so the key keeps no more; a number with
/// exactly eight digits keeps eight, and one with fewer is never indexed.
pub type PhoneKey = SmallVec<[u8; KEY_DIGITS]>;

/// An e-mail key: the whole address, lower-cased; inline up to 40 bytes, which covers
/// nearly every address, so sorting keys for a build compares without chasing pointers.
pub type EmailKey = SmallVec<[u8; 40]>;

/// The key of a stored, normalised number; `None` when it has fewer than eight digits
/// (no query can ever match it).
pub fn phone_key(normalised: &str) -> Option<PhoneKey> {
    // A plain loop into a fixed buffer: this runs for every number of a workspace when
    // its index is built, and iterator adaptors into a SmallVec cost several times more.
    let mut buf = [0u8; KEY_DIGITS];
    let mut n = 0;
    for &b in normalised.as_bytes().iter().rev() {
        if b.is_ascii_digit() {
            buf[n] = b;
            n += 1;
            if n == KEY_DIGITS {
                break;
            }
        }
    }
    (n >= FALLBACK_DIGITS).then(|| PhoneKey::from_buf_and_len(buf, n))
}

/// The key of a stored address; `None` for an empty one.
pub fn email_key(address: &str) -> Option<EmailKey> {
    let trimmed = address.trim();
    if trimmed.is_empty() {
        return None;
    }
    if trimmed.is_ascii() {
        let mut key = EmailKey::from_slice(trimmed.as_bytes());
        key.make_ascii_lowercase();
        return Some(key);
    }
    Some(EmailKey::from_slice(trimmed.to_lowercase().as_bytes()))
}

/// Lower-cases without allocating for addresses up to 64 bytes of ASCII.
pub fn lower(s: &str) -> SmallVec<[u8; 64]> {
    if s.is_ascii() {
        let mut out = SmallVec::from_slice(s.as_bytes());
        out.make_ascii_lowercase();
        out
    } else {
        SmallVec::from_slice(s.to_lowercase().as_bytes())
    }
}

/// A phone query reduced to what matching needs: how many digits it has, and its last
/// nine digits reversed.
#[derive(Debug, Clone)]
pub struct PhoneQuery {
    pub digit_count: usize,
    /// Up to nine digits, last digit first.
    pub reversed: PhoneKey,
}

impl PhoneQuery {
    pub fn new(query: &str) -> Self {
        let mut reversed = PhoneKey::new();
        let mut digit_count = 0;
        for b in query.bytes().rev().filter(u8::is_ascii_digit) {
            if reversed.len() < KEY_DIGITS {
                reversed.push(b);
            }
            digit_count += 1;
        }
        PhoneQuery {
            digit_count,
            reversed,
        }
    }

    /// The key of the first pass: nine digits when the number has them, else the eight
    /// of the fallback; `None` below eight digits.
    pub fn nine(&self) -> Option<&[u8]> {
        (self.reversed.len() == KEY_DIGITS).then_some(&self.reversed[..])
    }

    pub fn eight(&self) -> Option<&[u8]> {
        (self.reversed.len() >= FALLBACK_DIGITS).then(|| &self.reversed[..FALLBACK_DIGITS])
    }
}

/// A reversed key written the right way round (`match_key`).
pub fn forward(reversed: &[u8]) -> SmallVec<[u8; KEY_DIGITS]> {
    reversed.iter().rev().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_last_nine_digits_reversed() {
        assert_eq!(&phone_key("+447700900123").unwrap()[..], b"321009007");
        assert_eq!(&phone_key("12345678").unwrap()[..], b"87654321");
        assert_eq!(phone_key("1234567"), None);
        let q = PhoneQuery::new("+44 (0)7700 900-123");
        assert_eq!(q.digit_count, 13);
        assert_eq!(q.nine(), Some(&b"321009007"[..]));
        assert_eq!(q.eight(), Some(&b"32100900"[..]));
        assert_eq!(&forward(q.nine().unwrap())[..], b"700900123");
        let q = PhoneQuery::new("1234-5678");
        assert_eq!((q.digit_count, q.nine()), (8, None));
        assert_eq!(q.eight(), Some(&b"87654321"[..]));
    }

    #[test]
    fn addresses_lower_case_whole() {
        assert_eq!(
            &*email_key(" Ann.Lee+CV@Example.COM ").unwrap(),
            b"ann.lee+cv@example.com"
        );
        assert_eq!(
            &*email_key("ÅSA@Example.se").unwrap(),
            "åsa@example.se".as_bytes()
        );
        assert_eq!(email_key("  "), None);
    }
}
