//! The demo workspace of `serve --demo` and the tour it prints: ready-to-paste calls
//! that show the product on the data just loaded (a phone search that finds one person
//! in two formats, an e-mail search, a download that works, a note with a `reference`).
//!
//! The tour is computed from the loaded state with the same search code the API runs, so
//! every call it prints answers as it says. README's tour is the same text (a test holds
//! them together), so a newcomer's first calls work against the demo they started.

use super::StoreArgs;
use crate::generate::GenerateOptions;
use actors::keys::NewKey;
use actors::search::results::{search_email, search_phone, Confidence};
use actors::state::WorkspaceState;
use anyhow::Context;

/// People in the demo workspace.
pub const DEMO_PEOPLE: usize = 500;
/// Its seed: the demo is the same data on every machine.
pub const DEMO_SEED: u64 = 20261121;

/// One person of the demo workspace and what the tour shows of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tour {
    pub person_name: String,
    /// The candidate's primary row.
    pub candidate_id: String,
    /// Their number as entered and in a second form; each finds them alone.
    pub phone_formats: [String; 2],
    pub email: String,
    /// A `cv` attachment of theirs whose bytes are in the blob store.
    pub cv_id: String,
}

impl Tour {
    /// The first person, in sync order, whom both numbers and the e-mail find alone
    /// (`exact`) and who has a CV with bytes, preferring a number entered with spaces or
    /// punctuation (it shows the search is format-agnostic); `None` when the workspace
    /// has nobody so.
    pub fn find(ws: &WorkspaceState) -> Option<Tour> {
        let formatted = |n: &str| n.chars().any(|c| matches!(c, ' ' | '(' | '-' | '.'));
        Self::find_where(ws, formatted).or_else(|| Self::find_where(ws, |_| true))
    }

    fn find_where(ws: &WorkspaceState, entered_as: impl Fn(&str) -> bool) -> Option<Tour> {
        ws.candidates
            .iter_from(None, None)
            .filter(|(_, _, row)| row.job_id().is_none())
            .find_map(|(_, id, row)| {
                let person = row.person_id();
                let finds_alone = |confidence: Confidence, people: &[uuid::Uuid]| {
                    confidence == Confidence::Exact && people == [person]
                };
                let entered = row.phone_as_entered()?.to_string();
                let normalised = row.phone()?.to_string();
                if entered == normalised || !entered_as(&entered) {
                    return None;
                }
                for number in [&entered, &normalised] {
                    let found = search_phone(ws, number, 100);
                    let people: Vec<_> = found.hits.persons.iter().map(|p| p.person_id).collect();
                    if !finds_alone(found.confidence, &people) {
                        return None;
                    }
                }
                let email = row.email()?;
                let found = search_email(ws, email, 100);
                let people: Vec<_> = found.hits.persons.iter().map(|p| p.person_id).collect();
                if !finds_alone(found.confidence, &people) {
                    return None;
                }
                let cv = ws.attachments.iter_from(None, None).find(|(_, _, a)| {
                    a.is_candidate_cv() && a.has_content() && a.parent_id() == *id
                })?;
                Some(Tour {
                    person_name: row.name().unwrap_or_default().to_string(),
                    candidate_id: id.to_string(),
                    phone_formats: [entered, normalised],
                    email: email.to_string(),
                    cv_id: cv.1.to_string(),
                })
            })
    }

    /// The calls, one per line with a comment before each group, using `$KEY` (the API
    /// key), `$CA` (the server's certificate) and `$API` (the base URL).
    pub fn calls(&self) -> String {
        let auth = r#"curl --cacert $CA -H "Authorization: Bearer $KEY""#;
        let [entered, other] = &self.phone_formats;
        format!(
            "# How much is there?\n\
             {auth} $API/v1/counts\n\
             # Who is calling? {name}, found by their number as entered and in another form:\n\
             {auth} -G $API/v1/search/phone --data-urlencode 'number={entered}'\n\
             {auth} -G $API/v1/search/phone --data-urlencode 'number={other}'\n\
             # ... and by e-mail:\n\
             {auth} -G $API/v1/search/email --data-urlencode 'address={email}'\n\
             # Their CV: a signed URL, then the file itself (fetched without the key):\n\
             URL=$({auth} -s \"$API/v1/attachments/{cv}/download?redirect=false\" | jq -r .data.url)\n\
             curl --cacert $CA -OJ \"$URL\"\n\
             # A note after the call; sent again with the same reference, it updates that note:\n\
             {auth} -H 'Content-Type: application/json' $API/v1/notes \\\n  \
             -d '{{\"parent_type\":\"candidate\",\"parent_id\":\"{candidate}\",\"body_html\":\"<p>Called back</p>\",\"reference\":\"demo-call-1\"}}'\n",
            name = self.person_name,
            email = self.email,
            cv = self.cv_id,
            candidate = self.candidate_id,
        )
    }
}

