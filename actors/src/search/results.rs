//! The matching rules of both search endpoints and their `data` objects.
//!
//! A search borrows one published state for its whole life: the lookup, the resolution of
//! owners to records and the serialisation all read the same consistent value, with no
//! lock and no copy of any record.

use super::index::Owner;
use super::keys::{forward, lower, PhoneQuery, KEY_DIGITS};
use crate::model::Company;
use crate::model::{candidate_owner, stage};
use crate::model::{CandidateRec, ContactRec};
use crate::state::WorkspaceState;
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::Serialize;
use smallvec::SmallVec;
use std::sync::Arc;
use uuid::Uuid;

/// Both search endpoints: `limit` default and maximum (applies to `candidates`).
pub const SEARCH_MAX_LIMIT: usize = 100;

/// Which pass produced a phone result (rules 1 and 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Last9,
    Last8Fallback,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Last9 => "last9",
            Strategy::Last8Fallback => "last8_fallback",
        }
    }
}

/// `match_confidence` (rule 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confidence {
    Exact,
    Ambiguous,
    None,
    Invalid,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Exact => "exact",
            Confidence::Ambiguous => "ambiguous",
            Confidence::None => "none",
            Confidence::Invalid => "invalid",
        }
    }

    fn of_people(n: usize) -> Confidence {
        match n {
            0 => Confidence::None,
            1 => Confidence::Exact,
            _ => Confidence::Ambiguous,
        }
    }
}

/// A matched person with their rows, the primary row first.
pub struct PersonHit<'a> {
    pub person_id: Uuid,
    pub rows: SmallVec<[&'a Arc<CandidateRec>; 4]>,
}

impl<'a> PersonHit<'a> {
    fn primary(&self) -> &'a CandidateRec {
        self.rows[0]
    }

    fn name(&self) -> Option<&'a str> {
        self.primary().name()
    }

    /// The person's recruiter: the first row (primary first) whose derived
    /// `owning_recruiter_id` is set — the primary's recorded owner if active, else a role's.
    fn owner(&self, ws: &WorkspaceState) -> Option<Uuid> {
        self.rows.iter().find_map(|r| candidate_owner(ws, r))
    }
}

