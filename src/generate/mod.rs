//! Synthetic snapshot generator behind `recruitd generate --people N [--seed S]`.
//!
//! Produces one `recruit-snapshot/1` document (see `docs/snapshot-format.md`) that looks
//! like a real agency's data: realistic names, e-mails, titles and places; phone numbers
//! typed in many national and international formats, a few percent of them shared
//! between people; one primary candidate row per person plus 0–5 job rows; notes, tasks
//! and attachments (some private, some without bytes); users of every status.
//!
//! ## Determinism
//! Everything is drawn from ChaCha8 streams keyed by the seed, never from the clock or a
//! thread RNG, and nothing is written in hash-map order, so the same options give the
//! same bytes. Each person owns independent streams addressed by `(seed, purpose,
//! person index)`: that is what lets the generator re-derive a person cheaply instead of
//! remembering it.
//!
//! ## Scale
//! The output is streamed. Only the small organisation tables (users, stages, companies,
//! contacts, jobs: about a tenth of the people in rows) and the e-mail counters (bounded
//! by the name lists, not by the people) are kept in memory. Candidates are written
//! person by person; notes, tasks and attachments come later in the document, so they
//! are produced in further passes that regenerate each person from its stream rather
//! than buffering anything per person.

use actors::model::{
    CandidateSalary, Consent, Note, Outcome, ParentType, Task, TaskStatus, UserStatus, Workspace,
};
use actors::time::{Date, Stamp, CHANGE_TRACKING_START};
use base64::Engine as _;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use uuid::Uuid;

mod activity;
mod json;
mod people;
mod phones;
mod random;
mod shapes;
#[cfg(test)]
mod tests;
mod vocabulary;
mod world;

use json::*;
use people::*;
use phones::*;
use random::*;
use vocabulary::*;
use world::*;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerateOptions {
    pub people: usize,
    pub seed: u64,
    /// The workspace's id instead of the one the seed gives (everything else is the
    /// same): a second workspace of the same shape in one store.
    pub workspace_id: Option<Uuid>,
}

impl GenerateOptions {
    /// `people` people from `seed`, in the workspace the seed gives.
    pub fn new(people: usize, seed: u64) -> Self {
        GenerateOptions {
            people,
            seed,
            workspace_id: None,
        }
    }
}

/// How many records of each kind were written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenerateStats {
    pub workspace_id: Uuid,
    /// The e-mail of the workspace's owner, who can create its keys.
    pub owner_email: String,
    pub people: usize,
    pub candidate_rows: usize,
    pub companies: usize,
    pub contacts: usize,
    pub jobs: usize,
    pub notes: usize,
    pub tasks: usize,
    pub attachments: usize,
    pub users: usize,
}