/// What `serve --demo` did.
pub(super) enum Demo {
    /// The store was empty: the demo workspace and a key were made.
    Loaded(Box<DemoLoaded>),
    /// The store already held data, left unchanged: each workspace and who may create its
    /// keys (an active owner or administrator, when it has one).
    AlreadyThere(Vec<(actors::model::Workspace, Option<String>)>),
}

/// The demo workspace just loaded, and what its welcome message says.
pub(super) struct DemoLoaded {
    workspace: actors::model::Workspace,
    owner: String,
    records: usize,
    key_id: String,
    secret: String,
    tour: Option<crate::cli::demo::Tour>,
}

impl DemoLoaded {
    /// The message printed on standard output: the workspace, the key (its secret once)
    /// and the tour's calls, ready to paste.
    pub(super) fn welcome(&self, base: &str, cert: &std::path::Path) -> String {
        let mut out = format!(
            "\nDemo workspace {name:?} loaded: {people} people, {records} records.\n  \
             workspace id: {ws}\n  owner:        {owner} (creates keys: recruitd key create \
             --workspace {ws} --created-by {owner})\n  API key id:   {key_id} (every scope; \
             its secret is shown once, here)\n\nPaste these into another shell:\n\n  \
             export KEY={secret} CA={cert} API={base}\n",
            name = self.workspace.name.as_deref().unwrap_or_default(),
            people = crate::cli::demo::DEMO_PEOPLE,
            records = self.records,
            ws = self.workspace.id,
            owner = self.owner,
            key_id = self.key_id,
            secret = self.secret,
            cert = cert.display(),
        );
        if let Some(tour) = &self.tour {
            for line in tour.calls().lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// Loads the demo workspace into an empty store with a key of every scope; when the
/// store already holds data, changes nothing and says what is there.
pub(super) async fn load_demo(store_args: &StoreArgs) -> anyhow::Result<Demo> {
    let store =
        crate::store::open(store_args.database_url.as_deref(), &store_args.data_dir).await?;
    let existing = store.workspaces().await?;
    if !existing.is_empty() {
        let mut out = Vec::new();
        for w in existing {
            let owner = crate::cli::offline::keys(&store)
                .suggested_creator(w.id)
                .await?;
            out.push((w, owner));
        }
        store.close().await;
        return Ok(Demo::AlreadyThere(out));
    }
    let bytes = crate::generate::snapshot_bytes(&GenerateOptions::new(
        crate::cli::demo::DEMO_PEOPLE,
        crate::cli::demo::DEMO_SEED,
    ));
    let snap =
        actors::snapshot::parse_slice(&bytes).map_err(|e| anyhow::anyhow!("demo snapshot: {e}"))?;
    let ws = snap
        .workspace_id()
        .context("demo snapshot has a workspace")?;
    let env = crate::cli::offline::import_env(store.clone(), &store_args.data_dir).await?;
    let checkpoints = actors::checkpoint::files::CheckpointDir::new(&store_args.data_dir);
    crate::cli::offline::import_snapshot(&env, &checkpoints, snap).await?;
    let state = crate::cli::offline::load_workspace(&*store, &checkpoints, ws)
        .await?
        .context("the demo workspace is in the store")?;
    let owner = state.users.iter().map(|(_, u)| &**u);
    let owner = actors::keys::suggested_creator(owner)
        .and_then(|u| u.email.clone())
        .context("demo snapshot has an active owner")?;
    let scopes = ["notes:write", "tasks:write", "records:write"].map(String::from);
    let req = NewKey::parse(&owner, &scopes, None).map_err(|e| anyhow::anyhow!(e))?;
    let (key, secret) =
        crate::cli::offline::create_key(store.clone(), &ws.to_string(), &req).await?;
    store.close().await;
    Ok(Demo::Loaded(Box::new(DemoLoaded {
        workspace: (*state.workspace).clone(),
        owner,
        records: state.stored_records(),
        key_id: key.id,
        secret,
        tour: crate::cli::demo::Tour::find(&state),
    })))
}
