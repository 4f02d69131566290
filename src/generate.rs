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

use actors::time::{Stamp, CHANGE_TRACKING_START};
use base64::Engine as _;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Serialize, Serializer};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use uuid::Uuid;

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
    json.value(&WorkspaceOut {
        id: world.workspace_id,
        name: world.workspace_name,
        default_region: "GB",
    })?;
    world.write_org(&mut json)?;

    json.begin("candidates")?;
    let mut emails = EmailBook::default();
    for i in 0..opts.people {
        let p = world.person(i);
        let email = emails.assign(&p);
        let phones = world.person_phones(i);
        for row in &p.rows {
            json.item(&CandidateOut::new(&world, &p, row, &email, &phones))?;
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
    crate::logging::tell(
        crate::logging::Severity::Info,
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
    crate::logging::tell(
        crate::logging::Severity::Info,
        format_args!(
            "workspace {}, owner {} (who creates keys: recruitd key create --workspace {} --created-by {})",
            stats.workspace_id, stats.owner_email, stats.workspace_id, stats.owner_email
        ),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Output plumbing
// ---------------------------------------------------------------------------------------

/// Compact JSON written piece by piece: the document skeleton by hand, each record with
/// serde_json, so no more than one record is ever held.
struct JsonOut<W: Write> {
    w: BufWriter<W>,
    first: bool,
}

impl<W: Write> JsonOut<W> {
    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.w.write_all(b)
    }

    fn value<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        serde_json::to_writer(&mut self.w, v).map_err(io::Error::from)
    }

    fn begin(&mut self, array: &str) -> io::Result<()> {
        self.first = true;
        write!(self.w, ",\"{array}\":[")
    }

    fn item<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",")?;
        }
        self.first = false;
        self.value(v)
    }

    fn end(&mut self) -> io::Result<()> {
        self.w.write_all(b"]")
    }
}

#[derive(Clone, Copy)]
enum Pass {
    Candidates,
    Notes,
    Tasks,
    Attachments,
}

impl Pass {
    /// (start, width) of the pass in per-mille of the whole run, roughly its share of
    /// the bytes written, so the bar moves at an even pace.
    fn span(self) -> (u64, u64) {
        match self {
            Pass::Candidates => (0, 560),
            Pass::Notes => (560, 220),
            Pass::Tasks => (780, 60),
            Pass::Attachments => (840, 160),
        }
    }
}

struct Progress<'a> {
    total: usize,
    report: &'a mut dyn FnMut(usize, usize),
}

impl<'a> Progress<'a> {
    fn new(total: usize, report: &'a mut dyn FnMut(usize, usize)) -> Self {
        report(0, total);
        Progress { total, report }
    }

    fn step(&mut self, pass: Pass, i: usize) {
        if i % 4096 != 4095 {
            return;
        }
        let (start, width) = pass.span();
        let permille = start as u128 * self.total as u128 + width as u128 * (i as u128 + 1);
        let done = (permille / 1000) as usize;
        (self.report)(done.min(self.total), self.total);
    }

    fn finish(&mut self) {
        (self.report)(self.total, self.total);
    }
}

// ---------------------------------------------------------------------------------------
// Randomness, ids and time
// ---------------------------------------------------------------------------------------

/// Independent stream families; a person's data in one family never depends on draws
/// made in another, which keeps re-derivation exact.
#[derive(Clone, Copy)]
#[repr(u64)]
enum Family {
    World = 1,
    Person = 2,
    Phone = 3,
    Notes = 4,
    Tasks = 5,
    Attachments = 6,
    OrgNotes = 7,
    OrgTasks = 8,
    OrgAttachments = 9,
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn stream(seed: u64, family: Family, index: u64) -> ChaCha8Rng {
    let mut state = seed ^ (family as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix(&mut state).to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(index);
    rng
}

/// A version-4 UUID from the stream (never from the OS).
fn uuid(rng: &mut ChaCha8Rng) -> Uuid {
    uuid::Builder::from_random_bytes(rng.gen()).into_uuid()
}

const DAY: i64 = 86_400_000;
/// 2025-06-01T00:00:00Z: the oldest record.
const START: i64 = 1_748_736_000_000;
/// 2026-11-01T00:00:00Z: "now" for the generated workspace.
const END: i64 = 1_793_491_200_000;
/// Edits before this are not tracked by the product (`updated_at` stays `created_at`).
const TRACK: i64 = CHANGE_TRACKING_START.millis();

fn between(rng: &mut ChaCha8Rng, lo: i64, hi: i64) -> i64 {
    if hi <= lo {
        lo
    } else {
        rng.gen_range(lo..hi)
    }
}

/// `updated_at` for a record created at `created`: unchanged with probability `same`,
/// else one later edit. Edits land after the change-tracking start, because the product
/// reports older edits as `updated_at == created_at` anyway.
fn updated(rng: &mut ChaCha8Rng, created: i64, same: f64) -> i64 {
    if rng.gen_bool(same) {
        return created;
    }
    let lo = (created + 1).max(TRACK);
    if lo >= END {
        created
    } else {
        rng.gen_range(lo..END)
    }
}

/// `updated_at` after an event (a completion, a rejection) at `at`.
fn touched(created: i64, at: i64) -> i64 {
    if at < TRACK {
        created
    } else {
        at.max(created)
    }
}

fn stamp(ms: i64) -> Stamp {
    Stamp::from_millis(ms)
}

/// A calendar day, serialised `YYYY-MM-DD`.
#[derive(Clone, Copy)]
struct Day(i64);

impl Serialize for Day {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 24];
        let iso = Stamp::from_millis(self.0).write_iso(&mut buf);
        s.serialize_str(&iso[..10])
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())]
}

/// Index into `weights` drawn with those relative weights.
fn weighted(rng: &mut ChaCha8Rng, weights: &[u32]) -> usize {
    let total: u32 = weights.iter().sum();
    let mut x = rng.gen_range(0..total);
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

// ---------------------------------------------------------------------------------------
// Built-in vocabulary
// ---------------------------------------------------------------------------------------

const FIRST_NAMES: &[&str] = &[
    "Oliver",
    "Amelia",
    "George",
    "Isla",
    "Harry",
    "Ava",
    "Noah",
    "Mia",
    "Jack",
    "Ivy",
    "Leo",
    "Lily",
    "Arthur",
    "Sophia",
    "Muhammad",
    "Grace",
    "Oscar",
    "Freya",
    "Charlie",
    "Florence",
    "Jacob",
    "Evie",
    "Thomas",
    "Poppy",
    "Henry",
    "Rosie",
    "James",
    "Emily",
    "William",
    "Chloé",
    "Alfie",
    "Zoë",
    "Joshua",
    "Hannah",
    "Daniel",
    "Sarah",
    "Samuel",
    "Priya",
    "Aarav",
    "Aisha",
    "Mohammed",
    "Fatima",
    "Ravi",
    "Anjali",
    "Chen",
    "Mei",
    "Tomasz",
    "Agnieszka",
    "José",
    "Lucía",
    "Siobhán",
    "Ciarán",
    "Björn",
    "Ingrid",
    "Kwame",
    "Adaeze",
    "Rhys",
    "Carys",
    "Ewan",
    "Morag",
    "Dominic",
    "Rebecca",
    "Matteo",
    "Giulia",
    "Luca",
    "Nadia",
];

const LAST_NAMES: &[&str] = &[
    "Smith",
    "Jones",
    "Taylor",
    "Brown",
    "Williams",
    "Wilson",
    "Johnson",
    "Davies",
    "Patel",
    "Robinson",
    "Wright",
    "Thompson",
    "Evans",
    "Walker",
    "White",
    "Roberts",
    "Green",
    "Hall",
    "Wood",
    "Jackson",
    "Clarke",
    "Khan",
    "Ahmed",
    "Singh",
    "Lewis",
    "Harris",
    "Martin",
    "Cooper",
    "Hughes",
    "Edwards",
    "Turner",
    "Lambert",
    "O'Brien",
    "McDonald",
    "MacLeod",
    "Nowak",
    "Kowalski",
    "Müller",
    "García",
    "Rossi",
    "Okafor",
    "Mensah",
    "Nguyen",
    "Wang",
    "Kaur",
    "Begum",
    "Hussain",
    "Campbell",
    "Stewart",
    "Murphy",
    "Kelly",
    "Byrne",
    "Smith-Jones",
    "Fitzgerald",
    "Morgan",
    "Price",
    "Bennett",
    "Shaw",
    "Chapman",
    "Ellis",
    "Fernandes",
    "da Silva",
    "Andersson",
    "Lindqvist",
];

const JOB_TITLES: &[&str] = &[
    "Software Engineer",
    "Senior Software Engineer",
    "Platform Engineer",
    "Site Reliability Engineer",
    "Data Engineer",
    "Data Scientist",
    "Frontend Developer",
    "Full Stack Developer",
    "DevOps Engineer",
    "QA Engineer",
    "Engineering Manager",
    "Product Manager",
    "Product Designer",
    "UX Researcher",
    "Business Analyst",
    "Project Manager",
    "Scrum Master",
    "IT Support Analyst",
    "Network Engineer",
    "Cyber Security Analyst",
    "Solutions Architect",
    "Finance Manager",
    "Management Accountant",
    "Credit Controller",
    "Payroll Administrator",
    "HR Business Partner",
    "Talent Acquisition Partner",
    "Marketing Executive",
    "Digital Marketing Manager",
    "Content Writer",
    "Account Manager",
    "Business Development Manager",
    "Sales Executive",
    "Customer Success Manager",
    "Office Manager",
    "Executive Assistant",
    "Operations Manager",
    "Warehouse Supervisor",
    "Logistics Coordinator",
    "Procurement Specialist",
    "Legal Counsel",
    "Paralegal",
    "Registered Nurse",
    "Care Assistant",
    "Quantity Surveyor",
    "Site Manager",
    "Electrical Engineer",
    "Mechanical Engineer",
];

const CONTACT_TITLES: &[&str] = &[
    "Head of Engineering",
    "CTO",
    "HR Manager",
    "Head of Talent",
    "Talent Acquisition Lead",
    "Hiring Manager",
    "Finance Director",
    "Operations Director",
    "Managing Director",
    "People Partner",
    "Recruitment Coordinator",
    "Head of Product",
    "Office Manager",
    "Chief Executive",
];

const DEPARTMENTS: &[&str] = &[
    "Engineering",
    "People",
    "HR",
    "Finance",
    "Operations",
    "Product",
    "Talent Acquisition",
    "Sales",
    "Marketing",
    "IT",
];

const EMPLOYERS: &[&str] = &[
    "Contoso",
    "Fabrikam",
    "Tailspin Toys",
    "Wingtip Solutions",
    "Litware",
    "Adventure Works",
    "Proseware",
    "Lucerne Publishing",
    "Trey Research",
    "Coho Winery",
    "Alpine Ski House",
    "Blue Yonder Airlines",
    "Fourth Coffee",
    "Graphic Design Institute",
    "Humongous Insurance",
    "Margie's Travel",
    "Northwind Traders",
    "Southridge Video",
    "Wide World Importers",
    "Woodgrove Bank",
    "City Power & Light",
    "Consolidated Messenger",
    "NHS Trust",
    "Self-employed",
    "Freelance",
    "Between roles",
    "Tesco",
    "Barclays",
    "BT Group",
    "Capita",
    "Serco",
    "Deloitte",
    "Arup",
    "Ocado",
];

const LOCATIONS: &[&str] = &[
    "London",
    "London, UK",
    "Manchester",
    "Birmingham",
    "Leeds",
    "Glasgow",
    "Edinburgh",
    "Bristol",
    "Liverpool",
    "Sheffield",
    "Newcastle upon Tyne",
    "Nottingham",
    "Cardiff",
    "Belfast",
    "Cambridge",
    "Oxford",
    "Reading",
    "Brighton",
    "Milton Keynes",
    "Southampton",
    "Leicester",
    "York",
    "Aberdeen",
    "Remote (UK)",
    "Remote",
    "Hybrid - London",
    "Croydon",
    "Slough",
    "Dublin",
    "Paris",
    "Berlin",
    "Amsterdam",
    "New York, NY",
    "San Francisco, CA",
];

const MAIL_DOMAINS: &[&str] = &[
    "gmail.com",
    "outlook.com",
    "hotmail.co.uk",
    "yahoo.co.uk",
    "icloud.com",
    "btinternet.com",
    "hotmail.com",
    "live.co.uk",
    "protonmail.com",
    "sky.com",
    "me.com",
    "aol.com",
];
const MAIL_DOMAIN_WEIGHTS: &[u32] = &[38, 14, 12, 7, 7, 5, 5, 3, 3, 2, 2, 2];

const COMPANY_STEMS: &[&str] = &[
    "Northwind",
    "Bluebell",
    "Harbour",
    "Kestrel",
    "Meridian",
    "Oakridge",
    "Pennine",
    "Quayside",
    "Riverside",
    "Sterling",
    "Thistle",
    "Vantage",
    "Westbrook",
    "Ashdown",
    "Beacon",
    "Castlegate",
    "Dovetail",
    "Elmstead",
    "Foxglove",
    "Granite",
    "Highgate",
    "Ironbridge",
    "Juniper",
    "Kingsway",
    "Lakeland",
    "Millbrook",
    "Newhaven",
    "Orchard",
    "Parkside",
    "Redwood",
    "Saltire",
    "Tamar",
    "Union",
    "Victoria",
    "Wessex",
    "Yorkstone",
    "Albion",
    "Brunel",
    "Caledonia",
    "Fenwick",
];

const COMPANY_KINDS: &[&str] = &[
    "Logistics",
    "Health",
    "Software",
    "Analytics",
    "Engineering",
    "Consulting",
    "Foods",
    "Energy",
    "Capital",
    "Media",
    "Retail",
    "Homes",
    "Labs",
    "Systems",
    "Partners",
    "Group",
    "Technologies",
    "Insurance",
    "Legal",
    "Construction",
    "Care",
    "Digital",
    "Manufacturing",
    "Pharma",
];

const COMPANY_STATUSES: &[&str] = &["client", "prospect", "former client", "lead", "client"];

const AGENCY_NAMES: &[&str] = &[
    "Northwind Talent",
    "Bluebell Recruitment",
    "Harbour Search Partners",
    "Kestrel People",
    "Meridian Resourcing",
    "Thistle Talent",
    "Granite Recruitment",
    "Foxglove Search",
];

const USER_ROLES: &[&str] = &["recruiter", "recruiter", "recruiter", "admin", "researcher"];

const STAGE_TEMPLATE: &[(&str, &str, bool)] = &[
    // (name, stage_type, always present)
    ("Applied", "applied", true),
    ("Shortlisted", "screening", false),
    ("CV Sent", "screening", true),
    ("Phone Screen", "screening", false),
    ("First Interview", "interview", true),
    ("Final Interview", "interview", false),
    ("Offer", "offer", true),
    ("Placed", "placed", true),
];

const JOB_STATUSES: &[&str] = &["open", "on hold", "filled", "closed"];
const JOB_STATUS_WEIGHTS: &[u32] = &[55, 10, 20, 15];

const NOTE_TYPES: &[Option<&str>] = &[
    Some("call"),
    Some("call"),
    Some("email"),
    Some("meeting"),
    Some("interview feedback"),
    Some("general"),
    None,
    None,
];

const CANDIDATE_NOTE_TITLES: &[&str] = &[
    "Intro call",
    "Follow-up",
    "",
    "Interview feedback",
    "Reference check",
    "Left voicemail",
    "Availability",
    "Salary expectations",
    "",
];

const ORG_NOTE_TITLES: &[&str] = &[
    "Account review",
    "Call with hiring team",
    "",
    "Terms agreed",
    "Quarterly catch-up",
    "Feedback on shortlist",
];

const TASK_TITLES: &[&str] = &[
    "Call back",
    "Send interview prep",
    "Chase feedback",
    "Request references",
    "Update CV formatting",
    "Book second interview",
    "Check right to work",
    "Follow up on offer",
];

const ORG_TASK_TITLES: &[&str] = &[
    "Send terms of business",
    "Quarterly review call",
    "Chase invoice",
    "Arrange site visit",
    "Introduce new consultant",
];

// ---------------------------------------------------------------------------------------
// Phone numbers
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NumKind {
    UkMobile,
    London,
    UkCity,
    Us,
    Fr,
}

/// A phone number as a fact (its national significant number); how it is typed is
/// chosen separately by whoever enters it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct PhoneNum {
    kind: NumKind,
    nsn: u64,
}

