//! What the harness knows about the workspace under test, learnt through the API: the
//! numbers and addresses people hold (harvested by a full sync), the answers the search
//! endpoints must give for them, and the record ids writes can target.
//!
//! The expected answers follow the API's matching rules, recomputed here independently
//! of the server: a number's key is its last nine digits; when nine digits find no
//! person (or the number has only eight) the last eight decide; fewer than eight is
//! `invalid`; confidence counts candidates (by person) plus contacts, never companies.
//! Stored numbers are read as the API shows them: candidates' and contacts' `phone` and
//! `mobile` are normalised already; a company's `phone` is as entered, so its extension
//! is stripped before its digits are taken.

use crate::http::Pool;
use anyhow::{bail, Context};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::Deserialize;
use std::collections::{BTreeSet, HashMap};

/// The nine entities of the API, in the order a full sync takes them.
pub const ENTITIES: [&str; 9] = [
    "users",
    "companies",
    "contacts",
    "jobs",
    "candidates",
    "applications",
    "notes",
    "tasks",
    "attachments",
];

/// Who holds a key: a person (candidate records, by `person_id`), a contact or a
/// company; indexes into [`Dataset`]'s id tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Owner {
    Person(u32),
    Contact(u32),
    Company(u32),
}

impl Owner {
    fn is_person(self) -> bool {
        !matches!(self, Owner::Company(_))
    }
}

/// A stored number's key: its last nine digits as a number, and how many digits it has
/// (8 or 9; fewer is never matched).
fn stored_key(digits: &str) -> Option<(u8, u64)> {
    let n = digits.len();
    if n < 8 {
        return None;
    }
    let tail = &digits[n.saturating_sub(9)..];
    Some((tail.len() as u8, tail.parse().ok()?))
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

/// Removes a trailing extension (`ext. 12`, `ext 12`, `x12`, `#12`): the API documents
/// that stored numbers lose it before they are matched.
pub(crate) fn strip_extension(raw: &str) -> &str {
    // The extension starts at the first marker after the number has begun.
    let Some(first_digit) = raw.find(|c: char| c.is_ascii_digit()) else {
        return raw;
    };
    let marks_extension = |at: usize| {
        let rest = &raw.as_bytes()[at..];
        matches!(rest[0].to_ascii_lowercase(), b'#' | b'x')
            || rest
                .get(..3)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"ext"))
    };
    (first_digit..raw.len())
        .filter(|&i| raw.is_char_boundary(i))
        .find(|&i| marks_extension(i))
        .map_or(raw, |at| raw[..at].trim_end())
}

#[derive(Deserialize)]
struct CandidateIn {
    id: String,
    person_id: String,
    phone: Option<String>,
    mobile: Option<String>,
    #[serde(default)]
    emails: Vec<String>,
}

#[derive(Deserialize)]
struct ContactIn {
    id: String,
    phone: Option<String>,
    mobile: Option<String>,
    #[serde(default)]
    emails: Vec<String>,
}

#[derive(Deserialize)]
struct CompanyIn {
    id: String,
    phone: Option<String>,
}

#[derive(Deserialize)]
struct IdIn {
    id: String,
}

#[derive(Deserialize)]
struct UserIn {
    email: Option<String>,
    #[serde(default)]
    active: bool,
}

#[derive(Deserialize)]
struct PageIn<T> {
    data: Vec<T>,
    next_cursor: Option<String>,
}