/// Everyone a key matched, resolved to records and deduplicated.
#[derive(Default)]
pub struct Hits<'a> {
    pub persons: SmallVec<[PersonHit<'a>; 4]>,
    pub contacts: SmallVec<[&'a Arc<ContactRec>; 4]>,
    pub companies: SmallVec<[&'a Arc<Company>; 4]>,
}

impl<'a> Hits<'a> {
    /// Resolves owners (duplicates allowed) to visible records, each once, sorted by name
    /// then id so that answers are stable.
    fn resolve(ws: &'a WorkspaceState, mut owners: SmallVec<[Owner; 16]>) -> Self {
        owners.sort_unstable();
        owners.dedup();
        let mut hits = Hits::default();
        for o in owners {
            match o {
                Owner::Person(p) => {
                    let rows = ws.person_rows_ref(p);
                    if !rows.is_empty() {
                        hits.persons.push(PersonHit { person_id: p, rows });
                    }
                }
                Owner::Contact(id) => hits.contacts.extend(ws.contacts.get_visible(&id)),
                Owner::Company(id) => hits.companies.extend(ws.companies.get_visible(&id)),
            }
        }
        hits.persons
            .sort_by(|a, b| (a.name(), a.person_id).cmp(&(b.name(), b.person_id)));
        hits.contacts.sort_by(|a, b| {
            (a.raw.name.as_deref(), a.raw.id).cmp(&(b.raw.name.as_deref(), b.raw.id))
        });
        hits.companies
            .sort_by(|a, b| (a.name.as_deref(), a.id).cmp(&(b.name.as_deref(), b.id)));
        hits
    }

    /// People matched: candidate persons plus contacts, companies never (rule 4). Counted
    /// before `limit` trims the candidates array, so a trimmed answer is never `exact`.
    pub fn people(&self) -> usize {
        self.persons.len() + self.contacts.len()
    }

    fn any_person(owners: &[Owner]) -> bool {
        owners.iter().any(Owner::is_person)
    }
}

/// The outcome of `GET /v1/search/phone`, serialised as its `data`.
pub struct PhoneSearch<'a> {
    ws: &'a WorkspaceState,
    pub query: &'a str,
    /// The key used, written forwards; `None` when the query is invalid.
    pub match_key: Option<SmallVec<[u8; KEY_DIGITS]>>,
    pub strategy: Strategy,
    pub confidence: Confidence,
    pub hits: Hits<'a>,
    limit: usize,
}

pub const INVALID_REASON: &str =
    "the number has fewer than 8 digits; at least 8 are needed to match";

/// Finds who holds a number (rules 1–3): the last nine digits first, the last eight
/// when nine found no person or the number has only eight digits.
pub fn search_phone<'a>(ws: &'a WorkspaceState, query: &'a str, limit: usize) -> PhoneSearch<'a> {
    let q = PhoneQuery::new(query);
    let index = &ws.search.phone;
    let mut result = PhoneSearch {
        ws,
        query,
        match_key: None,
        strategy: Strategy::Last9,
        confidence: Confidence::Invalid,
        hits: Hits::default(),
        limit,
    };
    if let Some(nine) = q.nine() {
        let owners = index.get(nine);
        // "Nobody" means no person: a company alone does not stop the fallback, which
        // finds that company again anyway (its last nine digits end in the last eight).
        if Hits::any_person(owners) {
            result.match_key = Some(forward(nine));
            result.hits = Hits::resolve(ws, owners.iter().copied().collect());
            result.confidence = Confidence::of_people(result.hits.people());
            return result;
        }
    }
    let Some(eight) = q.eight() else {
        return result;
    };
    let mut owners: SmallVec<[Owner; 16]> = SmallVec::new();
    index.for_each_with_prefix(eight, |_, o| owners.extend_from_slice(o));
    result.match_key = Some(forward(eight));
    result.strategy = Strategy::Last8Fallback;
    result.hits = Hits::resolve(ws, owners);
    result.confidence = Confidence::of_people(result.hits.people());
    result
}

/// The outcome of `GET /v1/search/email`, serialised as its `data`.
pub struct EmailSearch<'a> {
    ws: &'a WorkspaceState,
    pub query: &'a str,
    pub confidence: Confidence,
    pub hits: Hits<'a>,
    limit: usize,
}

/// Finds who holds an address: the whole address, case-insensitively.
pub fn search_email<'a>(ws: &'a WorkspaceState, query: &'a str, limit: usize) -> EmailSearch<'a> {
    let key = lower(query.trim());
    let owners = ws.search.email.get(&key);
    let hits = Hits::resolve(ws, owners.iter().copied().collect());
    EmailSearch {
        ws,
        query,
        confidence: Confidence::of_people(hits.people()),
        hits,
        limit,
    }
}

fn email_of(raw: Option<&str>) -> Option<&str> {
    raw.filter(|e| !e.is_empty())
}

impl<'a> Hits<'a> {
    /// The `candidates` array of an answer: the first `limit` persons, their rows with
    /// their stages or without.
    fn persons_out<'h>(
        &'h self,
        ws: &'a WorkspaceState,
        limit: usize,
        with_stage: bool,
    ) -> PersonsOut<'a, 'h> {
        PersonsOut {
            ws,
            persons: &self.persons[..self.persons.len().min(limit)],
            with_stage,
        }
    }
}

/// The `candidates` array: one entry per person, trimmed to `limit`.
struct PersonsOut<'a, 'h> {
    ws: &'a WorkspaceState,
    persons: &'h [PersonHit<'a>],
    with_stage: bool,
}

impl Serialize for PersonsOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        array(s, self.persons, |p| {
            let primary = p.primary();
            PersonOut {
                person_id: p.person_id,
                name: p.name(),
                phone: primary.phone(),
                email: email_of(primary.email()),
                owning_recruiter_id: p.owner(self.ws),
                records: RowsOut {
                    ws: self.ws,
                    rows: &p.rows,
                    with_stage: self.with_stage,
                },
            }
        })
    }
}