/// Ways people type numbers: `#` takes the next digit of the national significant
/// number. Including formats that do not follow the national grouping is deliberate.
const UK_MOBILE_STYLES: &[&str] = &[
    "0#### ######",
    "0##########",
    "+44 #### ######",
    "0#### ### ###",
    "(0)####-### ###",
    "+44##########",
    "+44 (0)#### ######",
    "0044 #### ######",
    "0####-###-###",
    "0#### ######",
];
const LONDON_STYLES: &[&str] = &[
    "0## #### ####",
    "+44 (0)## #### ####",
    "0##########",
    "+44 ## #### ####",
    "(0##) #### ####",
    "0### ### ####",
    "+44##########",
];
const CITY_STYLES: &[&str] = &[
    "0### ### ####",
    "+44 ### ### ####",
    "(0###) #######",
    "0##########",
    "+44 (0)### ### ####",
];
const US_STYLES: &[&str] = &[
    "+1 (###) ###-####",
    "+1 ###.###.####",
    "+1 ###-###-####",
    "001 ### ### ####",
    "+1##########",
];
const FR_STYLES: &[&str] = &[
    "+33 # ## ## ## ##",
    "+33 (0)# ## ## ## ##",
    "0033 #########",
    "+33#########",
];
const EXTENSION_STYLES: &[&str] = &[" ext. ", " x", "#", " ext ", " Ext. "];

/// UK geographic area codes (without trunk 0) of large cities.
const UK_CITY_AREAS: &[u64] = &[161, 121, 113, 141, 131, 117, 151, 114, 191, 115, 116, 118];
/// Area codes for North American numbers.
const US_AREAS: &[u64] = &[415, 212, 646, 617, 312, 206, 512, 303, 213, 718];
/// UK mobile prefixes (after the 7) in allocated, valid ranges.
const UK_MOBILE_PREFIXES: &[u64] = &[71, 72, 73, 77, 78, 79, 740, 741, 742, 743, 744, 746, 747];

impl PhoneNum {
    fn random(rng: &mut ChaCha8Rng, kind: NumKind) -> PhoneNum {
        let nsn = match kind {
            NumKind::UkMobile => {
                // 07 followed by nine digits; keep to ranges the numbering plan
                // allocates, so the numbers validate like real ones.
                let p = pick(rng, UK_MOBILE_PREFIXES);
                if p >= 100 {
                    p * 10_000_000 + rng.gen_range(0..10_000_000)
                } else {
                    p * 100_000_000 + rng.gen_range(0..100_000_000)
                }
            }
            // 020 3xxx, 020 7xxx, 020 8xxx
            NumKind::London => {
                20_0000_0000
                    + [3u64, 7, 8][rng.gen_range(0..3)] * 1000_0000
                    + rng.gen_range(0..1000_0000)
            }
            NumKind::UkCity => {
                pick(rng, UK_CITY_AREAS) * 10_000_000 + rng.gen_range(2_000_000..10_000_000)
            }
            NumKind::Us => {
                let exchange = loop {
                    let e = rng.gen_range(200..1000u64);
                    if e % 100 != 11 {
                        break e;
                    }
                };
                pick(rng, US_AREAS) * 10_000_000 + exchange * 10_000 + rng.gen_range(0..10_000)
            }
            NumKind::Fr => 600_000_000 + rng.gen_range(0..100_000_000),
        };
        PhoneNum { kind, nsn }
    }

    fn styles(self) -> &'static [&'static str] {
        match self.kind {
            NumKind::UkMobile => UK_MOBILE_STYLES,
            NumKind::London => LONDON_STYLES,
            NumKind::UkCity => CITY_STYLES,
            NumKind::Us => US_STYLES,
            NumKind::Fr => FR_STYLES,
        }
    }

    /// The number typed in style `style` (taken modulo the kind's style count), with an
    /// optional extension.
    fn format(self, style: u8, ext: Option<(u8, u16)>) -> String {
        let styles = self.styles();
        let template = styles[style as usize % styles.len()];
        let digits = self.nsn.to_string();
        let mut it = digits.bytes();
        let mut out = String::with_capacity(template.len() + 10);
        for c in template.chars() {
            if c == '#' {
                out.push(it.next().map_or('0', char::from));
            } else {
                out.push(c);
            }
        }
        debug_assert!(it.next().is_none(), "template {template} too short");
        if let Some((ext_style, n)) = ext {
            out.push_str(EXTENSION_STYLES[ext_style as usize % EXTENSION_STYLES.len()]);
            let _ = write!(out, "{n}");
        }
        out
    }
}

/// How a holder types numbers: one style index and maybe an extension.
#[derive(Clone, Copy)]
struct Typed {
    num: PhoneNum,
    style: u8,
    ext: Option<(u8, u16)>,
}

impl Typed {
    fn new(rng: &mut ChaCha8Rng, num: PhoneNum, ext_chance: f64) -> Typed {
        let ext = rng.gen_bool(ext_chance).then(|| {
            (
                rng.gen_range(0..EXTENSION_STYLES.len() as u8),
                rng.gen_range(2..500u16),
            )
        });
        Typed {
            num,
            style: rng.gen(),
            ext,
        }
    }

    fn render(self) -> String {
        self.num.format(self.style, self.ext)
    }
}

fn random_personal_number(rng: &mut ChaCha8Rng) -> PhoneNum {
    let kind = match weighted(rng, &[74, 9, 8, 5, 4]) {
        0 => NumKind::UkMobile,
        1 => NumKind::London,
        2 => NumKind::UkCity,
        3 => NumKind::Us,
        _ => NumKind::Fr,
    };
    PhoneNum::random(rng, kind)
}

/// Where a person's numbers come from; sharing is what makes phone search interesting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Share {
    Own,
    /// Typed another candidate's number as their phone (household, shared line).
    PhoneOfPerson(usize),
    /// Their mobile is another candidate's phone.
    MobileIsPhoneOfPerson(usize),
    /// Also a client contact: typed that contact's number.
    PhoneOfContact(usize),
}

/// A person's numbers before sharing is resolved. Cheap to draw, so a donor's numbers
/// are re-derived on demand rather than remembered.
struct PhoneDraw {
    share: Share,
    phone: Option<Typed>,
    mobile: Option<Typed>,
}

/// The phone and mobile a candidate person carries, as typed.
struct Phones {
    phone: Option<String>,
    mobile: Option<String>,
}

// ---------------------------------------------------------------------------------------
// The organisation: users, stages, companies, contacts, jobs
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum UserStatus {
    Active,
    Invited,
    Removed,
}

struct UserRec {
    id: Uuid,
    name: String,
    email: String,
    role: &'static str,
    status: UserStatus,
    created: i64,
    updated: i64,
}

struct StageRec {
    id: Uuid,
    name: &'static str,
    stage_type: &'static str,
}

struct CompanyRec {
    id: Uuid,
    name: String,
    domain: String,
    switchboard: Option<Typed>,
    status: &'static str,
    archived: bool,
    owner: Option<usize>,
    linkedin: bool,
    created: i64,
    updated: i64,
}

struct ContactRec {
    id: Uuid,
    company: usize,
    name: String,
    email: Option<String>,
    phone: Option<Typed>,
    mobile: Option<Typed>,
    job_title: &'static str,
    department: Option<&'static str>,
    main: bool,
    owner: Option<usize>,
    linkedin: Option<String>,
    created: i64,
    updated: i64,
}

struct JobRec {
    id: Uuid,
    title: &'static str,
    position: String,
    company: Option<usize>,
    status: usize,
    archived: bool,
    careers: bool,
    salary: (u32, &'static str, &'static str),
    assigned: Option<usize>,
    created_by: usize,
    hiring_manager: Option<usize>,
    created: i64,
    updated: i64,
}