/// Every record of `entity`, by a full sync at `limit=500`.
pub async fn fetch_all<T: serde::de::DeserializeOwned>(
    pool: &Pool,
    entity: &str,
) -> anyhow::Result<Vec<T>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => format!("/v1/{entity}?limit=500"),
            Some(c) => format!("/v1/{entity}?limit=500&cursor={}", crate::http::encode(c)),
        };
        let a = pool
            .send(hyper::Method::GET, &path, None)
            .await
            .map_err(|e| anyhow::anyhow!("GET {path}: {e}"))?;
        if a.status != 200 {
            bail!(
                "GET {path}: HTTP {} {}",
                a.status,
                String::from_utf8_lossy(&a.body)
            );
        }
        let page: PageIn<T> =
            serde_json::from_slice(&a.body).with_context(|| format!("GET {path}: body"))?;
        out.extend(page.data);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// The expected answer of one search.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub confidence: &'static str,
    /// Phone searches only.
    pub strategy: Option<&'static str>,
    pub persons: BTreeSet<String>,
    pub contacts: BTreeSet<String>,
    /// Phone searches only.
    pub companies: BTreeSet<String>,
}

/// The part of a search answer the checks read.
#[derive(Deserialize)]
pub struct SearchData {
    pub match_confidence: String,
    pub match_strategy: Option<String>,
    #[serde(default)]
    pub candidates: Vec<PersonOut>,
    #[serde(default)]
    pub contacts: Vec<IdOut>,
    #[serde(default)]
    pub companies: Vec<IdOut>,
}

#[derive(Deserialize)]
pub struct PersonOut {
    pub person_id: String,
}

#[derive(Deserialize)]
pub struct IdOut {
    pub id: String,
}

#[derive(Deserialize)]
struct SearchEnvelope {
    data: SearchData,
}

/// The most candidates a search returns (`limit` default and maximum).
const SEARCH_LIMIT: usize = 100;

impl Expected {
    /// `None` when `body` is the answer expected, else what differs.
    pub fn check(&self, body: &[u8]) -> Option<String> {
        let got: SearchData = match serde_json::from_slice::<SearchEnvelope>(body) {
            Ok(e) => e.data,
            Err(e) => return Some(format!("undecodable answer: {e}")),
        };
        self.check_data(&got)
    }

    pub fn check_data(&self, got: &SearchData) -> Option<String> {
        let mut diffs = Vec::new();
        if got.match_confidence != self.confidence {
            diffs.push(format!(
                "match_confidence {} (expected {})",
                got.match_confidence, self.confidence
            ));
        }
        if let Some(s) = self.strategy {
            if got.match_strategy.as_deref() != Some(s) {
                diffs.push(format!(
                    "match_strategy {:?} (expected {s})",
                    got.match_strategy
                ));
            }
        }
        let persons: BTreeSet<String> =
            got.candidates.iter().map(|c| c.person_id.clone()).collect();
        let persons_ok = if self.persons.len() > SEARCH_LIMIT {
            persons.len() == SEARCH_LIMIT && persons.is_subset(&self.persons)
        } else {
            persons == self.persons
        };
        if !persons_ok {
            diffs.push(format!(
                "candidates' person_ids {persons:?} (expected {:?})",
                self.persons
            ));
        }
        let contacts: BTreeSet<String> = got.contacts.iter().map(|c| c.id.clone()).collect();
        if contacts != self.contacts {
            diffs.push(format!(
                "contacts {contacts:?} (expected {:?})",
                self.contacts
            ));
        }
        let companies: BTreeSet<String> = got.companies.iter().map(|c| c.id.clone()).collect();
        if companies != self.companies {
            diffs.push(format!(
                "companies {companies:?} (expected {:?})",
                self.companies
            ));
        }
        (!diffs.is_empty()).then(|| diffs.join("; "))
    }

    fn from_owners(ds: &Dataset, owners: &[Owner], strategy: Option<&'static str>) -> Self {
        let mut e = Expected {
            confidence: "none",
            strategy,
            persons: BTreeSet::new(),
            contacts: BTreeSet::new(),
            companies: BTreeSet::new(),
        };
        for o in owners {
            match *o {
                Owner::Person(i) => e.persons.insert(ds.persons[i as usize].clone()),
                Owner::Contact(i) => e.contacts.insert(ds.contacts[i as usize].clone()),
                Owner::Company(i) => e.companies.insert(ds.companies[i as usize].clone()),
            };
        }
        e.confidence = match e.persons.len() + e.contacts.len() {
            0 => "none",
            1 => "exact",
            _ => "ambiguous",
        };
        e
    }
}

