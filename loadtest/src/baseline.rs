//! The baseline: the same lookups and syncs as plain SQL against PostgreSQL, the way a
//! team would serve them without recruitd.
//!
//! The workspace is copied out of the running server (a full sync) into schema
//! `recruitd_baseline`: one table per entity holding each record's API JSON (`json`, so
//! it is returned as stored, with no re-encoding) with its id and `updated_at`, plus the
//! searchable columns: the reversed last nine digits of `phone` and `mobile` (`COLLATE
//! "C"` b-tree indexes, so a suffix match is an index range scan) and the lower-cased
//! e-mail. Lookups run the matching rules as SQL: one statement for the nine-digit key,
//! a second for the eight-digit fallback when the first found no person. Syncs are
//! keyset queries on an `(updated_at, id)` index. The client side decodes every answer
//! as it decodes recruitd's, and the same checks apply, so both systems are held to the
//! same results. The baseline talks to PostgreSQL directly: it pays no HTTP or TLS.

use crate::data::{self, Expected, Lookup, SearchData, ENTITIES};
use crate::http::Pool;
use anyhow::Context;
use serde::Deserialize;
use serde_json::value::RawValue;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet};

pub const SCHEMA: &str = "recruitd_baseline";

/// One measured run's worth of baseline: its connections belong to the client threads
/// of that run.
pub struct Pg {
    pool: PgPool,
    /// Records per entity, as loaded.
    pub counts: BTreeMap<String, u64>,
}

/// The fields of any entity the tables index; absent ones stay null.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RowIn {
    id: String,
    updated_at: String,
    person_id: Option<String>,
    name: Option<String>,
    phone: Option<String>,
    mobile: Option<String>,
    emails: Vec<String>,
    job_id: Option<String>,
    company_id: Option<String>,
    is_primary_record: Option<bool>,
}

#[derive(Deserialize)]
struct RawPage<'a> {
    #[serde(borrow)]
    data: Vec<&'a RawValue>,
    next_cursor: Option<String>,
}

/// The search key of a stored number, reversed (last digit first); `None` under eight
/// digits. Companies' numbers are as entered, so their extension goes first.
fn reversed_key(number: &str, entity: &str) -> Option<String> {
    let number = if entity == "companies" {
        data::strip_extension(number)
    } else {
        number
    };
    let d: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
    (d.len() >= 8).then(|| d.iter().rev().take(9).collect())
}

fn csv_field(out: &mut String, v: Option<&str>) {
    if let Some(v) = v {
        out.push('"');
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    }
}

/// Creates the URL's database when the server has none of that name, connecting to its
/// `postgres` database to do so; when that is not allowed, says how to create it.
async fn ensure_database(url: &str) -> anyhow::Result<()> {
    use sqlx::postgres::PgConnectOptions;
    use sqlx::{ConnectOptions, Connection};
    use std::str::FromStr;
    let options = PgConnectOptions::from_str(url).context("the baseline's PostgreSQL URL")?;
    let database = options
        .get_database()
        .map(str::to_string)
        .unwrap_or_else(|| options.get_username().to_string());
    let missing = match options.connect().await {
        Ok(conn) => {
            conn.close().await.ok();
            return Ok(());
        }
        // 3D000: invalid_catalog_name, "database … does not exist".
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("3D000") => e.to_string(),
        Err(e) => {
            return Err(anyhow::anyhow!(e).context(format!(
                "connecting to the baseline PostgreSQL at {}:{}",
                options.get_host(),
                options.get_port()
            )))
        }
    };
    let how = format!(
        "{missing}; create it (e.g. `createdb -h {} -p {} -U {} {database}`) or name one that exists",
        options.get_host(),
        options.get_port(),
        options.get_username()
    );
    let mut admin = options
        .clone()
        .database("postgres")
        .connect()
        .await
        .with_context(|| how.clone())?;
    let quoted = format!("\"{}\"", database.replace('"', "\"\""));
    sqlx::raw_sql(&format!("CREATE DATABASE {quoted}"))
        .execute(&mut admin)
        .await
        .with_context(|| how.clone())?;
    admin.close().await.ok();
    eprintln!("created the baseline database {database}");
    Ok(())
}