/// Everything shared by all people; small (about a tenth of the people in rows).
struct World {
    seed: u64,
    people: usize,
    workspace_id: Uuid,
    workspace_name: &'static str,
    slug: String,
    users: Vec<UserRec>,
    active: Vec<usize>,
    invited: Vec<usize>,
    removed: Vec<usize>,
    stages: Vec<StageRec>,
    /// Index in `stages` of the stage of type `placed` (placements land there).
    placed_stage: usize,
    job_status_ids: Vec<Uuid>,
    companies: Vec<CompanyRec>,
    contacts: Vec<ContactRec>,
    jobs: Vec<JobRec>,
}

fn ascii_fold(s: &str, out: &mut String) {
    for c in s.chars() {
        let c = match c {
            'á' | 'à' | 'â' | 'ä' | 'å' | 'ã' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'ø' | 'õ' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ñ' => 'n',
            'ç' => 'c',
            c => c.to_ascii_lowercase(),
        };
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            out.push(c);
        }
    }
}

/// Lower-case ASCII words joined by `-`, for storage paths and URLs.
fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    for part in s.split(|c: char| !c.is_alphanumeric() && c != '\'') {
        word.clear();
        ascii_fold(part, &mut word);
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    out
}

impl World {
    fn build(seed: u64, people: usize) -> World {
        let mut rng = stream(seed, Family::World, 0);
        let workspace_id = uuid(&mut rng);
        let workspace_name = pick(&mut rng, AGENCY_NAMES);
        let slug = slug(workspace_name);
        let mut world = World {
            seed,
            people,
            workspace_id,
            workspace_name,
            slug,
            users: Vec::new(),
            active: Vec::new(),
            invited: Vec::new(),
            removed: Vec::new(),
            stages: Vec::new(),
            placed_stage: 0,
            job_status_ids: Vec::new(),
            companies: Vec::new(),
            contacts: Vec::new(),
            jobs: Vec::new(),
        };
        world.build_users(&mut rng);
        world.build_stages(&mut rng);
        world.job_status_ids = JOB_STATUSES.iter().map(|_| uuid(&mut rng)).collect();
        world.build_companies(&mut rng);
        world.build_jobs(&mut rng);
        world
    }

    fn build_users(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 50).clamp(5, 200);
        let domain = format!("{}.co.uk", self.slug);
        let mut taken: HashMap<String, u32> = HashMap::new();
        for i in 0..count {
            let first = pick(rng, FIRST_NAMES);
            let last = pick(rng, LAST_NAMES);
            let mut local = String::new();
            ascii_fold(first, &mut local);
            local.push('.');
            ascii_fold(last, &mut local);
            let n = taken.entry(local.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                let _ = write!(local, "{n}");
            }
            // The owner is first and active; the last two slots are forced to the rarer
            // statuses so even a tiny workspace has one of each.
            let status = if i == 0 {
                UserStatus::Active
            } else if i == count - 1 {
                UserStatus::Removed
            } else if i == count - 2 {
                UserStatus::Invited
            } else {
                match weighted(rng, &[82, 9, 9]) {
                    0 => UserStatus::Active,
                    1 => UserStatus::Invited,
                    _ => UserStatus::Removed,
                }
            };
            let role = if i == 0 {
                "owner"
            } else {
                pick(rng, USER_ROLES)
            };
            let (created, updated) = match status {
                UserStatus::Active => {
                    let c = between(rng, START, END - 30 * DAY);
                    (c, updated(rng, c, 0.6))
                }
                // Never accepted, so never changed.
                UserStatus::Invited => {
                    let c = between(rng, TRACK, END - DAY);
                    (c, c)
                }
                UserStatus::Removed => {
                    let c = between(rng, START, TRACK - 30 * DAY);
                    (c, between(rng, TRACK, END - DAY))
                }
            };
            let idx = self.users.len();
            match status {
                UserStatus::Active => self.active.push(idx),
                UserStatus::Invited => self.invited.push(idx),
                UserStatus::Removed => self.removed.push(idx),
            }
            self.users.push(UserRec {
                id: uuid(rng),
                name: format!("{first} {last}"),
                email: format!("{local}@{domain}"),
                role,
                status,
                created,
                updated,
            });
        }
    }

    fn build_stages(&mut self, rng: &mut ChaCha8Rng) {
        // 5 mandatory stages plus 0–2 of the optional ones, in pipeline order.
        let optional: Vec<usize> = (0..STAGE_TEMPLATE.len())
            .filter(|i| !STAGE_TEMPLATE[*i].2)
            .collect();
        let keep = rng.gen_range(0..=2usize);
        let mut chosen = optional.clone();
        while chosen.len() > keep {
            chosen.remove(rng.gen_range(0..chosen.len()));
        }
        for (i, (name, stage_type, always)) in STAGE_TEMPLATE.iter().enumerate() {
            if *always || chosen.contains(&i) {
                if *stage_type == "placed" {
                    self.placed_stage = self.stages.len();
                }
                self.stages.push(StageRec {
                    id: uuid(rng),
                    name,
                    stage_type,
                });
            }
        }
    }

    fn build_companies(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 20).max(3);
        let mut names: HashMap<String, u32> = HashMap::new();
        for _ in 0..count {
            let name = format!("{} {}", pick(rng, COMPANY_STEMS), pick(rng, COMPANY_KINDS));
            // Several clients may share a trading name; their web domains may not.
            let seen = names.entry(name.clone()).or_insert(0);
            *seen += 1;
            let tld = pick(rng, &[".co.uk", ".co.uk", ".com", ".uk", ".io"]);
            let domain = if *seen == 1 {
                format!("{}{tld}", slug(&name))
            } else {
                format!("{}-{}{tld}", slug(&name), seen)
            };
            let switchboard = (!rng.gen_bool(0.04)).then(|| {
                let kind = match weighted(rng, &[45, 38, 8, 5, 4]) {
                    0 => NumKind::London,
                    1 => NumKind::UkCity,
                    2 => NumKind::Us,
                    3 => NumKind::Fr,
                    _ => NumKind::UkMobile,
                };
                let num = PhoneNum::random(rng, kind);
                Typed::new(rng, num, 0.02)
            });
            let created = between(rng, START, END - 30 * DAY);
            let company = self.companies.len();
            self.companies.push(CompanyRec {
                id: uuid(rng),
                name,
                domain,
                switchboard,
                status: pick(rng, COMPANY_STATUSES),
                archived: rng.gen_bool(0.1),
                owner: if rng.gen_bool(0.8) {
                    Some(self.pick_owner_user(rng))
                } else {
                    None
                },
                linkedin: rng.gen_bool(0.6),
                created,
                updated: updated(rng, created, 0.4),
            });
            self.build_contacts(rng, company);
        }
    }

    fn build_contacts(&mut self, rng: &mut ChaCha8Rng, company: usize) {
        let n = 1 + weighted(rng, &[40, 35, 25]);
        let main = rng.gen_range(0..n);
        let first_contact = self.contacts.len();
        let mut bases: Vec<String> = Vec::new();
        for k in 0..n {
            let first = pick(rng, FIRST_NAMES);
            let last = pick(rng, LAST_NAMES);
            let co = &self.companies[company];
            let mut local = String::new();
            ascii_fold(first, &mut local);
            local.push('.');
            ascii_fold(last, &mut local);
            // Names hold no digits, so a numbered local part cannot meet a plain one.
            let dup = bases.iter().filter(|b| **b == local).count();
            bases.push(local.clone());
            if dup > 0 {
                let _ = write!(local, "{}", dup + 1);
            }
            let email = (!rng.gen_bool(0.05)).then(|| format!("{local}@{}", co.domain));
            // Direct lines, the switchboard (often with an extension) or a colleague's
            // line: the shared numbers phone search has to cope with.
            let phone = match weighted(rng, &[81, 10, 4, 5]) {
                1 if co.switchboard.is_some() => {
                    let sb = co.switchboard.expect("checked");
                    Some(Typed::new(rng, sb.num, 0.5))
                }
                2 if k > 0 => self.contacts[first_contact + k - 1]
                    .phone
                    .map(|p| Typed::new(rng, p.num, 0.0)),
                3 => None,
                _ => {
                    let kind = match weighted(rng, &[40, 25, 30, 3, 2]) {
                        0 => NumKind::London,
                        1 => NumKind::UkCity,
                        2 => NumKind::UkMobile,
                        3 => NumKind::Us,
                        _ => NumKind::Fr,
                    };
                    let num = PhoneNum::random(rng, kind);
                    Some(Typed::new(rng, num, 0.03))
                }
            };
            let mobile = rng.gen_bool(0.5).then(|| {
                let num = PhoneNum::random(rng, NumKind::UkMobile);
                Typed::new(rng, num, 0.0)
            });
            let co_created = co.created;
            let created = between(rng, co_created, END - 7 * DAY);
            let linkedin = rng.gen_bool(0.4).then(|| {
                format!(
                    "https://www.linkedin.com/in/{}-{:x}",
                    slug(&format!("{first} {last}")),
                    rng.gen::<u32>() >> 8
                )
            });
            let owner = if rng.gen_bool(0.75) {
                Some(self.pick_owner_user(rng))
            } else {
                None
            };
            self.contacts.push(ContactRec {
                id: uuid(rng),
                company,
                name: format!("{first} {last}"),
                email,
                phone,
                mobile,
                job_title: pick(rng, CONTACT_TITLES),
                department: rng.gen_bool(0.8).then(|| pick(rng, DEPARTMENTS)),
                main: k == main,
                owner,
                linkedin,
                created,
                updated: updated(rng, created, 0.45),
            });
        }
    }

    fn build_jobs(&mut self, rng: &mut ChaCha8Rng) {
        let count = (self.people / 10).max(3);
        // Contacts are stored company by company; remember where each company's start.
        let mut first_contact = vec![0usize; self.companies.len() + 1];
        for (i, c) in self.contacts.iter().enumerate().rev() {
            first_contact[c.company] = i;
        }
        first_contact[self.companies.len()] = self.contacts.len();
        for _ in 0..count {
            let title = pick(rng, JOB_TITLES);
            let position = match rng.gen_range(0..10) {
                0 => format!("{title} (Contract)"),
                1 => format!("Senior {title}"),
                _ => title.to_string(),
            };
            let company = if rng.gen_bool(0.87) {
                Some(rng.gen_range(0..self.companies.len()))
            } else {
                None
            };
            let status = weighted(rng, JOB_STATUS_WEIGHTS);
            let archived = match JOB_STATUSES[status] {
                "filled" | "closed" => rng.gen_bool(0.7),
                _ => rng.gen_bool(0.03),
            };
            let salary = match weighted(rng, &[75, 20, 5]) {
                0 => (rng.gen_range(22..140u32) * 1000, "annual"),
                1 => (rng.gen_range(25..95u32) * 10, "daily"),
                _ => (rng.gen_range(12..60u32), "hourly"),
            };
            let currency = pick(rng, &["GBP", "GBP", "GBP", "GBP", "GBP", "EUR", "USD"]);
            let assigned = match weighted(rng, &[80, 5, 15]) {
                0 => Some(self.pick_active(rng)),
                1 => Some(self.pick_removed_or_active(rng)),
                _ => None,
            };
            let created_by = if rng.gen_bool(0.9) {
                self.pick_active(rng)
            } else {
                self.pick_removed_or_active(rng)
            };
            let hiring_manager = company.and_then(|c| {
                let (lo, hi) = (first_contact[c], first_contact[c + 1]);
                (hi > lo && rng.gen_bool(0.6)).then(|| rng.gen_range(lo..hi))
            });
            let created = between(rng, START, END - 14 * DAY);
            self.jobs.push(JobRec {
                id: uuid(rng),
                title,
                position,
                company,
                status,
                archived,
                careers: !archived && rng.gen_bool(0.45),
                salary: (salary.0, currency, salary.1),
                assigned,
                created_by,
                hiring_manager,
                created,
                updated: updated(rng, created, 0.3),
            });
        }
    }

    fn pick_active(&self, rng: &mut ChaCha8Rng) -> usize {
        pick(rng, &self.active)
    }

    fn pick_removed_or_active(&self, rng: &mut ChaCha8Rng) -> usize {
        if self.removed.is_empty() {
            self.pick_active(rng)
        } else {
            pick(rng, &self.removed)
        }
    }

    /// An owner as recorded on a company or contact: mostly a current member.
    fn pick_owner_user(&self, rng: &mut ChaCha8Rng) -> usize {
        match weighted(rng, &[90, 7, 3]) {
            0 => self.pick_active(rng),
            1 => self.pick_removed_or_active(rng),
            _ if !self.invited.is_empty() => pick(rng, &self.invited),
            _ => self.pick_active(rng),
        }
    }

    /// Author of a note: members, now and then one who has since left.
    fn pick_author(&self, rng: &mut ChaCha8Rng) -> usize {
        if rng.gen_bool(0.06) {
            self.pick_removed_or_active(rng)
        } else {
            self.pick_active(rng)
        }
    }

    fn user_id(&self, idx: usize) -> Uuid {
        self.users[idx].id
    }

    fn write_org<W: Write>(&self, json: &mut JsonOut<W>) -> io::Result<()> {
        json.begin("users")?;
        for u in &self.users {
            json.item(&UserOut {
                id: u.id,
                name: &u.name,
                email: &u.email,
                role: u.role,
                status: match u.status {
                    UserStatus::Active => "active",
                    UserStatus::Invited => "invited",
                    UserStatus::Removed => "removed",
                },
                created_at: stamp(u.created),
                updated_at: stamp(u.updated),
            })?;
        }
        json.end()?;

        json.begin("pipeline_stages")?;
        for s in &self.stages {
            json.item(s)?;
        }
        json.end()?;

        json.begin("companies")?;
        for c in &self.companies {
            let phone = c.switchboard.map(Typed::render);
            let website = format!("https://www.{}", c.domain);
            let linkedin = c
                .linkedin
                .then(|| format!("https://www.linkedin.com/company/{}", slug(&c.name)));
            json.item(&CompanyOut {
                id: c.id,
                name: &c.name,
                phone: phone.as_deref(),
                website_url: Some(&website),
                linkedin_url: linkedin.as_deref(),
                status: c.status,
                is_archived: c.archived,
                owner_id: c.owner.map(|u| self.user_id(u)),
                created_at: stamp(c.created),
                updated_at: stamp(c.updated),
            })?;
        }
        json.end()?;

        json.begin("contacts")?;
        for c in &self.contacts {
            let phone = c.phone.map(Typed::render);
            let mobile = c.mobile.map(Typed::render);
            json.item(&ContactOut {
                id: c.id,
                name: &c.name,
                email: c.email.as_deref(),
                phone: phone.as_deref(),
                mobile: mobile.as_deref(),
                job_title: Some(c.job_title),
                department: c.department,
                company_id: self.companies[c.company].id,
                linkedin_url: c.linkedin.as_deref(),
                is_main_contact: c.main,
                owner_id: c.owner.map(|u| self.user_id(u)),
                created_at: stamp(c.created),
                updated_at: stamp(c.updated),
            })?;
        }
        json.end()?;

        json.begin("jobs")?;
        for j in &self.jobs {
            json.item(&JobOut {
                id: j.id,
                title: j.title,
                position: &j.position,
                company_id: j.company.map(|c| self.companies[c].id),
                status: JOB_STATUSES[j.status],
                role_status_id: self.job_status_ids[j.status],
                is_archived: j.archived,
                on_careers_page: j.careers,
                salary: JobSalaryOut {
                    amount: j.salary.0,
                    currency: j.salary.1,
                    kind: j.salary.2,
                },
                assigned_recruiter_id: j.assigned.map(|u| self.user_id(u)),
                created_by: self.user_id(j.created_by),
                hiring_manager: j.hiring_manager.map(|c| self.contacts[c].name.as_str()),
                created_at: stamp(j.created),
                updated_at: stamp(j.updated),
            })?;
        }
        json.end()
    }
}