/// One search to send and the answer it must get.
pub struct Lookup {
    /// `phone` or `email`.
    pub kind: &'static str,
    /// What a softphone would send, before percent-encoding.
    pub query: String,
    pub expected: Expected,
}

/// The harvested workspace.
#[derive(Default)]
pub struct Dataset {
    pub persons: Vec<String>,
    pub contacts: Vec<String>,
    pub companies: Vec<String>,
    pub candidate_rows: Vec<String>,
    /// The person (index into `persons`) of each candidate record.
    pub row_person: Vec<u32>,
    pub jobs: Vec<String>,
    pub active_user_emails: Vec<String>,
    /// Numbers someone holds, as the API shows them (companies' without extension).
    numbers: Vec<String>,
    /// Addresses someone holds, as stored.
    addresses: Vec<String>,
    by9: HashMap<u64, Vec<Owner>>,
    by8: HashMap<u64, Vec<Owner>>,
    by_email: HashMap<String, Vec<Owner>>,
}

fn push_owner(map: &mut HashMap<u64, Vec<Owner>>, k: u64, o: Owner) {
    let v = map.entry(k).or_default();
    if !v.contains(&o) {
        v.push(o);
    }
}

impl Dataset {
    /// Harvests the workspace behind `pool`'s key (a full sync of candidates, contacts,
    /// companies, jobs and users).
    pub async fn harvest(pool: &Pool) -> anyhow::Result<Self> {
        let candidates: Vec<CandidateIn> = fetch_all(pool, "candidates").await?;
        let contacts: Vec<ContactIn> = fetch_all(pool, "contacts").await?;
        let companies: Vec<CompanyIn> = fetch_all(pool, "companies").await?;
        let jobs: Vec<IdIn> = fetch_all(pool, "jobs").await?;
        let users: Vec<UserIn> = fetch_all(pool, "users").await?;
        let mut ds = Dataset {
            jobs: jobs.into_iter().map(|j| j.id).collect(),
            active_user_emails: users
                .into_iter()
                .filter(|u| u.active)
                .filter_map(|u| u.email)
                .collect(),
            ..Dataset::default()
        };
        let mut person_index: HashMap<String, u32> = HashMap::new();
        for c in candidates {
            let next = person_index.len() as u32;
            let p = *person_index.entry(c.person_id.clone()).or_insert(next);
            if p == next {
                ds.persons.push(c.person_id.clone());
            }
            ds.candidate_rows.push(c.id);
            ds.row_person.push(p);
            let numbers = [c.phone, c.mobile];
            ds.add(Owner::Person(p), numbers.iter().flatten(), &c.emails);
        }
        for c in contacts {
            let i = ds.contacts.len() as u32;
            ds.contacts.push(c.id);
            let numbers = [c.phone, c.mobile];
            ds.add(Owner::Contact(i), numbers.iter().flatten(), &c.emails);
        }
        for c in companies {
            let i = ds.companies.len() as u32;
            ds.companies.push(c.id);
            let number = c.phone.as_deref().map(|p| strip_extension(p).to_string());
            ds.add(Owner::Company(i), number.iter(), &[]);
        }
        ds.numbers.sort();
        ds.numbers.dedup();
        ds.addresses.sort();
        ds.addresses.dedup();
        Ok(ds)
    }