impl Pg {
    /// Connects and copies the workspace behind `api` into the baseline schema.
    pub async fn load(url: &str, api: &Pool, connections: u32) -> anyhow::Result<Self> {
        ensure_database(url).await?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(url)
            .await
            .with_context(|| "connecting to the baseline PostgreSQL".to_string())?;
        sqlx::raw_sql(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA};"
        ))
        .execute(&pool)
        .await?;
        let mut counts = BTreeMap::new();
        for entity in ENTITIES {
            sqlx::raw_sql(&format!(
                "CREATE TABLE {SCHEMA}.{entity} (
                    id text PRIMARY KEY, updated_at timestamptz NOT NULL, doc json NOT NULL,
                    person_id text, name text, phone text, email_lc text, job_id text,
                    company_id text, is_primary boolean,
                    phone_rev text COLLATE \"C\", mobile_rev text COLLATE \"C\")"
            ))
            .execute(&pool)
            .await?;
            let n = Self::copy_entity(&pool, api, entity).await?;
            counts.insert(entity.to_string(), n);
        }
        // Indexes after the data, as a bulk load would; then fresh statistics.
        let mut ddl = String::new();
        for entity in ENTITIES {
            ddl += &format!("CREATE INDEX ON {SCHEMA}.{entity} (updated_at, id);");
        }
        for entity in ["candidates", "contacts", "companies"] {
            ddl += &format!(
                "CREATE INDEX ON {SCHEMA}.{entity} (phone_rev);
                 CREATE INDEX ON {SCHEMA}.{entity} (mobile_rev);
                 CREATE INDEX ON {SCHEMA}.{entity} (email_lc);"
            );
        }
        ddl += &format!("CREATE INDEX ON {SCHEMA}.candidates (person_id); ANALYZE;");
        sqlx::raw_sql(&ddl).execute(&pool).await?;
        pool.close().await;
        // The measured run's connections open lazily, on the client threads that use
        // them (a connection is driven by the thread that opened it).
        let pool = PgPoolOptions::new()
            .max_connections(connections.clamp(1, 64))
            .connect_lazy(url)?;
        Ok(Pg { pool, counts })
    }

    async fn copy_entity(pool: &PgPool, api: &Pool, entity: &str) -> anyhow::Result<u64> {
        let mut conn = pool.acquire().await?;
        let mut copy = conn
            .copy_in_raw(&format!(
                "COPY {SCHEMA}.{entity} (id, updated_at, doc, person_id, name, phone, email_lc,
                 job_id, company_id, is_primary, phone_rev, mobile_rev) FROM STDIN (FORMAT csv)"
            ))
            .await?;
        let mut cursor: Option<String> = None;
        let mut n = 0u64;
        loop {
            let path = match &cursor {
                None => format!("/v1/{entity}?limit=500"),
                Some(c) => format!("/v1/{entity}?limit=500&cursor={}", crate::http::encode(c)),
            };
            let a = api
                .send(hyper::Method::GET, &path, None)
                .await
                .map_err(|e| anyhow::anyhow!("GET {path}: {e}"))?;
            anyhow::ensure!(a.status == 200, "GET {path}: HTTP {}", a.status);
            let page: RawPage = serde_json::from_slice(&a.body)?;
            let mut buf = String::with_capacity(a.body.len() * 2);
            for raw in &page.data {
                let r: RowIn = serde_json::from_str(raw.get())?;
                let email = r.emails.first().map(|e| e.trim().to_lowercase());
                let phone_rev = r.phone.as_deref().and_then(|p| reversed_key(p, entity));
                let mobile_rev = r.mobile.as_deref().and_then(|p| reversed_key(p, entity));
                let fields: [Option<&str>; 12] = [
                    Some(&r.id),
                    Some(&r.updated_at),
                    Some(raw.get()),
                    r.person_id.as_deref(),
                    r.name.as_deref(),
                    r.phone.as_deref(),
                    email.as_deref(),
                    r.job_id.as_deref(),
                    r.company_id.as_deref(),
                    r.is_primary_record.map(|b| if b { "t" } else { "f" }),
                    phone_rev.as_deref(),
                    mobile_rev.as_deref(),
                ];
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        buf.push(',');
                    }
                    csv_field(&mut buf, *f);
                }
                buf.push('\n');
                n += 1;
            }
            copy.send(buf.into_bytes()).await?;
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        copy.finish().await?;
        Ok(n)
    }

    /// A search as the baseline answers it, in the shape of the API's `data`.
    pub async fn search(&self, l: &Lookup) -> Result<SearchData, sqlx::Error> {
        if l.kind == "email" {
            let key = l.query.trim().to_lowercase();
            let rows = sqlx::query(&format!(
                "SELECT 'p' AS kind, c.person_id AS id, c.id AS row_id, c.name, c.phone,
                        c.email_lc, c.job_id, c.is_primary
                   FROM {SCHEMA}.candidates c
                  WHERE c.person_id IN (SELECT person_id FROM {SCHEMA}.candidates WHERE email_lc = $1)
                 UNION ALL
                 SELECT 'c', id, NULL, name, phone, email_lc, company_id, NULL
                   FROM {SCHEMA}.contacts WHERE email_lc = $1"
            ))
            .bind(&key)
            .fetch_all(&self.pool)
            .await?;
            return Ok(Self::answer(&rows, None));
        }
        let d: Vec<char> = l.query.chars().filter(char::is_ascii_digit).collect();
        if d.len() < 8 {
            return Ok(SearchData {
                match_confidence: "invalid".into(),
                match_strategy: Some("last9".into()),
                candidates: vec![],
                contacts: vec![],
                companies: vec![],
            });
        }
        let rev: String = d.iter().rev().take(9).collect();
        if rev.len() == 9 {
            let rows = self.phone_rows(&rev).await?;
            if rows.iter().any(|r| r.get::<&str, _>("kind") != "o") {
                return Ok(Self::answer(&rows, Some("last9")));
            }
        }
        let rows = self.phone_rows(&rev[..8]).await?;
        Ok(Self::answer(&rows, Some("last8_fallback")))
    }

    /// Everyone whose reversed key starts with `prefix` (a nine-digit prefix is the
    /// whole key).
    async fn phone_rows(&self, prefix: &str) -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
        // Keys are digits, so the range [prefix, prefix + ":") is the prefix match.
        let hi = format!("{prefix}:");
        sqlx::query(&format!(
            "WITH p AS (
                SELECT person_id FROM {SCHEMA}.candidates WHERE phone_rev >= $1 AND phone_rev < $2
                UNION
                SELECT person_id FROM {SCHEMA}.candidates WHERE mobile_rev >= $1 AND mobile_rev < $2)
             SELECT 'p' AS kind, c.person_id AS id, c.id AS row_id, c.name, c.phone, c.email_lc,
                    c.job_id, c.is_primary
               FROM {SCHEMA}.candidates c WHERE c.person_id IN (SELECT person_id FROM p)
             UNION ALL
             SELECT 'c', id, NULL, name, phone, email_lc, company_id, NULL FROM {SCHEMA}.contacts
              WHERE (phone_rev >= $1 AND phone_rev < $2) OR (mobile_rev >= $1 AND mobile_rev < $2)
             UNION ALL
             SELECT 'o', id, NULL, name, phone, NULL, NULL, NULL FROM {SCHEMA}.companies
              WHERE phone_rev >= $1 AND phone_rev < $2"
        ))
        .bind(prefix)
        .bind(&hi)
        .fetch_all(&self.pool)
        .await
    }

    fn answer(rows: &[sqlx::postgres::PgRow], strategy: Option<&str>) -> SearchData {
        let mut persons = BTreeSet::new();
        let mut contacts = BTreeSet::new();
        let mut companies = BTreeSet::new();
        for r in rows {
            let id: String = r.get("id");
            // Read the columns a caller would show, as the API's answer carries them.
            let _name: Option<&str> = r.get("name");
            let _phone: Option<&str> = r.get("phone");
            match r.get::<&str, _>("kind") {
                "p" => persons.insert(id),
                "c" => contacts.insert(id),
                _ => companies.insert(id),
            };
        }
        let people = persons.len() + contacts.len();
        SearchData {
            match_confidence: match people {
                0 => "none",
                1 => "exact",
                _ => "ambiguous",
            }
            .into(),
            match_strategy: strategy.map(str::to_string),
            candidates: persons
                .into_iter()
                .map(|person_id| data::PersonOut { person_id })
                .collect(),
            contacts: contacts.into_iter().map(|id| data::IdOut { id }).collect(),
            companies: companies.into_iter().map(|id| data::IdOut { id }).collect(),
        }
    }

    /// One keyset page: records' JSON in (`updated_at`, id) order, and the position of
    /// the last one (the next page's cursor).
    pub async fn page(
        &self,
        entity: &str,
        since: Option<&str>,
        after: Option<&(String, String)>,
        limit: u32,
    ) -> Result<(Vec<String>, Option<(String, String)>), sqlx::Error> {
        debug_assert!(ENTITIES.contains(&entity));
        let since_clause = if since.is_some() {
            "AND updated_at >= $3::timestamptz"
        } else {
            ""
        };
        let sql = match after {
            None if since.is_some() => format!(
                "SELECT updated_at::text AS u, id, doc::text AS doc FROM {SCHEMA}.{entity}
                  WHERE updated_at >= $1::timestamptz ORDER BY updated_at, id LIMIT $2"
            ),
            None => format!(
                "SELECT updated_at::text AS u, id, doc::text AS doc FROM {SCHEMA}.{entity}
                  ORDER BY updated_at, id LIMIT $1"
            ),
            Some(_) => format!(
                "SELECT updated_at::text AS u, id, doc::text AS doc FROM {SCHEMA}.{entity}
                  WHERE (updated_at, id) > ($1::timestamptz, $2) {since_clause}
                  ORDER BY updated_at, id LIMIT {limit}"
            ),
        };
        let mut q = sqlx::query(&sql);
        q = match (after, since) {
            (None, Some(s)) => q.bind(s).bind(limit as i64),
            (None, None) => q.bind(limit as i64),
            (Some((u, id)), s) => {
                let q = q.bind(u).bind(id);
                match s {
                    Some(s) => q.bind(s),
                    None => q,
                }
            }
        };
        let rows = q.fetch_all(&self.pool).await?;
        let next = (rows.len() == limit as usize).then(|| {
            let last = rows.last().expect("a full page");
            (last.get::<String, _>("u"), last.get::<String, _>("id"))
        });
        let docs = rows
            .into_iter()
            .map(|r| r.get::<String, _>("doc"))
            .collect();
        Ok((docs, next))
    }
}

/// Checks a baseline answer as a recruitd answer is checked.
pub fn check(expected: &Expected, got: &SearchData) -> Option<String> {
    expected.check_data(got)
}