// ---------------------------------------------------------------------------------------
// People
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Placed,
    Rejected,
}

struct Row {
    id: Uuid,
    job: Option<usize>,
    stage: Option<usize>,
    outcome: Option<Outcome>,
    rejected_at: Option<i64>,
    owner: Option<usize>,
    created: i64,
    updated: i64,
}

#[derive(Serialize)]
struct SalaryOut {
    current_amount: Option<u32>,
    current_currency: Option<&'static str>,
    current_text: Option<String>,
    expected_amount: Option<u32>,
    expected_currency: Option<&'static str>,
    expected_text: Option<String>,
}

#[derive(Serialize)]
struct ConsentOut {
    status: Option<&'static str>,
    given_at: Option<Stamp>,
    requested_at: Option<Stamp>,
    expires_at: Option<Stamp>,
}

/// One candidate person, regenerated from its stream whenever needed.
struct Person {
    index: usize,
    id: Uuid,
    first: &'static str,
    last: &'static str,
    name: String,
    email_format: u8,
    email_domain: usize,
    has_email: bool,
    job_title: Option<&'static str>,
    company: Option<&'static str>,
    location: Option<&'static str>,
    linkedin: Option<String>,
    salary: SalaryOut,
    consent: ConsentOut,
    /// `rows[0]` is the primary row.
    rows: Vec<Row>,
}

fn salary_text(rng: &mut ChaCha8Rng, amount: u32, currency: &str, daily: bool) -> String {
    let sym = match currency {
        "EUR" => "€",
        "USD" => "$",
        _ => "£",
    };
    if daily {
        return match rng.gen_range(0..3) {
            0 => format!("{sym}{amount}/day"),
            1 => format!("{amount} per day"),
            _ => format!("{sym}{amount} p/d outside IR35"),
        };
    }
    let k = amount / 1000;
    match rng.gen_range(0..6) {
        0 => format!("{k}k"),
        1 => format!("{k}k + bonus"),
        2 => format!("{sym}{k},000"),
        3 => format!("{sym}{k}k plus benefits"),
        4 => format!("{}-{}k", k, k + 5),
        _ => "negotiable".to_string(),
    }
}

impl World {
    fn person(&self, index: usize) -> Person {
        let mut rng = stream(self.seed, Family::Person, index as u64);
        let rng = &mut rng;
        let id = uuid(rng);
        let first = pick(rng, FIRST_NAMES);
        let last = pick(rng, LAST_NAMES);
        let name = match rng.gen_range(0..40) {
            0 => format!("{} {}", first.to_uppercase(), last),
            1 => format!("{first}  {last}"),
            _ => format!("{first} {last}"),
        };
        let email_format = rng.gen_range(0..6u8);
        let email_domain = weighted(rng, MAIL_DOMAIN_WEIGHTS);
        let has_email = !rng.gen_bool(0.04);
        let job_title = (!rng.gen_bool(0.05)).then(|| pick(rng, JOB_TITLES));
        let company = (!rng.gen_bool(0.15)).then(|| pick(rng, EMPLOYERS));
        let location = (!rng.gen_bool(0.08)).then(|| pick(rng, LOCATIONS));
        let linkedin = rng.gen_bool(0.45).then(|| {
            let mut s = String::from("https://www.linkedin.com/in/");
            ascii_fold(first, &mut s);
            s.push('-');
            ascii_fold(last, &mut s);
            let _ = write!(s, "-{:x}", rng.gen::<u32>() >> 4);
            s
        });

        let currency = pick(
            rng,
            &["GBP", "GBP", "GBP", "GBP", "GBP", "GBP", "EUR", "USD"],
        );
        let salary = if rng.gen_bool(0.2) {
            SalaryOut {
                current_amount: None,
                current_currency: None,
                current_text: None,
                expected_amount: None,
                expected_currency: None,
                expected_text: None,
            }
        } else if rng.gen_bool(0.1) {
            let day = rng.gen_range(25..95u32) * 10;
            let exp = day + rng.gen_range(0..10u32) * 25;
            SalaryOut {
                current_amount: Some(day),
                current_currency: Some(currency),
                current_text: Some(salary_text(rng, day, currency, true)),
                expected_amount: Some(exp),
                expected_currency: Some(currency),
                expected_text: Some(salary_text(rng, exp, currency, true)),
            }
        } else {
            let cur = rng.gen_range(20..150u32) * 1000;
            let exp = (cur as f64 * rng.gen_range(1.0..1.3) / 1000.0).round() as u32 * 1000;
            let texts = rng.gen_bool(0.7);
            SalaryOut {
                current_amount: Some(cur),
                current_currency: Some(currency),
                current_text: texts.then(|| salary_text(rng, cur, currency, false)),
                expected_amount: rng.gen_bool(0.85).then_some(exp),
                expected_currency: Some(currency),
                expected_text: texts.then(|| salary_text(rng, exp, currency, false)),
            }
        };

        let created = between(rng, START, END - DAY);
        let consent = match weighted(rng, &[45, 20, 25, 5, 5]) {
            0 => {
                let req = between(rng, created, created + 10 * DAY).min(END - 1);
                let given = between(rng, req, req + 5 * DAY).min(END - 1);
                ConsentOut {
                    status: Some("given"),
                    given_at: Some(stamp(given)),
                    requested_at: Some(stamp(req)),
                    expires_at: rng.gen_bool(0.6).then(|| stamp(given + 730 * DAY)),
                }
            }
            1 => ConsentOut {
                status: Some("requested"),
                given_at: None,
                requested_at: Some(stamp(between(rng, created, END - 1))),
                expires_at: None,
            },
            2 => ConsentOut {
                status: Some("not_requested"),
                given_at: None,
                requested_at: None,
                expires_at: None,
            },
            3 => ConsentOut {
                status: Some("withdrawn"),
                given_at: Some(stamp(created)),
                requested_at: Some(stamp(created)),
                expires_at: None,
            },
            _ => ConsentOut {
                status: None,
                given_at: None,
                requested_at: None,
                expires_at: None,
            },
        };

        let owner = self.pick_candidate_owner(rng);
        let mut rows = Vec::with_capacity(6);
        rows.push(Row {
            id: uuid(rng),
            job: None,
            stage: None,
            outcome: None,
            rejected_at: None,
            owner,
            created,
            updated: updated(rng, created, 0.45),
        });

        let job_rows = weighted(rng, &[35, 30, 15, 10, 6, 4]).min(self.jobs.len());
        let mut jobs = [usize::MAX; 5];
        for k in 0..job_rows {
            let job = loop {
                let j = rng.gen_range(0..self.jobs.len());
                if !jobs[..k].contains(&j) {
                    break j;
                }
            };
            jobs[k] = job;
            let jr = &self.jobs[job];
            let lo = created.max(jr.created);
            let row_created = between(rng, lo, (lo + 90 * DAY).min(END - 1));
            // Early stages are the crowded ones.
            let mut stage = weighted(rng, &[30, 24, 18, 12, 8, 5, 3]) % self.stages.len();
            let (outcome, rejected_at, row_updated) = if stage == self.placed_stage {
                if rng.gen_bool(0.9) {
                    let at = between(rng, row_created, END);
                    (Some(Outcome::Placed), None, touched(row_created, at))
                } else {
                    (None, None, updated(rng, row_created, 0.3))
                }
            } else if rng.gen_bool(0.25) {
                let at = between(rng, row_created, END);
                (Some(Outcome::Rejected), Some(at), touched(row_created, at))
            } else if rng.gen_bool(0.03) {
                // A few placements recorded without moving the stage along.
                stage = self.placed_stage;
                let at = between(rng, row_created, END);
                (Some(Outcome::Placed), None, touched(row_created, at))
            } else {
                (None, None, updated(rng, row_created, 0.35))
            };
            let row_owner = match rng.gen_range(0..10) {
                0..=4 => owner,
                5..=7 => None,
                _ => self.pick_candidate_owner(rng),
            };
            rows.push(Row {
                id: uuid(rng),
                job: Some(job),
                stage: Some(stage),
                outcome,
                rejected_at,
                owner: row_owner,
                created: row_created,
                updated: row_updated,
            });
        }

        Person {
            index,
            id,
            first,
            last,
            name,
            email_format,
            email_domain,
            has_email,
            job_title,
            company,
            location,
            linkedin,
            salary,
            consent,
            rows,
        }
    }