/// Writes `items` as a JSON array, each as `out` shows it: the arrays of a search's
/// answer, written straight from the state without collecting their entries first.
fn array<'i, S: Serializer, T, O: Serialize>(
    s: S,
    items: &'i [T],
    out: impl Fn(&'i T) -> O,
) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(items.len()))?;
    for item in items {
        seq.serialize_element(&out(item))?;
    }
    seq.end()
}

#[derive(Serialize)]
struct PersonOut<'a, 'h> {
    person_id: Uuid,
    name: Option<&'a str>,
    phone: Option<&'a str>,
    email: Option<&'a str>,
    owning_recruiter_id: Option<Uuid>,
    records: RowsOut<'a, 'h>,
}

struct RowsOut<'a, 'h> {
    ws: &'a WorkspaceState,
    rows: &'h [&'a Arc<CandidateRec>],
    with_stage: bool,
}

impl Serialize for RowsOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        array(s, self.rows, |r| {
            let c: &CandidateRec = r;
            RowOut {
                candidate_row_id: c.id(),
                job_id: c.job_id(),
                is_primary_record: c.is_primary(),
                stage: self.with_stage.then(|| stage(self.ws, c).and_then(|s| s.0)),
            }
        })
    }
}

#[derive(Serialize)]
struct RowOut<'a> {
    candidate_row_id: Uuid,
    job_id: Option<Uuid>,
    is_primary_record: bool,
    /// Shown by a phone search only (`null` when the row has no stage); an email
    /// search's rows have no such member.
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<Option<&'a str>>,
}

struct ContactsOut<'a, 'h>(&'h [&'a Arc<ContactRec>]);

impl Serialize for ContactsOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        array(s, self.0, |c| ContactOut {
            id: c.raw.id,
            name: c.raw.name.as_deref(),
            phone: c.phone.as_deref(),
            email: email_of(c.raw.email.as_deref()),
            company_id: c.raw.company_id,
            // The stored owner as it stands, exactly as `GET /v1/contacts/{id}`.
            owning_recruiter_id: c.raw.owner_id,
        })
    }
}

#[derive(Serialize)]
struct ContactOut<'a> {
    id: Uuid,
    name: Option<&'a str>,
    phone: Option<&'a str>,
    email: Option<&'a str>,
    company_id: Uuid,
    owning_recruiter_id: Option<Uuid>,
}

struct CompaniesOut<'a, 'h>(&'h [&'a Arc<Company>]);

impl Serialize for CompaniesOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        array(s, self.0, |c| CompanyOut {
            id: c.id,
            name: c.name.as_deref(),
            phone: c.phone.as_deref(),
            owning_recruiter_id: c.owner_id,
        })
    }
}

#[derive(Serialize)]
struct CompanyOut<'a> {
    id: Uuid,
    name: Option<&'a str>,
    phone: Option<&'a str>,
    owning_recruiter_id: Option<Uuid>,
}

impl Serialize for PhoneSearch<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let invalid = self.confidence == Confidence::Invalid;
        let mut st = s.serialize_struct("PhoneSearch", 8)?;
        st.serialize_field("query", self.query)?;
        match &self.match_key {
            Some(k) => st.serialize_field(
                "match_key",
                std::str::from_utf8(k).expect("keys are ASCII digits"),
            )?,
            None => st.skip_field("match_key")?,
        }
        st.serialize_field("match_strategy", self.strategy.as_str())?;
        st.serialize_field("match_confidence", self.confidence.as_str())?;
        if invalid {
            st.serialize_field("reason", INVALID_REASON)?;
        } else {
            st.skip_field("reason")?;
        }
        st.serialize_field(
            "candidates",
            &self.hits.persons_out(self.ws, self.limit, true),
        )?;
        st.serialize_field("contacts", &ContactsOut(&self.hits.contacts))?;
        st.serialize_field("companies", &CompaniesOut(&self.hits.companies))?;
        st.end()
    }
}

impl Serialize for EmailSearch<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("EmailSearch", 4)?;
        st.serialize_field("query", self.query)?;
        st.serialize_field("match_confidence", self.confidence.as_str())?;
        st.serialize_field(
            "candidates",
            &self.hits.persons_out(self.ws, self.limit, false),
        )?;
        st.serialize_field("contacts", &ContactsOut(&self.hits.contacts))?;
        st.end()
    }
}