    fn add<'a>(
        &mut self,
        owner: Owner,
        numbers: impl Iterator<Item = &'a String>,
        emails: &[String],
    ) {
        for n in numbers {
            let d = digits(n);
            let Some((len, key)) = stored_key(&d) else {
                continue;
            };
            if len == 9 {
                push_owner(&mut self.by9, key, owner);
            }
            push_owner(&mut self.by8, key % 100_000_000, owner);
            self.numbers.push(n.clone());
        }
        for e in emails {
            let k = e.trim().to_lowercase();
            if k.is_empty() {
                continue;
            }
            let v = self.by_email.entry(k).or_default();
            if !v.contains(&owner) {
                v.push(owner);
            }
            self.addresses.push(e.clone());
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "{} people ({} candidate records), {} contacts, {} companies, {} jobs; {} numbers, {} addresses",
            self.persons.len(),
            self.candidate_rows.len(),
            self.contacts.len(),
            self.companies.len(),
            self.jobs.len(),
            self.numbers.len(),
            self.addresses.len()
        )
    }

    pub fn has_numbers(&self) -> bool {
        !self.numbers.is_empty()
    }

    /// The answer the API must give for phone query `q` (rules 1–4).
    pub fn expect_phone(&self, q: &str) -> Expected {
        let d = digits(q);
        if d.len() < 8 {
            return Expected {
                confidence: "invalid",
                strategy: Some("last9"),
                persons: BTreeSet::new(),
                contacts: BTreeSet::new(),
                companies: BTreeSet::new(),
            };
        }
        let tail: u64 = d[d.len().saturating_sub(9)..].parse().expect("digits");
        if d.len() >= 9 {
            if let Some(owners) = self.by9.get(&tail) {
                if owners.iter().any(|o| o.is_person()) {
                    return Expected::from_owners(self, owners, Some("last9"));
                }
            }
        }
        let owners = self
            .by8
            .get(&(tail % 100_000_000))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        Expected::from_owners(self, owners, Some("last8_fallback"))
    }

    /// The answer the API must give for e-mail query `q`.
    pub fn expect_email(&self, q: &str) -> Expected {
        let owners = self
            .by_email
            .get(&q.trim().to_lowercase())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        Expected::from_owners(self, owners, None)
    }

    /// A held number, typed the way a softphone might send it.
    pub fn known_phone(&self, rng: &mut SmallRng) -> Lookup {
        let n = self
            .numbers
            .choose(rng)
            .expect("the workspace holds numbers");
        let query = reformat(n, rng.gen());
        Lookup {
            kind: "phone",
            expected: self.expect_phone(&query),
            query,
        }
    }

    /// A UK mobile number whose last eight digits nobody holds (so neither pass finds
    /// anyone), in a random format.
    pub fn unknown_phone(&self, rng: &mut SmallRng) -> Lookup {
        loop {
            let nsn: u64 = 7_000_000_000 + rng.gen_range(0..1_000_000_000u64);
            if self.by8.contains_key(&(nsn % 100_000_000)) {
                continue;
            }
            let query = reformat(&format!("+44{nsn}"), rng.gen());
            let expected = self.expect_phone(&query);
            debug_assert_eq!(expected.confidence, "none");
            return Lookup {
                kind: "phone",
                query,
                expected,
            };
        }
    }

    /// An internal extension or a truncated number: fewer than eight digits.
    pub fn invalid_phone(&self, rng: &mut SmallRng) -> Lookup {
        let query = match rng.gen_range(0..3) {
            0 => format!("{}", rng.gen_range(100..10_000)),
            1 => format!("0{} {}", rng.gen_range(100..999), rng.gen_range(100..999)),
            _ => format!("ext. {}", rng.gen_range(10..99)),
        };
        Lookup {
            kind: "phone",
            expected: self.expect_phone(&query),
            query,
        }
    }

    pub fn has_addresses(&self) -> bool {
        !self.addresses.is_empty()
    }

    /// A held address, in the letter case a person might type it.
    pub fn known_email(&self, rng: &mut SmallRng) -> Lookup {
        let a = self
            .addresses
            .choose(rng)
            .expect("the workspace holds addresses");
        let query = match rng.gen_range(0..4) {
            0 => a.clone(),
            1 => a.to_uppercase(),
            2 => {
                let mut c = a.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect())
                    .unwrap_or_default()
            }
            _ => a
                .chars()
                .map(|c| {
                    if rng.gen_bool(0.5) {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect(),
        };
        Lookup {
            kind: "email",
            expected: self.expect_email(&query),
            query,
        }
    }

    pub fn unknown_email(&self, rng: &mut SmallRng) -> Lookup {
        let query = format!("nobody.{}@unknown.example", rng.gen::<u32>());
        Lookup {
            kind: "email",
            expected: self.expect_email(&query),
            query,
        }
    }
}

/// Splits `digits` into groups of the given sizes (the rest in a last group), joined by
/// `sep`.
fn group(digits: &str, sizes: &[usize], sep: &str) -> String {
    let mut out = Vec::new();
    let mut rest = digits;
    for &s in sizes {
        if rest.len() <= s {
            break;
        }
        let (a, b) = rest.split_at(s);
        out.push(a);
        rest = b;
    }
    out.push(rest);
    out.join(sep)
}

/// A number as another client would type it: international, national, with spaces,
/// brackets, dots and dashes. Every form ends in the same digits, so it has the same
/// key; `style` picks the form.
pub fn reformat(number: &str, style: u8) -> String {
    let d = digits(number);
    let intl = number.trim_start().starts_with('+');
    if intl && d.starts_with("44") && d.len() >= 11 {
        let nsn = &d[2..];
        return match style % 10 {
            0 => format!("+44 {}", group(nsn, &[4], " ")),
            1 => format!("0{}", group(nsn, &[4], " ")),
            2 => {
                let (a, b) = nsn.split_at(4);
                format!("(0{a}) {}", group(b, &[3], "-"))
            }
            3 => format!("0044 {}", group(nsn, &[4], " ")),
            4 => format!("+44 (0){}", group(nsn, &[4], " ")),
            5 => format!("+44{nsn}"),
            6 => format!("0{nsn}"),
            7 => format!("44{nsn}"),
            8 => format!("+44-{}", group(nsn, &[4, 3], "-")),
            _ => format!("tel:+44{nsn}"),
        };
    }
    if intl && d.starts_with('1') && d.len() == 11 {
        let nsn = &d[1..];
        let (area, rest) = nsn.split_at(3);
        let (exch, line) = rest.split_at(3);
        return match style % 6 {
            0 => format!("+1 ({area}) {exch}-{line}"),
            1 => format!("({area}) {exch}-{line}"),
            2 => format!("{area}.{exch}.{line}"),
            3 => format!("001 {area} {exch} {line}"),
            4 => format!("1-{area}-{exch}-{line}"),
            _ => format!("+1{nsn}"),
        };
    }
    if intl && d.starts_with("33") && d.len() == 11 {
        let nsn = &d[2..];
        let pairs = group(&nsn[1..], &[2, 2, 2], " ");
        return match style % 5 {
            0 => format!("+33 {} {pairs}", &nsn[..1]),
            1 => format!("0{} {pairs}", &nsn[..1]),
            2 => format!("0033 {nsn}"),
            3 => format!("+33{nsn}"),
            _ => format!("+33 (0){} {pairs}", &nsn[..1]),
        };
    }
    match style % 4 {
        0 if intl => format!("+{d}"),
        0 => d,
        1 => group(&d, &[3, 3, 3], " "),
        2 => format!("00{d}"),
        _ => group(&d, &[4, 3], "-"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last9(s: &str) -> String {
        let d = digits(s);
        d[d.len() - 9..].to_string()
    }

    #[test]
    fn every_format_keeps_the_key() {
        for n in [
            "+447700900123",
            "+442079460000",
            "+14155550100",
            "+33612345678",
            "0161 496 0000",
            "+49301234567",
        ] {
            for style in 0..=255u8 {
                let f = reformat(n, style);
                assert_eq!(last9(&f), last9(n), "{n} as {f}");
            }
        }
        assert_eq!(reformat("+447700900123", 0), "+44 7700 900123");
        assert_eq!(reformat("+447700900123", 1), "07700 900123");
        assert_eq!(reformat("+447700900123", 2), "(07700) 900-123");
        assert_eq!(reformat("+14155550100", 0), "+1 (415) 555-0100");
        assert_eq!(reformat("+33612345678", 0), "+33 6 12 34 56 78");
    }

    #[test]
    fn extensions_are_stripped() {
        assert_eq!(
            strip_extension("+1 (415) 555-0100 x12"),
            "+1 (415) 555-0100"
        );
        assert_eq!(strip_extension("020 7946 0000 ext. 4"), "020 7946 0000");
        assert_eq!(strip_extension("020 7946 0000#4"), "020 7946 0000");
        assert_eq!(strip_extension("020 7946 0000"), "020 7946 0000");
    }

    fn dataset() -> Dataset {
        let mut ds = Dataset {
            persons: vec!["p0".into(), "p1".into()],
            contacts: vec!["c0".into()],
            companies: vec!["o0".into(), "o1".into()],
            ..Dataset::default()
        };
        ds.add(
            Owner::Person(0),
            ["+447700900123".to_string()].iter(),
            &["Ann@Example.com".into()],
        );
        // Shares the last eight digits with p0 but not the ninth.
        ds.add(Owner::Person(1), ["+447600900123".to_string()].iter(), &[]);
        ds.add(
            Owner::Contact(0),
            ["+442079460000".to_string()].iter(),
            &["ann@example.com".into()],
        );
        ds.add(Owner::Company(0), ["+442079460000".to_string()].iter(), &[]);
        ds.add(Owner::Company(1), ["01614960000".to_string()].iter(), &[]);
        ds
    }

    #[test]
    fn rules_are_applied() {
        let ds = dataset();
        let e = ds.expect_phone("07700 900123");
        assert_eq!((e.confidence, e.strategy), ("exact", Some("last9")));
        assert_eq!(e.persons.len(), 1);
        // Nine digits that match nobody: the eight-digit pass finds both people.
        let e = ds.expect_phone("+44 7500 900123");
        assert_eq!(
            (e.confidence, e.strategy),
            ("ambiguous", Some("last8_fallback"))
        );
        // A contact and a company: one person, exact, company listed.
        let e = ds.expect_phone("020 7946 0000");
        assert_eq!(e.confidence, "exact");
        assert_eq!(e.companies.len(), 1);
        // A company alone: none, the fallback finds it again.
        let e = ds.expect_phone("0161 496 0000");
        assert_eq!((e.confidence, e.strategy), ("none", Some("last8_fallback")));
        assert_eq!(e.companies.len(), 1);
        // Eight digits only: the fallback.
        let e = ds.expect_phone("0090-0123");
        assert_eq!(e.strategy, Some("last8_fallback"));
        assert_eq!(ds.expect_phone("1234").confidence, "invalid");
        let e = ds.expect_email("ANN@example.COM");
        assert_eq!(e.confidence, "ambiguous");
        assert_eq!(ds.expect_email("bob@example.com").confidence, "none");
    }

    #[test]
    fn answers_are_checked() {
        let ds = dataset();
        let e = ds.expect_phone("07700 900123");
        let ok = br#"{"data":{"match_confidence":"exact","match_strategy":"last9","candidates":[{"person_id":"p0"}],"contacts":[],"companies":[]},"request_id":"r"}"#;
        assert_eq!(e.check(ok), None);
        let wrong = br#"{"data":{"match_confidence":"exact","match_strategy":"last9","candidates":[{"person_id":"p1"}],"contacts":[],"companies":[]},"request_id":"r"}"#;
        assert!(e.check(wrong).unwrap().contains("person_ids"));
        let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(1);
        for _ in 0..100 {
            let l = ds.unknown_phone(&mut rng);
            assert_eq!(l.expected.confidence, "none", "{}", l.query);
        }
    }
}