    /// Owner recorded on a candidate row: often nobody, mostly a current member, some
    /// who left or never joined (the API then falls back or shows null).
    fn pick_candidate_owner(&self, rng: &mut ChaCha8Rng) -> Option<usize> {
        match weighted(rng, &[25, 63, 8, 4]) {
            0 => None,
            1 => Some(self.pick_active(rng)),
            2 => Some(self.pick_removed_or_active(rng)),
            _ if !self.invited.is_empty() => Some(pick(rng, &self.invited)),
            _ => Some(self.pick_active(rng)),
        }
    }

    fn phone_draw(&self, index: usize) -> PhoneDraw {
        let mut rng = stream(self.seed, Family::Phone, index as u64);
        let rng = &mut rng;
        // Each sharing event pairs two people, so ~2% of events here plus the contacts
        // sharing switchboards give ~5% of people holding a number someone else holds.
        let share = match weighted(rng, &[9_810, 70, 90, 30]) {
            1 if index > 0 => Share::PhoneOfPerson(index - 1 - rng.gen_range(0..index.min(20_000))),
            2 if index > 0 => {
                Share::MobileIsPhoneOfPerson(index - 1 - rng.gen_range(0..index.min(20_000)))
            }
            3 if !self.contacts.is_empty() => {
                Share::PhoneOfContact(rng.gen_range(0..self.contacts.len()))
            }
            _ => Share::Own,
        };
        let phone = (!rng.gen_bool(0.03)).then(|| {
            let num = random_personal_number(rng);
            Typed::new(rng, num, 0.005)
        });
        let mobile_chance = match phone.map(|p| p.num.kind) {
            Some(NumKind::UkMobile) => 0.3,
            _ => 0.8,
        };
        let mobile = rng.gen_bool(mobile_chance).then(|| {
            let num = PhoneNum::random(rng, NumKind::UkMobile);
            Typed::new(rng, num, 0.0)
        });
        PhoneDraw {
            share,
            phone,
            mobile,
        }
    }

    /// The phone a donor really carries, if it is its own (a donor that itself borrowed
    /// its phone is skipped, so sharing never chains).
    fn donor_phone(&self, donor: usize) -> Option<PhoneNum> {
        let d = self.phone_draw(donor);
        match d.share {
            Share::Own | Share::MobileIsPhoneOfPerson(_) => d.phone.map(|t| t.num),
            _ => None,
        }
    }

    fn person_phones(&self, index: usize) -> Phones {
        let mut d = self.phone_draw(index);
        // Re-type a borrowed number in the borrower's own style.
        let retype = |t: Option<Typed>, num: PhoneNum, salt: u8| Typed {
            num,
            style: t.map_or(salt, |t| t.style.wrapping_add(salt)),
            ext: None,
        };
        match d.share {
            Share::Own => {}
            Share::PhoneOfPerson(j) => {
                if let Some(num) = self.donor_phone(j) {
                    d.phone = Some(retype(d.phone, num, 1));
                }
            }
            Share::MobileIsPhoneOfPerson(j) => {
                if let Some(num) = self.donor_phone(j) {
                    d.mobile = Some(retype(d.mobile, num, 2));
                }
            }
            Share::PhoneOfContact(c) => {
                if let Some(t) = self.contacts[c].phone {
                    d.phone = Some(retype(d.phone, t.num, 3));
                }
            }
        }
        Phones {
            phone: d.phone.map(Typed::render),
            mobile: d.mobile.map(Typed::render),
        }
    }
}

/// Hands out unique, lower-case e-mail addresses in person order: the first holder of
/// a local part gets it plain, later ones a number. Memory is bounded by the number of
/// distinct name/format/domain combinations, not by the number of people.
#[derive(Default)]
struct EmailBook {
    seen: HashMap<String, u32>,
}

impl EmailBook {
    fn assign(&mut self, p: &Person) -> Option<String> {
        if !p.has_email {
            return None;
        }
        let mut f = String::new();
        ascii_fold(p.first, &mut f);
        let mut l = String::new();
        ascii_fold(p.last, &mut l);
        let mut base = String::with_capacity(40);
        match p.email_format {
            0 | 1 => {
                let _ = write!(base, "{f}.{l}");
            }
            2 => {
                let _ = write!(base, "{f}{l}");
            }
            3 => {
                let _ = write!(base, "{}{l}", &f[..1]);
            }
            4 => {
                let _ = write!(base, "{f}_{l}");
            }
            _ => {
                let _ = write!(base, "{l}.{f}");
            }
        }
        // Names carry no digits, so "base" + number never collides with another base.
        let domain = MAIL_DOMAINS[p.email_domain];
        base.push('@');
        base.push_str(domain);
        let n = match self.seen.get_mut(&base) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.seen.insert(base.clone(), 1);
                1
            }
        };
        base.truncate(base.len() - domain.len() - 1);
        if n > 1 {
            let _ = write!(base, "{n}");
        }
        base.push('@');
        base.push_str(domain);
        Some(base)
    }
}

// ---------------------------------------------------------------------------------------
// Notes, tasks and attachments
// ---------------------------------------------------------------------------------------

fn note_body(rng: &mut ChaCha8Rng, first: &str, subject: &str) -> String {
    match rng.gen_range(0..8) {
        0 => format!("<p>Spoke to {first} about the {subject} role. Keen to move &amp; available in 4 weeks.</p>"),
        1 => format!("<p>{first} is looking for £{}k, open to hybrid.</p>", rng.gen_range(30..120)),
        2 => format!("<p>Left a voicemail for {first}.</p>"),
        3 => format!("<p><strong>Feedback:</strong> strong on {subject}, needs more stakeholder work.</p><ul><li>Technical: good</li><li>Culture: \"great fit\"</li></ul>"),
        4 => format!("<p>Sent details of the {subject} opening to {first}.</p>"),
        5 => "<p>Not interested at the moment, check back in Q1.</p>".to_string(),
        6 => format!("<p>References received for {first} — all positive.</p>"),
        _ => format!("<p>Meeting with {first}: discussed next steps for {subject}.</p>"),
    }
}

#[derive(Serialize)]
struct NoteOut<'a> {
    id: Uuid,
    parent_type: &'static str,
    parent_id: Uuid,
    title: &'a str,
    body_html: &'a str,
    #[serde(rename = "type")]
    label: Option<&'static str>,
    is_private: bool,
    author_id: Uuid,
    /// Present (maybe null) on candidate notes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<Option<Uuid>>,
    /// Present on contact notes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    company_id: Option<Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

#[derive(Serialize)]
struct TaskOut<'a> {
    id: Uuid,
    parent_type: &'static str,
    parent_id: Uuid,
    title: &'a str,
    body_html: Option<&'a str>,
    status: &'static str,
    due_date: Option<Day>,
    owner_id: Option<Uuid>,
    completed_at: Option<Stamp>,
    is_private: bool,
    placement_row_id: Option<Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

#[derive(Serialize)]
struct AttachmentOut<'a> {
    id: &'a str,
    parent_type: &'static str,
    parent_id: Uuid,
    filename: &'a str,
    content_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    kind: &'static str,
    storage_ref: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_base64: Option<&'a str>,
    created_at: Stamp,
    updated_at: Stamp,
}

/// What differs between the kinds of attachment.
struct AttachmentSpec<'a> {
    prefix: &'static str,
    kind: &'static str,
    parent: (&'static str, Uuid),
    filename: &'a str,
    storage_dir: &'static str,
    /// (created_at, updated_at)
    times: (i64, i64),
}

/// Common parts of a task, before it is tied to a parent.
struct TaskDraft {
    id: Uuid,
    status: &'static str,
    due: Option<Day>,
    owner: Option<Uuid>,
    completed: Option<i64>,
    private: bool,
    created: i64,
    updated: i64,
}

fn content_type_for(ext: &str) -> &'static str {
    match ext {
        "pdf" => "application/pdf",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "doc" => "application/msword",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "jpg" => "image/jpeg",
        "png" => "image/png",
        _ => "text/plain",
    }
}

/// A tiny stand-in for the file: the right magic bytes, then deterministic text.
fn fake_file(ext: &str, title: &str, id: &str) -> Vec<u8> {
    let mut b: Vec<u8> = match ext {
        "pdf" => b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n".to_vec(),
        "docx" | "xlsx" => b"PK\x03\x04\x14\x00\x06\x00".to_vec(),
        "doc" => b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1".to_vec(),
        "jpg" => b"\xff\xd8\xff\xe0\x00\x10JFIF\x00".to_vec(),
        "png" => b"\x89PNG\r\n\x1a\n".to_vec(),
        _ => Vec::new(),
    };
    let _ = write!(
        b,
        "% synthetic file generated by recruitd\n% {title}\n% {id}\n"
    );
    if ext == "pdf" {
        b.extend_from_slice(b"trailer\n<< /Root 1 0 R >>\n%%EOF\n");
    }
    b
}

impl World {
    fn task_draft(&self, rng: &mut ChaCha8Rng, parent_created: i64) -> TaskDraft {
        let id = uuid(rng);
        let created = between(rng, parent_created, END - 1);
        let due = rng
            .gen_bool(0.8)
            .then(|| Day(created + rng.gen_range(1..30) * DAY));
        let (status, completed) = match weighted(rng, &[50, 40, 10]) {
            0 => ("open", None),
            1 => ("completed", Some(between(rng, created, END))),
            _ => ("cancelled", None),
        };
        let updated = match (status, completed) {
            (_, Some(at)) => touched(created, at),
            ("cancelled", _) => touched(created, between(rng, created, END)),
            _ => updated(rng, created, 0.6),
        };
        let owner = match weighted(rng, &[88, 5, 7]) {
            0 => Some(self.user_id(self.pick_active(rng))),
            1 => Some(self.user_id(self.pick_removed_or_active(rng))),
            _ => None,
        };
        TaskDraft {
            id,
            status,
            due,
            owner,
            completed,
            private: rng.gen_bool(0.1),
            created,
            updated,
        }
    }

    fn write_task<W: Write>(
        &self,
        json: &mut JsonOut<W>,
        t: &TaskDraft,
        (parent_type, parent_id): (&'static str, Uuid),
        title: &str,
        body: Option<&str>,
        placement: Option<Uuid>,
    ) -> io::Result<()> {
        json.item(&TaskOut {
            id: t.id,
            parent_type,
            parent_id,
            title,
            body_html: body,
            status: t.status,
            due_date: t.due,
            owner_id: t.owner,
            completed_at: t.completed.map(stamp),
            is_private: t.private,
            placement_row_id: placement,
            created_at: stamp(t.created),
            updated_at: stamp(t.updated),
        })
    }

    fn person_notes<W: Write>(&self, p: &Person, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::Notes, p.index as u64);
        let rng = &mut rng;
        let n = weighted(rng, &[15, 25, 25, 17, 11, 7]);
        for _ in 0..n {
            let row = if p.rows.len() > 1 && rng.gen_bool(0.5) {
                &p.rows[rng.gen_range(1..p.rows.len())]
            } else {
                &p.rows[0]
            };
            let subject = row
                .job
                .map_or(p.job_title.unwrap_or("new"), |j| self.jobs[j].title);
            let body = note_body(rng, p.first, subject);
            let created = between(rng, row.created, END);
            json.item(&NoteOut {
                id: uuid(rng),
                parent_type: "candidate",
                parent_id: row.id,
                title: pick(rng, CANDIDATE_NOTE_TITLES),
                body_html: &body,
                label: pick(rng, NOTE_TYPES),
                is_private: rng.gen_bool(0.1),
                author_id: self.user_id(self.pick_author(rng)),
                job_id: Some(row.job.map(|j| self.jobs[j].id)),
                company_id: None,
                created_at: stamp(created),
                updated_at: stamp(updated(rng, created, 0.8)),
            })?;
        }
        Ok(n)
    }

