//! Phone numbers: normalised once, when a record is written or loaded.
//!
//! `phone` in the API is the E.164 form where the number parses with the workspace's
//! default region, otherwise its digits; extensions are stripped first. Search keys are
//! derived from these digits, so the lookup path never parses.

use phonenumber::country;
use std::str::FromStr;

/// A workspace's default region (ISO 3166 alpha-2), as understood by the parser.
pub type Region = country::Id;

pub fn parse_region(s: &str) -> Option<Region> {
    if s.len() != 2 || !s.bytes().all(|b| b.is_ascii_uppercase()) {
        return None;
    }
    country::Id::from_str(s).ok()
}

/// Removes a trailing extension (`ext. 12`, `ext 12`, `x12`, `#12`, `extension 12`).
pub fn strip_extension(raw: &str) -> &str {
    let lower = raw.to_ascii_lowercase();
    let mut seen_digit = false;
    for (i, c) in lower.char_indices() {
        if c.is_ascii_digit() {
            seen_digit = true;
            continue;
        }
        if seen_digit && (c == '#' || c == 'x' || lower[i..].starts_with("ext")) {
            return raw[..i].trim_end();
        }
    }
    raw
}

/// The digits of a string, in order.
pub fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

/// The normalised form of a number as entered: E.164 when it parses with `region`,
/// otherwise its digits. `None` when it holds no digit at all.
///
/// "Parses" deliberately does not mean "is an allocated number": fictional ranges such as
/// Ofcom's drama numbers (07700 900xxx) must normalise like any other mobile.
pub fn normalise_phone(raw: &str, region: Option<Region>) -> Option<String> {
    let number = strip_extension(raw);
    let plain_digits = digits(number);
    if plain_digits.is_empty() {
        return None;
    }
    let parsed = phonenumber::parse(region, number)
        .ok()
        .and_then(|p| e164(&p));
    Some(parsed.unwrap_or(plain_digits))
}

/// A parsed number's E.164 form: `+`, the country code, the national number (with the
/// leading zeros some countries keep). This is what the parser's formatter writes in
/// E.164 mode, without what the formatter does first for every mode: matching the
/// number against each of its country's national formats (a dozen or more regular
/// expressions, each behind the metadata's lock), whose result E.164 never uses. `None`
/// for a country code the metadata lacks, where the formatter fails.
fn e164(number: &phonenumber::PhoneNumber) -> Option<String> {
    let code = number.country().code();
    phonenumber::metadata::DATABASE.by_code(&code)?;
    Some(format!("+{code}{}", number.national()))
}

/// Numbers as entered → normalised (with one region), so that a run of records that
/// repeat numbers (a person's rows, people who share a switchboard) parses each
/// distinct one once: parsing is the costly part of taking in a row.
#[derive(Clone, Debug, Default)]
pub struct NumberMemo(std::collections::HashMap<Box<str>, Option<Box<str>>>);

impl NumberMemo {
    /// [`normalise_phone`] of `raw`, remembered. One memo serves one region.
    pub fn normalise(&mut self, raw: Option<&str>, region: Option<Region>) -> Option<Box<str>> {
        let raw = raw?;
        if let Some(known) = self.0.get(raw) {
            return known.clone();
        }
        let n = normalise_phone(raw, region).map(String::into_boxed_str);
        self.0.insert(Box::from(raw), n.clone());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn national_and_international_forms_agree() {
        let gb = parse_region("GB");
        let a = normalise_phone("07700 900123", gb).unwrap();
        let b = normalise_phone("+44 7700 900123", gb).unwrap();
        let c = normalise_phone("(0)7700-900 123", gb).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a, "+447700900123");
    }

    #[test]
    fn extensions_are_stripped() {
        let us = parse_region("US");
        for s in [
            "+1 (415) 555-0100 x12",
            "+1 (415) 555-0100 ext. 12",
            "+1 (415) 555-0100#12",
        ] {
            assert_eq!(strip_extension(s), "+1 (415) 555-0100", "{s}");
            assert_eq!(digits(&normalise_phone(s, us).unwrap()), "14155550100");
        }
    }

    #[test]
    fn e164_is_what_the_parsers_formatter_writes() {
        let numbers = [
            ("07700 900123", "GB"),
            ("020 7946 0000", "GB"),
            ("+39 06 6982 1234", "GB"),
            ("06 69821234", "IT"),
            ("+1 (415) 555-0100", "US"),
            ("030 901820", "DE"),
            ("+49 30 901820", "FR"),
            ("01 23 45 67 89", "FR"),
            ("+61 2 9374 4000", "AU"),
            ("0412 345 678", "AU"),
            ("+81 3-1234-5678", "JP"),
            ("+225 07 12 34 56 78", "CI"),
            ("+44 1632 960 983", "US"),
            ("tel:+1-201-555-0123", "US"),
        ];
        for (raw, region) in numbers {
            let parsed = phonenumber::parse(parse_region(region), raw).unwrap();
            let formatted = parsed.format().mode(phonenumber::Mode::E164).to_string();
            assert_eq!(e164(&parsed).as_deref(), Some(formatted.as_str()), "{raw}");
        }
    }

    #[test]
    fn unparseable_numbers_keep_their_digits() {
        assert_eq!(normalise_phone("12-34", None).unwrap(), "1234");
        assert_eq!(
            normalise_phone("+44 20 7946 0000", parse_region("GB")).unwrap(),
            "+442079460000"
        );
        assert_eq!(normalise_phone("n/a", None), None);
    }
}