/// Writes one complete `recruit-snapshot/1` document. `progress` is called now and then
/// with (people done, people total) so the CLI can draw a progress bar.
///
/// The document is written in several passes over the people (candidates, then their
/// notes, tasks and attachments); `progress` reports the overall work as a monotonic
/// share of `people`, each pass weighted by roughly its share of the output.
pub fn write_snapshot<W: Write>(
    opts: &GenerateOptions,
    out: W,
    progress: &mut dyn FnMut(usize, usize),
) -> io::Result<GenerateStats> {
    // Records are serialised token by token; a buffer here keeps that cheap even when
    // the caller hands over an unbuffered writer.
    let mut json = JsonOut {
        w: BufWriter::with_capacity(1 << 16, out),
        first: true,
    };
    let mut world = World::build(opts.seed, opts.people);
    if let Some(id) = opts.workspace_id {
        world.workspace_id = id;
    }
    let mut stats = GenerateStats {
        workspace_id: world.workspace_id,
        owner_email: world
            .users
            .iter()
            .find(|u| u.role == "owner" && u.status == UserStatus::Active)
            .map(|u| u.email.clone())
            .unwrap_or_default(),
        people: opts.people,
        users: world.users.len(),
        companies: world.companies.len(),
        contacts: world.contacts.len(),
        jobs: world.jobs.len(),
        ..GenerateStats::default()
    };
    let mut tracker = Progress::new(opts.people, progress);

    json.raw(b"{\"format\":\"recruit-snapshot/1\",\"workspace\":")?;
    json.value(&Workspace {
        id: world.workspace_id,
        name: Some(world.workspace_name.to_string()),
        default_region: Some("GB".to_string()),
    })?;
    world.write_org(&mut json)?;

    json.begin("candidates")?;
    let mut emails = EmailBook::default();
    for i in 0..opts.people {
        let p = world.person(i);
        let email = emails.assign(&p);
        let phones = world.person_phones(i);
        for row in &p.rows {
            json.item(&world.candidate_row(&p, row, &email, &phones))?;
        }
        stats.candidate_rows += p.rows.len();
        tracker.step(Pass::Candidates, i);
    }
    json.end()?;

    json.begin("notes")?;
    for i in 0..opts.people {
        stats.notes += world.person_notes(&world.person(i), &mut json)?;
        tracker.step(Pass::Notes, i);
    }
    stats.notes += world.org_notes(&mut json)?;
    json.end()?;

    json.begin("tasks")?;
    for i in 0..opts.people {
        stats.tasks += world.person_tasks(&world.person(i), &mut json)?;
        tracker.step(Pass::Tasks, i);
    }
    stats.tasks += world.org_tasks(&mut json)?;
    json.end()?;

    json.begin("attachments")?;
    for i in 0..opts.people {
        stats.attachments += world.person_attachments(&world.person(i), &mut json)?;
        tracker.step(Pass::Attachments, i);
    }
    stats.attachments += world.org_attachments(&mut json)?;
    json.end()?;

    json.raw(b"}\n")?;
    json.w.flush()?;
    json.w.into_inner().map_err(|e| e.into_error())?;
    tracker.finish();
    Ok(stats)
}

/// Convenience for tests and the demo: the snapshot as bytes.
pub fn snapshot_bytes(opts: &GenerateOptions) -> Vec<u8> {
    let mut out = Vec::new();
    write_snapshot(opts, &mut out, &mut |_, _| {}).expect("writing into a Vec cannot fail");
    out
}

/// `recruitd generate`: writes the snapshot to `out` (stdout when `None`), with a
/// progress bar on stderr when stderr is a terminal, then a one-line summary on stderr.
pub fn run_cli(opts: &GenerateOptions, out: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::IsTerminal as _;

    let started = std::time::Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(opts.people as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} generating [{bar:40}] {pos}/{len} people ({eta} left)",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar
    });
    let mut on_progress = |done: usize, _total: usize| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    };
    let stats = match out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = BufWriter::new(file);
            let stats = write_snapshot(opts, &mut w, &mut on_progress)
                .with_context(|| format!("writing {}", path.display()))?;
            w.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            stats
        }
        None => {
            let mut w = BufWriter::new(std::io::stdout().lock());
            let stats =
                write_snapshot(opts, &mut w, &mut on_progress).context("writing to stdout")?;
            w.flush().context("writing to stdout")?;
            stats
        }
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    crate::telemetry::logging::tell(
        crate::telemetry::logging::Severity::Info,
        format_args!(
        "generated {} people (seed {}): {} candidate rows, {} companies, {} contacts, {} jobs, \
         {} notes, {} tasks, {} attachments, {} users in {:.1}s{}",
        stats.people,
        opts.seed,
        stats.candidate_rows,
        stats.companies,
        stats.contacts,
        stats.jobs,
        stats.notes,
        stats.tasks,
        stats.attachments,
        stats.users,
        started.elapsed().as_secs_f64(),
        out.map(|p| format!(" -> {}", p.display()))
            .unwrap_or_default(),
        ),
    );
    crate::telemetry::logging::tell(
        crate::telemetry::logging::Severity::Info,
        format_args!(
            "workspace {}, owner {} (who creates keys: recruitd key create --workspace {} --created-by {})",
            stats.workspace_id, stats.owner_email, stats.workspace_id, stats.owner_email
        ),
    );
    Ok(())
}