    fn org_notes<W: Write>(&self, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::OrgNotes, 0);
        let rng = &mut rng;
        let mut count = 0;
        let mut note = |json: &mut JsonOut<W>,
                        rng: &mut ChaCha8Rng,
                        parent_type: &'static str,
                        parent_id: Uuid,
                        company_id: Option<Uuid>,
                        who: &str,
                        subject: &str,
                        parent_created: i64|
         -> io::Result<()> {
            let body = note_body(rng, who, subject);
            let created = between(rng, parent_created, END);
            count += 1;
            json.item(&NoteOut {
                id: uuid(rng),
                parent_type,
                parent_id,
                title: pick(rng, ORG_NOTE_TITLES),
                body_html: &body,
                label: pick(rng, NOTE_TYPES),
                is_private: rng.gen_bool(0.1),
                author_id: self.user_id(self.pick_author(rng)),
                job_id: None,
                company_id,
                created_at: stamp(created),
                updated_at: stamp(updated(rng, created, 0.8)),
            })
        };
        for c in &self.contacts {
            let first = c.name.split(' ').next().unwrap_or("them");
            for _ in 0..weighted(rng, &[40, 35, 25]) {
                let co = &self.companies[c.company];
                note(
                    json,
                    rng,
                    "contact",
                    c.id,
                    Some(co.id),
                    first,
                    c.job_title,
                    c.created,
                )?;
            }
        }
        for c in &self.companies {
            for _ in 0..weighted(rng, &[45, 35, 20]) {
                note(
                    json, rng, "company", c.id, None, &c.name, "account", c.created,
                )?;
            }
        }
        for j in &self.jobs {
            for _ in 0..weighted(rng, &[45, 35, 20]) {
                note(
                    json,
                    rng,
                    "job",
                    j.id,
                    None,
                    "the client",
                    j.title,
                    j.created,
                )?;
            }
        }
        Ok(count)
    }

    fn person_tasks<W: Write>(&self, p: &Person, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::Tasks, p.index as u64);
        let rng = &mut rng;
        let mut count = 0;
        for _ in 0..weighted(rng, &[70, 22, 8]) {
            let row = &p.rows[rng.gen_range(0..p.rows.len())];
            let t = self.task_draft(rng, row.created);
            let title = pick(rng, TASK_TITLES);
            let body = rng
                .gen_bool(0.5)
                .then(|| format!("<p>{title} with {}.</p>", p.first));
            self.write_task(
                json,
                &t,
                ("candidate", row.id),
                title,
                body.as_deref(),
                None,
            )?;
            count += 1;
        }
        // Reminders about placements: the service cancels them if the placement is
        // undone, so they must point at rows that really are placed.
        for row in &p.rows {
            if row.outcome == Some(Outcome::Placed) && rng.gen_bool(0.6) {
                let t = self.task_draft(rng, row.created);
                let title = format!("Check in with {} after first week", p.first);
                self.write_task(json, &t, ("candidate", row.id), &title, None, Some(row.id))?;
                count += 1;
            }
        }
        Ok(count)
    }

    fn org_tasks<W: Write>(&self, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::OrgTasks, 0);
        let rng = &mut rng;
        let mut count = 0;
        for c in &self.contacts {
            for _ in 0..weighted(rng, &[65, 25, 10]) {
                let t = self.task_draft(rng, c.created);
                let title = pick(rng, ORG_TASK_TITLES);
                self.write_task(json, &t, ("contact", c.id), title, None, None)?;
                count += 1;
            }
        }
        for c in &self.companies {
            for _ in 0..weighted(rng, &[60, 30, 10]) {
                let t = self.task_draft(rng, c.created);
                let title = pick(rng, ORG_TASK_TITLES);
                self.write_task(json, &t, ("company", c.id), title, None, None)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Writes one attachment; about one in five never received its bytes.
    fn write_attachment<W: Write>(
        &self,
        json: &mut JsonOut<W>,
        rng: &mut ChaCha8Rng,
        spec: AttachmentSpec<'_>,
    ) -> io::Result<()> {
        let AttachmentSpec {
            prefix,
            kind,
            parent: (parent_type, parent_id),
            filename,
            storage_dir,
            times,
        } = spec;
        let ident = uuid(rng);
        let id = format!("{prefix}:{ident}");
        let ext = filename.rsplit('.').next().unwrap_or("pdf");
        let content_type = (!rng.gen_bool(0.08)).then(|| content_type_for(ext));
        let stem = filename.strip_suffix(ext).unwrap_or(filename);
        let storage_ref = format!(
            "{storage_dir}/{}/{}-{}.{ext}",
            self.slug,
            slug(stem.trim_end_matches('.')),
            &ident.simple().to_string()[..8]
        );
        let with_content = rng.gen_bool(0.8);
        let content = with_content.then(|| {
            base64::engine::general_purpose::STANDARD.encode(fake_file(ext, filename, &id))
        });
        let size = (!with_content && rng.gen_bool(0.7)).then(|| rng.gen_range(8_000..900_000));
        json.item(&AttachmentOut {
            id: &id,
            parent_type,
            parent_id,
            filename,
            content_type,
            size,
            kind,
            storage_ref: &storage_ref,
            content_base64: content.as_deref(),
            created_at: stamp(times.0),
            updated_at: stamp(times.1),
        })
    }

    fn person_attachments<W: Write>(&self, p: &Person, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::Attachments, p.index as u64);
        let rng = &mut rng;
        let mut count = 0;
        if rng.gen_bool(0.75) {
            let row = if p.rows.len() > 1 && rng.gen_bool(0.15) {
                &p.rows[rng.gen_range(1..p.rows.len())]
            } else {
                &p.rows[0]
            };
            let filename = match rng.gen_range(0..6) {
                0 => format!("{} {} CV.pdf", p.first, p.last),
                1 => format!("CV - {} {}.docx", p.first, p.last),
                2 => format!("{}_{}_resume.pdf", p.first, p.last),
                3 => format!("{} {} CV 2026.pdf", p.last, p.first),
                4 => "My CV (final).pdf".to_string(),
                _ => format!("{} {} - Curriculum Vitae.doc", p.first, p.last),
            };
            // A cv takes its row's timestamps.
            let times = (row.created, row.updated);
            let spec = AttachmentSpec {
                prefix: "cv",
                kind: "cv",
                parent: ("candidate", row.id),
                filename: &filename,
                storage_dir: "cvs",
                times,
            };
            self.write_attachment(json, rng, spec)?;
            count += 1;
        }
        if rng.gen_bool(0.15) {
            let row = &p.rows[rng.gen_range(0..p.rows.len())];
            let filename = format!(
                "{} {} - {} profile.pdf",
                p.first, p.last, self.workspace_name
            );
            let created = between(rng, row.created, END);
            let times = (created, updated(rng, created, 0.9));
            let spec = AttachmentSpec {
                prefix: "cvdoc",
                kind: "generated_cv",
                parent: ("candidate", row.id),
                filename: &filename,
                storage_dir: "generated",
                times,
            };
            self.write_attachment(json, rng, spec)?;
            count += 1;
        }
        if rng.gen_bool(0.1) {
            let row = &p.rows[rng.gen_range(0..p.rows.len())];
            let filename = match rng.gen_range(0..5) {
                0 => "Cover letter.docx".to_string(),
                1 => format!("{} passport scan.jpg", p.first),
                2 => "References.pdf".to_string(),
                3 => "Right to work share code.png".to_string(),
                _ => format!("Portfolio {} {}.pdf", p.first, p.last),
            };
            let created = between(rng, row.created, END);
            let times = (created, updated(rng, created, 0.9));
            let spec = AttachmentSpec {
                prefix: "file",
                kind: "document",
                parent: ("candidate", row.id),
                filename: &filename,
                storage_dir: "files",
                times,
            };
            self.write_attachment(json, rng, spec)?;
            count += 1;
        }
        Ok(count)
    }

    fn org_attachments<W: Write>(&self, json: &mut JsonOut<W>) -> io::Result<usize> {
        let mut rng = stream(self.seed, Family::OrgAttachments, 0);
        let rng = &mut rng;
        let mut count = 0;
        for c in &self.companies {
            for _ in 0..weighted(rng, &[40, 35, 15, 10]) {
                let filename = match rng.gen_range(0..5) {
                    0 => "Terms of Business 2026.pdf".to_string(),
                    1 => "Signed T&Cs.docx".to_string(),
                    2 => "Rate card.xlsx".to_string(),
                    3 => format!("{} org chart.png", c.name),
                    _ => "terms.docx".to_string(),
                };
                let created = between(rng, c.created, END);
                let times = (created, updated(rng, created, 0.9));
                let spec = AttachmentSpec {
                    prefix: "clientfile",
                    kind: "document",
                    parent: ("company", c.id),
                    filename: &filename,
                    storage_dir: "clientfiles",
                    times,
                };
                self.write_attachment(json, rng, spec)?;
                count += 1;
            }
        }
        Ok(count)
    }
}

// ---------------------------------------------------------------------------------------
// Serialised shapes (borrowing, so writing a record allocates little)
// ---------------------------------------------------------------------------------------

#[derive(Serialize)]
struct WorkspaceOut<'a> {
    id: Uuid,
    name: &'a str,
    default_region: &'a str,
}

#[derive(Serialize)]
struct UserOut<'a> {
    id: Uuid,
    name: &'a str,
    email: &'a str,
    role: &'a str,
    status: &'static str,
    created_at: Stamp,
    updated_at: Stamp,
}

impl Serialize for StageRec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("PipelineStage", 3)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("stage_type", self.stage_type)?;
        st.end()
    }
}

#[derive(Serialize)]
struct CompanyOut<'a> {
    id: Uuid,
    name: &'a str,
    phone: Option<&'a str>,
    website_url: Option<&'a str>,
    linkedin_url: Option<&'a str>,
    status: &'a str,
    is_archived: bool,
    owner_id: Option<Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

#[derive(Serialize)]
struct ContactOut<'a> {
    id: Uuid,
    name: &'a str,
    email: Option<&'a str>,
    phone: Option<&'a str>,
    mobile: Option<&'a str>,
    job_title: Option<&'a str>,
    department: Option<&'a str>,
    company_id: Uuid,
    linkedin_url: Option<&'a str>,
    is_main_contact: bool,
    owner_id: Option<Uuid>,
    created_at: Stamp,
    updated_at: Stamp,
}

#[derive(Serialize)]
struct JobSalaryOut<'a> {
    amount: u32,
    currency: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
}

#[derive(Serialize)]
struct JobOut<'a> {
    id: Uuid,
    title: &'a str,
    position: &'a str,
    company_id: Option<Uuid>,
    status: &'a str,
    role_status_id: Uuid,
    is_archived: bool,
    on_careers_page: bool,
    salary: JobSalaryOut<'a>,
    assigned_recruiter_id: Option<Uuid>,
    created_by: Uuid,
    hiring_manager: Option<&'a str>,
    created_at: Stamp,
    updated_at: Stamp,
}

#[derive(Serialize)]
struct CandidateOut<'a> {
    id: Uuid,
    person_id: Uuid,
    job_id: Option<Uuid>,
    name: &'a str,
    email: Option<&'a str>,
    phone: Option<&'a str>,
    mobile: Option<&'a str>,
    job_title: Option<&'a str>,
    company: Option<&'a str>,
    location: Option<&'a str>,
    linkedin_url: Option<&'a str>,
    stage_id: Option<Uuid>,
    outcome: Option<&'static str>,
    rejected_at: Option<Stamp>,
    owner_id: Option<Uuid>,
    salary: &'a SalaryOut,
    consent: &'a ConsentOut,
    created_at: Stamp,
    updated_at: Stamp,
}

impl<'a> CandidateOut<'a> {
    fn new(
        world: &World,
        p: &'a Person,
        row: &Row,
        email: &'a Option<String>,
        phones: &'a Phones,
    ) -> Self {
        CandidateOut {
            id: row.id,
            person_id: p.id,
            job_id: row.job.map(|j| world.jobs[j].id),
            name: &p.name,
            email: email.as_deref(),
            phone: phones.phone.as_deref(),
            mobile: phones.mobile.as_deref(),
            job_title: p.job_title,
            company: p.company,
            location: p.location,
            linkedin_url: p.linkedin.as_deref(),
            stage_id: row.stage.map(|s| world.stages[s].id),
            outcome: row.outcome.map(|o| match o {
                Outcome::Placed => "placed",
                Outcome::Rejected => "rejected",
            }),
            rejected_at: row.rejected_at.map(stamp),
            owner_id: row.owner.map(|u| world.user_id(u)),
            salary: &p.salary,
            consent: &p.consent,
            created_at: stamp(row.created),
            updated_at: stamp(row.updated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::{BTreeMap, BTreeSet, HashSet};

    fn bytes(people: usize, seed: u64) -> Vec<u8> {
        snapshot_bytes(&GenerateOptions::new(people, seed))
    }

    fn doc(people: usize, seed: u64) -> Value {
        serde_json::from_slice(&bytes(people, seed)).expect("output is JSON")
    }

    fn arr<'a>(d: &'a Value, key: &str) -> &'a [Value] {
        d[key].as_array().map(Vec::as_slice).unwrap_or(&[])
    }

    fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
        v.get(key).and_then(Value::as_str)
    }

    fn ids(d: &Value, key: &str) -> HashSet<String> {
        arr(d, key)
            .iter()
            .map(|r| s(r, "id").expect("id").to_string())
            .collect()
    }

    fn ratio(part: usize, whole: usize) -> f64 {
        part as f64 / whole.max(1) as f64
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = bytes(400, 7);
        assert_eq!(a, bytes(400, 7));
        assert_ne!(a, bytes(400, 8));
        // Independent of how the bytes are chunked on the way out.
        let mut unbuffered = Vec::new();
        write_snapshot(
            &GenerateOptions::new(400, 7),
            &mut unbuffered,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(a, unbuffered);
    }

    #[test]
    fn cli_writes_the_same_bytes_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snap.json");
        let opts = GenerateOptions::new(120, 5);
        run_cli(&opts, Some(&path)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), snapshot_bytes(&opts));
        let missing = dir.path().join("no/such/dir/snap.json");
        assert!(run_cli(&opts, Some(&missing)).is_err());
    }

    #[test]
    fn time_constants_are_the_documented_dates() {
        let at = |s: &str| Stamp::parse_rfc3339(s).unwrap().millis();
        assert_eq!(START, at("2025-06-01T00:00:00Z"));
        assert_eq!(END, at("2026-11-01T00:00:00Z"));
        assert_eq!(TRACK, at("2026-08-13T00:00:00Z"));
    }

    #[test]
    fn top_level_shape() {
        let bytes = bytes(50, 1);
        assert!(bytes.ends_with(b"}\n"));
        // Compact: the only newline is the final one.
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
        let d: Value = serde_json::from_slice(&bytes).unwrap();
        let keys: BTreeSet<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        let expected: BTreeSet<&str> = [
            "format",
            "workspace",
            "users",
            "pipeline_stages",
            "companies",
            "contacts",
            "jobs",
            "candidates",
            "notes",
            "tasks",
            "attachments",
        ]
        .into_iter()
        .collect();
        assert_eq!(keys, expected);
        assert_eq!(d["format"], "recruit-snapshot/1");
        assert_eq!(d["workspace"]["default_region"], "GB");
        assert!(Uuid::parse_str(s(&d["workspace"], "id").unwrap()).is_ok());
        assert!(s(&d["workspace"], "name").is_some());
    }

    #[test]
    fn zero_people_is_still_a_valid_workspace() {
        let d = doc(0, 3);
        assert!(arr(&d, "candidates").is_empty());
        assert!(arr(&d, "users").len() >= 5);
        assert!(!arr(&d, "companies").is_empty());
        check_references(&d);
    }

    /// The domain's own raw types reject unknown fields and wrong types, so a round
    /// trip through them checks field names and value formats.
    #[test]
    fn records_deserialise_into_the_domain_types() {
        use actors::model;
        fn each<T: serde::de::DeserializeOwned>(d: &Value, key: &str) {
            for (i, r) in arr(d, key).iter().enumerate() {
                if let Err(e) = serde_json::from_value::<T>(r.clone()) {
                    panic!("{key}[{i}]: {e}\n{r}");
                }
            }
        }
        let d = doc(600, 11);
        serde_json::from_value::<model::Workspace>(d["workspace"].clone()).unwrap();
        each::<model::User>(&d, "users");
        each::<model::PipelineStage>(&d, "pipeline_stages");
        each::<model::Company>(&d, "companies");
        each::<model::Contact>(&d, "contacts");
        each::<model::Job>(&d, "jobs");
        each::<model::Candidate>(&d, "candidates");
        each::<model::Note>(&d, "notes");
        each::<model::Task>(&d, "tasks");
        let allowed: BTreeSet<&str> = [
            "id",
            "parent_type",
            "parent_id",
            "filename",
            "content_type",
            "size",
            "kind",
            "storage_ref",
            "content_base64",
            "created_at",
            "updated_at",
        ]
        .into_iter()
        .collect();
        for a in arr(&d, "attachments") {
            for k in a.as_object().unwrap().keys() {
                assert!(allowed.contains(k.as_str()), "attachment field {k}");
            }
        }
    }

    #[test]
    fn every_reference_resolves_and_rules_hold() {
        for (people, seed) in [(1, 1), (7, 2), (300, 3), (2000, 4)] {
            check_references(&doc(people, seed));
        }
    }

    fn check_timestamps(array: &str, r: &Value) {
        let mut created = None;
        for (k, v) in r.as_object().unwrap() {
            if !k.ends_with("_at") || v.is_null() {
                continue;
            }
            let t = v.as_str().unwrap();
            assert!(
                t.len() == 24 && t.ends_with('Z'),
                "{array}.{k} = {t} is not ms UTC"
            );
            assert!(Stamp::parse_rfc3339(t).is_some(), "{array}.{k} = {t}");
            if k == "created_at" {
                created = Some(t);
            }
        }
        let c = created.expect("created_at");
        let u = s(r, "updated_at").expect("updated_at");
        assert!(u >= c, "{array}: updated_at {u} < created_at {c}");
        if u != c {
            assert!(
                Stamp::parse_rfc3339(u).unwrap().millis() >= TRACK,
                "{array}: edit {u} before change tracking"
            );
        }
    }

    fn check_references(d: &Value) {
        // Unique ids per array.
        for key in [
            "users",
            "pipeline_stages",
            "companies",
            "contacts",
            "jobs",
            "candidates",
            "notes",
            "tasks",
            "attachments",
        ] {
            let all = arr(d, key);
            assert_eq!(ids(d, key).len(), all.len(), "duplicate id in {key}");
            for r in all {
                let id = s(r, "id").unwrap();
                if key == "attachments" {
                    let (prefix, rest) = actors::model::split_attachment_id(id).expect(id);
                    assert!(Uuid::parse_str(rest).is_ok(), "{prefix}");
                } else {
                    let u = Uuid::parse_str(id).unwrap();
                    assert_eq!(u.to_string(), id, "ids are lower-case");
                }
                if key != "pipeline_stages" {
                    check_timestamps(key, r);
                }
            }
        }

        // Users: owner first, all statuses, unique e-mails.
        let users = arr(d, "users");
        assert_eq!(s(&users[0], "role"), Some("owner"));
        assert_eq!(s(&users[0], "status"), Some("active"));
        let status: BTreeMap<&str, &str> = users
            .iter()
            .map(|u| (s(u, "id").unwrap(), s(u, "status").unwrap()))
            .collect();
        for st in ["active", "invited", "removed"] {
            assert!(status.values().any(|v| *v == st), "no {st} user");
        }
        let emails: HashSet<String> = users
            .iter()
            .map(|u| s(u, "email").unwrap().to_lowercase())
            .collect();
        assert_eq!(emails.len(), users.len());
        let user =
            |v: &Value, field: &str, nullable: bool| match v.get(field).and_then(Value::as_str) {
                Some(id) => assert!(status.contains_key(id), "{field} {id} is no user"),
                None => assert!(nullable, "{field} missing"),
            };

        let stages = ids(d, "pipeline_stages");
        assert!((5..=7).contains(&stages.len()));
        let stage_types: BTreeSet<&str> = arr(d, "pipeline_stages")
            .iter()
            .map(|st| s(st, "stage_type").unwrap())
            .collect();
        for t in &stage_types {
            assert!(["applied", "screening", "interview", "offer", "placed"].contains(t));
        }

        let companies = ids(d, "companies");
        for c in arr(d, "companies") {
            user(c, "owner_id", true);
        }
        let mut mains: BTreeMap<&str, usize> = BTreeMap::new();
        let mut contact_company: BTreeMap<&str, &str> = BTreeMap::new();
        for c in arr(d, "contacts") {
            let co = s(c, "company_id").unwrap();
            assert!(companies.contains(co));
            user(c, "owner_id", true);
            contact_company.insert(s(c, "id").unwrap(), co);
            *mains.entry(co).or_default() += usize::from(c["is_main_contact"] == true);
        }
        assert_eq!(mains.len(), companies.len(), "a company without contacts");
        assert!(
            mains.values().all(|n| *n == 1),
            "one main contact per company"
        );

        let jobs = ids(d, "jobs");
        for j in arr(d, "jobs") {
            if let Some(co) = s(j, "company_id") {
                assert!(companies.contains(co));
            }
            user(j, "assigned_recruiter_id", true);
            user(j, "created_by", false);
            assert!(j["salary"]["amount"].is_number());
        }

        // Candidates: one primary row per person, equal personal attributes.
        let mut people: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
        let mut rows: BTreeMap<&str, &Value> = BTreeMap::new();
        for c in arr(d, "candidates") {
            people
                .entry(s(c, "person_id").unwrap())
                .or_default()
                .push(c);
            rows.insert(s(c, "id").unwrap(), c);
            user(c, "owner_id", true);
            match s(c, "job_id") {
                None => assert!(c["stage_id"].is_null() && c["outcome"].is_null()),
                Some(job) => {
                    assert!(jobs.contains(job));
                    assert!(stages.contains(s(c, "stage_id").expect("stage on job row")));
                }
            }
            match s(c, "outcome") {
                Some("rejected") => assert!(s(c, "rejected_at").is_some()),
                Some("placed") | None => assert!(c["rejected_at"].is_null()),
                Some(o) => panic!("outcome {o}"),
            }
        }
        let mut person_emails = HashSet::new();
        for (person, rs) in &people {
            let primaries = rs.iter().filter(|r| r["job_id"].is_null()).count();
            assert_eq!(primaries, 1, "person {person}");
            assert!(rs.len() <= 6);
            let distinct_jobs: HashSet<&str> = rs.iter().filter_map(|r| s(r, "job_id")).collect();
            assert_eq!(
                distinct_jobs.len(),
                rs.len() - 1,
                "a job twice for {person}"
            );
            for field in ["name", "email", "phone", "mobile", "salary", "consent"] {
                assert!(
                    rs.iter().all(|r| r[field] == rs[0][field]),
                    "{field} differs"
                );
            }
            if let Some(e) = s(rs[0], "email") {
                assert_eq!(e, e.to_lowercase());
                assert!(e.contains('@') && e.is_ascii());
                assert!(person_emails.insert(e.to_string()), "e-mail {e} reused");
            }
        }

        // Notes.
        let contacts = ids(d, "contacts");
        for n in arr(d, "notes") {
            let parent = s(n, "parent_id").unwrap();
            let o = n.as_object().unwrap();
            match s(n, "parent_type").unwrap() {
                "candidate" => {
                    let row = rows.get(parent).expect("note on a candidate row");
                    assert!(o.contains_key("job_id"));
                    assert_eq!(n["job_id"], row["job_id"]);
                    assert!(!o.contains_key("company_id"));
                }
                "contact" => {
                    assert!(contacts.contains(parent));
                    assert_eq!(s(n, "company_id"), contact_company.get(parent).copied());
                    assert!(!o.contains_key("job_id"));
                }
                "company" => assert!(companies.contains(parent)),
                "job" => assert!(jobs.contains(parent)),
                t => panic!("note parent_type {t}"),
            }
            if s(n, "parent_type") != Some("candidate") {
                assert!(!o.contains_key("job_id"));
            }
            user(n, "author_id", false);
            assert_ne!(status[s(n, "author_id").unwrap()], "invited");
        }

        // Tasks.
        for t in arr(d, "tasks") {
            let parent = s(t, "parent_id").unwrap();
            match s(t, "parent_type").unwrap() {
                "candidate" => assert!(rows.contains_key(parent)),
                "contact" => assert!(contacts.contains(parent)),
                "company" => assert!(companies.contains(parent)),
                other => panic!("task parent_type {other}"),
            }
            user(t, "owner_id", true);
            match s(t, "status").unwrap() {
                "completed" => assert!(s(t, "completed_at").is_some()),
                "open" | "cancelled" => assert!(t["completed_at"].is_null()),
                other => panic!("task status {other}"),
            }
            if let Some(due) = s(t, "due_date") {
                assert!(actors::time::Date::parse(due).is_some(), "{due}");
            }
            if let Some(row) = s(t, "placement_row_id") {
                assert_eq!(s(rows[row], "outcome"), Some("placed"));
            }
        }

        // Attachments.
        let slug = slug(s(&d["workspace"], "name").unwrap());
        for a in arr(d, "attachments") {
            let id = s(a, "id").unwrap();
            let parent = s(a, "parent_id").unwrap();
            let (prefix, _) = id.split_once(':').unwrap();
            let kind = s(a, "kind").unwrap();
            let expected_kind = match prefix {
                "cv" => "cv",
                "cvdoc" => "generated_cv",
                _ => "document",
            };
            assert_eq!(kind, expected_kind, "{id}");
            match s(a, "parent_type").unwrap() {
                "candidate" => {
                    let row = rows.get(parent).expect("attachment on a candidate row");
                    assert_ne!(prefix, "clientfile");
                    if kind == "cv" {
                        assert_eq!(a["created_at"], row["created_at"]);
                        assert_eq!(a["updated_at"], row["updated_at"]);
                    }
                }
                "company" => {
                    assert!(companies.contains(parent));
                    assert_eq!(prefix, "clientfile");
                }
                other => panic!("attachment parent_type {other}"),
            }
            let storage = s(a, "storage_ref").unwrap();
            assert!(storage.contains(&format!("/{slug}/")), "{storage}");
            assert!(!storage.contains(' ') && !storage.contains("://"));
            if let Some(b64) = s(a, "content_base64") {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap();
                assert!(!raw.is_empty() && raw.len() <= 400, "{} bytes", raw.len());
                assert!(a.get("size").is_none(), "size given with content");
            }
        }
    }

    /// Every number a person, contact or company carries, normalised the way the
    /// server does it, mapped to its holders.
    /// Normalised number -> its holders; and every (as typed, normalised) pair.
    type Holders = (BTreeMap<String, BTreeSet<String>>, Vec<(String, String)>);

    fn holders(d: &Value) -> Holders {
        let region = actors::phone::parse_region("GB");
        let mut by_number: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut raw = Vec::new();
        let mut add = |holder: &str, v: &Value, field: &str| {
            if let Some(p) = s(v, field) {
                let n = actors::phone::normalise_phone(p, region).unwrap();
                raw.push((p.to_string(), n.clone()));
                by_number.entry(n).or_default().insert(holder.to_string());
            }
        };
        for c in arr(d, "candidates") {
            let person = s(c, "person_id").unwrap();
            add(person, c, "phone");
            add(person, c, "mobile");
        }
        for c in arr(d, "contacts") {
            add(s(c, "id").unwrap(), c, "phone");
            add(s(c, "id").unwrap(), c, "mobile");
        }
        for c in arr(d, "companies") {
            add(s(c, "id").unwrap(), c, "phone");
        }
        (by_number, raw)
    }

    #[test]
    fn about_five_percent_of_people_share_a_number() {
        let d = doc(2000, 5);
        let (by_number, raw) = holders(&d);
        let mut people: BTreeSet<&str> = arr(&d, "candidates")
            .iter()
            .map(|c| s(c, "person_id").unwrap())
            .collect();
        people.extend(arr(&d, "contacts").iter().map(|c| s(c, "id").unwrap()));
        let sharing: BTreeSet<&String> = by_number
            .values()
            .filter(|h| h.len() > 1)
            .flatten()
            .filter(|h| people.contains(h.as_str()))
            .collect();
        let share = ratio(sharing.len(), people.len());
        assert!((0.035..=0.07).contains(&share), "{share}");

        // Numbers are typed many ways, and still normalise to E.164.
        let e164 = raw.iter().filter(|(_, n)| n.starts_with('+')).count();
        let bad: Vec<&String> = raw
            .iter()
            .filter(|(_, n)| !n.starts_with('+'))
            .map(|(p, _)| p)
            .take(10)
            .collect();
        assert!(ratio(e164, raw.len()) > 0.99, "not E.164: {bad:?}");
        let shapes: BTreeSet<String> = raw
            .iter()
            .map(|(p, _)| {
                p.chars()
                    .map(|c| if c.is_ascii_digit() { '9' } else { c })
                    .collect()
            })
            .collect();
        assert!(shapes.len() >= 25, "{} shapes", shapes.len());
        for sample in [
            "+44 7",
            "(0)7",
            "+1 (",
            "+1 ",
            "+33 ",
            "+44 (0)20 ",
            " ext. ",
            " x",
            "#",
        ] {
            assert!(
                raw.iter().any(|(p, _)| p.contains(sample)),
                "no number like {sample}"
            );
        }
        let people_rows: Vec<&Value> = arr(&d, "candidates")
            .iter()
            .filter(|c| c["job_id"].is_null())
            .collect();
        let no_mobile = people_rows.iter().filter(|c| c["mobile"].is_null()).count();
        assert!((0.3..=0.8).contains(&ratio(no_mobile, people_rows.len())));
    }

    #[test]
    fn realistic_proportions() {
        let opts = GenerateOptions::new(3000, 9);
        let mut out = Vec::new();
        let mut calls = Vec::new();
        let stats = write_snapshot(&opts, &mut out, &mut |done, total| {
            calls.push((done, total))
        })
        .unwrap();
        assert!(
            calls.windows(2).all(|w| w[0].0 <= w[1].0),
            "progress goes back"
        );
        assert_eq!(calls.last(), Some(&(3000, 3000)));
        let d: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(stats.candidate_rows, arr(&d, "candidates").len());
        assert_eq!(stats.notes, arr(&d, "notes").len());
        assert_eq!(stats.tasks, arr(&d, "tasks").len());
        assert_eq!(stats.attachments, arr(&d, "attachments").len());
        assert_eq!(stats.users, arr(&d, "users").len());
        assert_eq!(stats.companies, arr(&d, "companies").len());
        assert_eq!(stats.contacts, arr(&d, "contacts").len());
        assert_eq!(stats.jobs, arr(&d, "jobs").len());
        assert_eq!(stats.users, 60);
        assert_eq!(stats.companies, 150);
        assert_eq!(stats.jobs, 300);
        let per_person = |n: usize| n as f64 / 3000.0;
        assert!((1.8..=2.8).contains(&per_person(stats.candidate_rows)));
        assert!((1.7..=2.6).contains(&per_person(stats.notes)));
        assert!((0.35..=0.7).contains(&per_person(stats.tasks)));
        assert!((0.8..=1.3).contains(&per_person(stats.attachments)));

        let count =
            |key: &str, f: &dyn Fn(&Value) -> bool| arr(&d, key).iter().filter(|r| f(r)).count();
        let private = count("notes", &|n| n["is_private"] == true);
        assert!((0.07..=0.13).contains(&ratio(private, stats.notes)));
        assert!(count("tasks", &|t| t["is_private"] == true) > 0);
        let no_bytes = count("attachments", &|a| a.get("content_base64").is_none());
        assert!((0.15..=0.25).contains(&ratio(no_bytes, stats.attachments)));
        for prefix in ["cv:", "cvdoc:", "file:", "clientfile:"] {
            assert!(count("attachments", &|a| s(a, "id").unwrap().starts_with(prefix)) > 0);
        }
        assert!(count("attachments", &|a| a["content_type"].is_null()) > 0);
        assert!(count("candidates", &|c| s(c, "outcome") == Some("placed")) > 0);
        assert!(count("candidates", &|c| s(c, "outcome") == Some("rejected")) > 0);
        assert!(count("candidates", &|c| c["owner_id"].is_null()) > 0);
        assert!(count("tasks", &|t| !t["placement_row_id"].is_null()) > 0);
        for st in ["open", "completed", "cancelled"] {
            assert!(count("tasks", &|t| s(t, "status") == Some(st)) > 0);
        }
        assert!(count("companies", &|c| c["is_archived"] == true) > 0);
        assert!(count("companies", &|c| c["owner_id"].is_null()) > 0);
        assert!(count("jobs", &|j| j["company_id"].is_null()) > 0);
        assert!(count("jobs", &|j| j["assigned_recruiter_id"].is_null()) > 0);
        assert!(count("jobs", &|j| j["is_archived"] == true) > 0);
        assert!(count("jobs", &|j| j["on_careers_page"] == true) > 0);
        for key in ["candidates", "notes", "companies"] {
            let same = count(key, &|r| r["created_at"] == r["updated_at"]);
            let share = ratio(same, arr(&d, key).len());
            assert!((0.2..=0.95).contains(&share), "{key}: {share}");
        }
        let late = count("candidates", &|c| {
            Stamp::parse_rfc3339(s(c, "updated_at").unwrap())
                .unwrap()
                .millis()
                >= TRACK
        });
        assert!(late > 0);
    }

    /// The importer accepts the file whole: every record parses, every reference
    /// resolves, every rule of the format holds.
    #[test]
    fn the_importer_accepts_a_generated_snapshot() {
        use actors::snapshot::{parse_slice, plan_import, NoKeys};
        let bytes = bytes(300, 12);
        let snap = parse_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
        let plan = plan_import(None, snap, &NoKeys, true).unwrap_or_else(|e| panic!("{e}"));
        let d: Value = serde_json::from_slice(&bytes).unwrap();
        for key in [
            "users",
            "pipeline_stages",
            "companies",
            "contacts",
            "jobs",
            "candidates",
            "notes",
            "tasks",
            "attachments",
        ] {
            assert_eq!(
                plan.upserted.get(key).copied(),
                Some(arr(&d, key).len()),
                "{key}"
            );
        }
        let with_bytes = arr(&d, "attachments")
            .iter()
            .filter(|a| a.get("content_base64").is_some())
            .count();
        assert_eq!(plan.blobs.len(), with_bytes);
    }

    #[test]
    fn phone_templates_fit_their_numbers() {
        let mut rng = stream(1, Family::World, 99);
        for kind in [
            NumKind::UkMobile,
            NumKind::London,
            NumKind::UkCity,
            NumKind::Us,
            NumKind::Fr,
        ] {
            let n = PhoneNum::random(&mut rng, kind);
            for t in n.styles() {
                assert_eq!(
                    t.matches('#').count(),
                    n.nsn.to_string().len(),
                    "{kind:?} {t}"
                );
            }
        }
    }

    /// Measures by hand: `GEN_PEOPLE=1000000 cargo test --release -- --ignored measure`
    /// (writes to `GEN_OUT`, default `/tmp/recruit-generate.json`).
    #[test]
    #[ignore]
    fn measure() {
        let people = std::env::var("GEN_PEOPLE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        let path = std::env::var("GEN_OUT").unwrap_or_else(|_| "/tmp/recruit-generate.json".into());
        /// Counts bytes; `GEN_OUT=-` measures generation without the disk.
        struct Count<W>(W, u64);
        impl<W: Write> Write for Count<W> {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let n = self.0.write(b)?;
                self.1 += n as u64;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                self.0.flush()
            }
        }
        let started = std::time::Instant::now();
        let opts = GenerateOptions::new(people, 42);
        let (stats, size) = if path == "-" {
            let mut out = Count(io::sink(), 0);
            (
                write_snapshot(&opts, &mut out, &mut |_, _| {}).unwrap(),
                out.1,
            )
        } else {
            let mut out = Count(std::fs::File::create(&path).unwrap(), 0);
            (
                write_snapshot(&opts, &mut out, &mut |_, _| {}).unwrap(),
                out.1,
            )
        };
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{people} people: {secs:.1}s, {size} bytes ({:.1} MiB) -> {path}\n{stats:?}",
            size as f64 / 1048576.0
        );
    }
}
