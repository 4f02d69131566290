//! `recruit-snapshot/1`: parsing, whole-file validation, and the plan of an import.
//!
//! A snapshot is parsed element by element (a million-person file is never held as one
//! JSON tree), validated as a whole against the workspace it targets, and turned into an
//! [`ImportPlan`]: the change set for the store, the blobs to write, and the next state.
//! Nothing is applied until the plan is complete, so a rejected file changes nothing;
//! [`ImportPlan::apply`] then writes it (blobs, store, key ring), for the live import and
//! the offline one alike.

mod apply;

pub use apply::{released_objects, Applied, ApplyError, ImportReport};

use crate::model::*;
use crate::state::WorkspaceState;
use crate::store::ChangeSet;
use crate::time::Stamp;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use uuid::Uuid;

pub const FORMAT: &str = "recruit-snapshot/1";

/// One element of a snapshot array: a record to create or replace, or a removal.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry<T> {
    Upsert(T),
    Delete(String),
}

/// An API key as a snapshot carries it (the secret in clear, hashed before storage).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyIn {
    pub id: String,
    pub secret: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    pub created_by: Uuid,
    #[serde(default)]
    pub revoked: bool,
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
}

/// An attachment as a snapshot carries it: with its bytes, base64-encoded, when they exist.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentIn {
    pub id: String,
    pub parent_type: ParentType,
    pub parent_id: Uuid,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    pub kind: AttachmentKind,
    #[serde(default)]
    pub storage_ref: Option<String>,
    #[serde(default)]
    pub content_base64: Option<String>,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

/// A parsed snapshot, not yet validated against a workspace.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub workspace: Option<Workspace>,
    pub users: Vec<Entry<User>>,
    pub api_keys: Vec<Entry<ApiKeyIn>>,
    pub pipeline_stages: Vec<Entry<PipelineStage>>,
    pub companies: Vec<Entry<Company>>,
    pub contacts: Vec<Entry<Contact>>,
    pub jobs: Vec<Entry<Job>>,
    pub candidates: Vec<Entry<Candidate>>,
    pub notes: Vec<Entry<Note>>,
    pub tasks: Vec<Entry<Task>>,
    pub attachments: Vec<Entry<AttachmentIn>>,
}

impl Snapshot {
    /// The workspace this snapshot targets.
    pub fn workspace_id(&self) -> Option<Uuid> {
        self.workspace.as_ref().map(|w| w.id)
    }
}

/// Why a snapshot was rejected, naming where: array, index and field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotError {
    pub array: Option<String>,
    pub index: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl SnapshotError {
    fn at(array: &str, index: usize, field: &str, message: impl Into<String>) -> Self {
        SnapshotError {
            array: Some(array.to_string()),
            index: Some(index),
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    fn top(field: &str, message: impl Into<String>) -> Self {
        SnapshotError {
            array: None,
            index: None,
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    /// Where, as `array[index].field`.
    pub fn location(&self) -> String {
        let mut s = String::new();
        if let Some(a) = &self.array {
            s.push_str(a);
        }
        if let Some(i) = self.index {
            s.push_str(&format!("[{i}]"));
        }
        if let Some(f) = &self.field {
            if !s.is_empty() {
                s.push('.');
            }
            s.push_str(f);
        }
        s
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loc = self.location();
        if loc.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{loc}: {}", self.message)
        }
    }
}

impl std::error::Error for SnapshotError {}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

/// Parses a snapshot from a reader.
pub fn parse_reader<R: std::io::Read>(r: R) -> Result<Snapshot, SnapshotError> {
    let mut de = serde_json::Deserializer::from_reader(r);
    parse_with(&mut de)
}

/// Parses a snapshot from bytes in memory.
pub fn parse_slice(b: &[u8]) -> Result<Snapshot, SnapshotError> {
    let mut de = serde_json::Deserializer::from_slice(b);
    parse_with(&mut de)
}

fn parse_with<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> Result<Snapshot, SnapshotError> {
    let mut first_error: Option<SnapshotError> = None;
    let seed = TopSeed {
        error: &mut first_error,
    };
    let result = seed.deserialize(&mut *de).and_then(|s| de.end().map(|_| s));
    match (result, first_error) {
        (_, Some(e)) => Err(e),
        (Ok(s), None) => Ok(s),
        (Err(e), None) => Err(SnapshotError {
            array: None,
            index: None,
            field: None,
            message: format!("not a valid snapshot document: {e}"),
        }),
    }
}

struct TopSeed<'e> {
    error: &'e mut Option<SnapshotError>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Snapshot;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Snapshot, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Snapshot;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a snapshot object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Snapshot, A::Error> {
        let mut snap = Snapshot::default();
        let mut format: Option<String> = None;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                *self.error = Some(SnapshotError::top(&key, "appears twice"));
                return Err(de::Error::custom("duplicate key"));
            }
            macro_rules! array {
                ($field:ident) => {{
                    snap.$field = map.next_value_seed(ArraySeed {
                        name: stringify!($field),
                        error: &mut *self.error,
                        _t: std::marker::PhantomData,
                    })?;
                }};
            }
            match key.as_str() {
                "format" => {
                    let v: serde_json::Value = map.next_value()?;
                    match v {
                        serde_json::Value::String(s) => format = Some(s),
                        _ => {
                            *self.error = Some(SnapshotError::top("format", "must be a string"));
                            return Err(de::Error::custom("bad format"));
                        }
                    }
                }
                "workspace" => {
                    let v: serde_json::Value = map.next_value()?;
                    match serde_path_to_error::deserialize::<_, Workspace>(v) {
                        Ok(w) => snap.workspace = Some(w),
                        Err(e) => {
                            *self.error = Some(SnapshotError {
                                array: None,
                                index: None,
                                field: Some(join_path("workspace", &e.path().to_string())),
                                message: e.inner().to_string(),
                            });
                            return Err(de::Error::custom("bad workspace"));
                        }
                    }
                }
                "users" => array!(users),
                "api_keys" => array!(api_keys),
                "pipeline_stages" => array!(pipeline_stages),
                "companies" => array!(companies),
                "contacts" => array!(contacts),
                "jobs" => array!(jobs),
                "candidates" => array!(candidates),
                "notes" => array!(notes),
                "tasks" => array!(tasks),
                "attachments" => array!(attachments),
                other => {
                    *self.error = Some(SnapshotError::top(other, "unknown top-level field"));
                    return Err(de::Error::custom("unknown field"));
                }
            }
        }
        match format.as_deref() {
            Some(FORMAT) => {}
            Some(other) => {
                *self.error = Some(SnapshotError::top(
                    "format",
                    format!("unsupported format {other:?}: expected {FORMAT:?}"),
                ));
                return Err(de::Error::custom("bad format"));
            }
            None => {
                *self.error = Some(SnapshotError::top(
                    "format",
                    format!("missing: expected {FORMAT:?}"),
                ));
                return Err(de::Error::custom("no format"));
            }
        }
        if snap.workspace.is_none() {
            *self.error = Some(SnapshotError::top(
                "workspace",
                "missing: the target workspace is required",
            ));
            return Err(de::Error::custom("no workspace"));
        }
        Ok(snap)
    }
}

fn join_path(base: &str, sub: &str) -> String {
    if sub.is_empty() || sub == "." {
        base.to_string()
    } else {
        format!("{base}.{sub}")
    }
}

struct ArraySeed<'e, T> {
    name: &'static str,
    error: &'e mut Option<SnapshotError>,
    _t: std::marker::PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ArraySeed<'_, T> {
    type Value = Vec<Entry<T>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ArraySeed<'_, T> {
    type Value = Vec<Entry<T>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        // `null` for an array: treated as absent.
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        let mut index = 0usize;
        while let Some(raw) = seq.next_element::<Box<serde_json::value::RawValue>>()? {
            match entry_from_raw::<T>(&raw) {
                Ok(e) => out.push(e),
                Err((field, message)) => {
                    *self.error = Some(SnapshotError::at(self.name, index, &field, message));
                    return Err(de::Error::custom("invalid record"));
                }
            }
            index += 1;
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(de::Error::custom("not an array"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(E::custom("not an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        *self.error = Some(SnapshotError::top(self.name, "must be an array"));
        Err(E::custom("not an array"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.visit_bool(false)
    }
}

/// One array element, parsed straight into its record type; only an element that does
/// not parse as a record (a removal, `"deleted": false`, or an error to report) is looked
/// at as a JSON tree.
fn entry_from_raw<T: DeserializeOwned>(
    raw: &serde_json::value::RawValue,
) -> Result<Entry<T>, (String, String)> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    match T::deserialize(&mut de) {
        Ok(r) => Ok(Entry::Upsert(r)),
        Err(_) => {
            let v: serde_json::Value =
                serde_json::from_str(raw.get()).map_err(|e| (String::new(), e.to_string()))?;
            entry_from_value(v)
        }
    }
}

/// One array element: `{"id": …, "deleted": true}` removes, anything else is a record.
fn entry_from_value<T: DeserializeOwned>(
    mut v: serde_json::Value,
) -> Result<Entry<T>, (String, String)> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| (String::new(), "must be an object".to_string()))?;
    match obj.get("deleted") {
        None => {}
        Some(serde_json::Value::Bool(true)) => {
            return match obj.get("id") {
                Some(serde_json::Value::String(id)) if !id.is_empty() => {
                    Ok(Entry::Delete(id.clone()))
                }
                _ => Err((
                    "id".into(),
                    "a record marked deleted must carry its id (a string)".into(),
                )),
            };
        }
        Some(serde_json::Value::Bool(false)) => {
            obj.remove("deleted");
        }
        Some(_) => return Err(("deleted".into(), "must be true or false".into())),
    }
    serde_path_to_error::deserialize::<_, T>(v)
        .map(Entry::Upsert)
        .map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let inner = e.into_inner().to_string();
            // serde names the missing or unknown field in its message; lift it into the
            // location so every error names its field.
            let field = if path.is_empty() {
                field_from_message(&inner).unwrap_or_default()
            } else {
                path
            };
            (field, inner)
        })
}

fn field_from_message(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string())
}

// ---------------------------------------------------------------------------------------
// Validation and planning
// ---------------------------------------------------------------------------------------

/// Counts per array, as the admin import reports them.
pub type Counts = BTreeMap<&'static str, usize>;

/// A validated import, ready to commit.
pub struct ImportPlan {
    pub workspace: Workspace,
    pub changes: ChangeSet,
    /// Attachment bytes to put in the blob store before the commit.
    pub blobs: Vec<(String, Vec<u8>)>,
    /// The workspace state as it will be once the change set is committed (when asked for).
    pub next: Option<WorkspaceState>,
    pub upserted: Counts,
    pub deleted: Counts,
    /// How many raw records the workspace will hold once the change set is committed
    /// (`WorkspaceState::stored_records` of the next state).
    pub records_after: usize,
}

/// What the planner needs to know about the keys that already exist (of any workspace).
pub trait KeyDirectory {
    /// The key with this id, if the id is taken.
    fn key(&self, key_id: &str) -> Option<ApiKey>;
    /// The id of the key holding a secret hash, if any.
    fn key_by_hash(&self, hash: &[u8; 32]) -> Option<String>;
}

/// No keys anywhere (a fresh store).
pub struct NoKeys;

impl KeyDirectory for NoKeys {
    fn key(&self, _: &str) -> Option<ApiKey> {
        None
    }
    fn key_by_hash(&self, _: &[u8; 32]) -> Option<String> {
        None
    }
}

/// Ids known after the import: (in the state or upserted by the file) and not deleted.
struct Known<'a> {
    state: &'a WorkspaceState,
    added: HashMap<RecordKind, HashSet<Uuid>>,
    removed: HashMap<RecordKind, HashSet<Uuid>>,
}

impl Known<'_> {
    fn has(&self, kind: RecordKind, id: Uuid) -> bool {
        if self.removed.get(&kind).is_some_and(|s| s.contains(&id)) {
            return false;
        }
        self.added.get(&kind).is_some_and(|s| s.contains(&id)) || self.state.contains_uuid(kind, id)
    }
}

/// An id as written in a snapshot array: a UUID, or any string (keys, attachments).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Id {
    Uuid(Uuid),
    Text(String),
}

impl Id {
    fn parse(s: &str) -> Id {
        Uuid::try_parse(s).map_or_else(|_| Id::Text(s.to_string()), Id::Uuid)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Uuid(u) => write!(f, "{u}"),
            Id::Text(t) => f.write_str(t),
        }
    }
}

fn parent_kind(p: ParentType) -> RecordKind {
    match p {
        ParentType::Candidate => RecordKind::Candidate,
        ParentType::Contact => RecordKind::Contact,
        ParentType::Company => RecordKind::Company,
        ParentType::Job => RecordKind::Job,
    }
}

/// Moves one array's entries into the change set, counting them.
fn take<T>(
    array: &'static str,
    kind: RecordKind,
    entries: Vec<Entry<T>>,
    mut upsert: impl FnMut(T) -> Record,
    (changes, upserted, deleted): &mut (&mut ChangeSet, &mut Counts, &mut Counts),
) {
    let (mut up, mut del) = (0, 0);
    for e in entries {
        match e {
            Entry::Upsert(r) => {
                changes.upserts.push(upsert(r));
                up += 1;
            }
            Entry::Delete(id) => {
                changes.deletes.push((kind, id));
                del += 1;
            }
        }
    }
    upserted.insert(array, up);
    deleted.insert(array, del);
}

/// From this many changed records, when they are also a quarter or more of what the
/// workspace holds, an import rebuilds the search indexes whole instead of updating them.
const BULK_IMPORT_RECORDS: usize = 10_000;

/// Validates `snap` against `current` (the target workspace as it stands, `None` if new)
/// and computes everything the import will change: the change set, the blobs and, when
/// `build_next`, the workspace state after the commit.
pub fn plan_import(
    current: Option<&WorkspaceState>,
    snap: Snapshot,
    keys: &dyn KeyDirectory,
    build_next: bool,
) -> Result<ImportPlan, SnapshotError> {
    use base64::Engine;
    let workspace = snap
        .workspace
        .clone()
        .ok_or_else(|| SnapshotError::top("workspace", "missing"))?;
    if let Some(cur) = current {
        if cur.id() != workspace.id {
            return Err(SnapshotError::top(
                "workspace.id",
                "does not match the target workspace",
            ));
        }
    }
    if let Some(r) = &workspace.default_region {
        if crate::phone::parse_region(r).is_none() {
            return Err(SnapshotError::top(
                "workspace.default_region",
                format!("{r:?} is not an ISO 3166 alpha-2 region code"),
            ));
        }
    }
    let empty;
    let state: &WorkspaceState = match current {
        Some(s) => s,
        None => {
            empty = WorkspaceState::new(workspace.clone());
            &empty
        }
    };

    // Duplicate ids per array, and the sets of ids added and removed.
    let mut known = Known {
        state,
        added: HashMap::new(),
        removed: HashMap::new(),
    };
    fn collect<T>(
        array: &str,
        kind: Option<RecordKind>,
        entries: &[Entry<T>],
        id_of: impl Fn(&T) -> Id,
        known: &mut Known<'_>,
    ) -> Result<(), SnapshotError> {
        let mut seen = HashSet::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let id = match e {
                Entry::Upsert(r) => id_of(r),
                Entry::Delete(id) => Id::parse(id),
            };
            if let (Some(k), Id::Uuid(u)) = (kind, &id) {
                match e {
                    Entry::Upsert(_) => known.added.entry(k).or_default().insert(*u),
                    Entry::Delete(_) => known.removed.entry(k).or_default().insert(*u),
                };
            }
            if !seen.insert(id) {
                let id = match e {
                    Entry::Upsert(r) => id_of(r).to_string(),
                    Entry::Delete(id) => id.clone(),
                };
                return Err(SnapshotError::at(
                    array,
                    i,
                    "id",
                    format!("duplicate id {id:?}"),
                ));
            }
        }
        Ok(())
    }
    collect(
        "users",
        Some(RecordKind::User),
        &snap.users,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "api_keys",
        None,
        &snap.api_keys,
        |r| Id::Text(r.id.clone()),
        &mut known,
    )?;
    collect(
        "pipeline_stages",
        Some(RecordKind::Stage),
        &snap.pipeline_stages,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "companies",
        Some(RecordKind::Company),
        &snap.companies,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "contacts",
        Some(RecordKind::Contact),
        &snap.contacts,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "jobs",
        Some(RecordKind::Job),
        &snap.jobs,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "candidates",
        Some(RecordKind::Candidate),
        &snap.candidates,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "notes",
        Some(RecordKind::Note),
        &snap.notes,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "tasks",
        Some(RecordKind::Task),
        &snap.tasks,
        |r| Id::Uuid(r.id),
        &mut known,
    )?;
    collect(
        "attachments",
        Some(RecordKind::Attachment),
        &snap.attachments,
        |r| Id::Text(r.id.clone()),
        &mut known,
    )?;

    let user_ref =
        |array: &str, i: usize, field: &str, id: Option<Uuid>| -> Result<(), SnapshotError> {
            match id {
                Some(u) if !known.has(RecordKind::User, u) => Err(SnapshotError::at(
                    array,
                    i,
                    field,
                    format!("user {u} does not exist in the workspace or this file"),
                )),
                _ => Ok(()),
            }
        };
    let record_ref = |array: &str,
                      i: usize,
                      field: &str,
                      kind: RecordKind,
                      id: Option<Uuid>|
     -> Result<(), SnapshotError> {
        match id {
            Some(u) if !known.has(kind, u) => Err(SnapshotError::at(
                array,
                i,
                field,
                format!(
                    "{} {u} does not exist in the workspace or this file",
                    kind.as_str().replace('_', " ")
                ),
            )),
            _ => Ok(()),
        }
    };

    // users: e-mail unique in the workspace, case-insensitively.
    {
        let replaced: HashSet<Uuid> = snap
            .users
            .iter()
            .map(|e| match e {
                Entry::Upsert(u) => u.id,
                Entry::Delete(id) => Uuid::parse_str(id).unwrap_or_default(),
            })
            .collect();
        let mut emails: HashMap<String, Uuid> = HashMap::new();
        for (i, e) in snap.users.iter().enumerate() {
            if let Entry::Upsert(u) = e {
                if let Some(mail) = &u.email {
                    let key = mail.to_lowercase();
                    let clash_state = state
                        .users_by_email
                        .get(key.as_str())
                        .filter(|other| **other != u.id && !replaced.contains(other));
                    if clash_state.is_some() || emails.get(&key).is_some_and(|o| *o != u.id) {
                        return Err(SnapshotError::at(
                            "users",
                            i,
                            "email",
                            format!("{mail:?} is already used by another user of the workspace"),
                        ));
                    }
                    emails.insert(key, u.id);
                }
            }
        }
    }

    // api_keys
    let mut new_keys = Vec::new();
    for (i, e) in snap.api_keys.iter().enumerate() {
        match e {
            Entry::Upsert(k) => {
                if k.secret.is_empty() {
                    return Err(SnapshotError::at(
                        "api_keys",
                        i,
                        "secret",
                        "must not be empty",
                    ));
                }
                let mut scopes = Scopes::read_only();
                for s in &k.scopes {
                    scopes = scopes.with(Scope::parse(s).ok_or_else(|| {
                        SnapshotError::at("api_keys", i, "scopes", format!("unknown scope {s:?}"))
                    })?);
                }
                user_ref("api_keys", i, "created_by", Some(k.created_by))?;
                if keys
                    .key(&k.id)
                    .is_some_and(|other| other.workspace_id != workspace.id)
                {
                    return Err(SnapshotError::at(
                        "api_keys",
                        i,
                        "id",
                        "key id is taken by another workspace",
                    ));
                }
                let hash = hash_secret(&k.secret);
                if keys.key_by_hash(&hash).is_some_and(|owner| owner != k.id) {
                    return Err(SnapshotError::at(
                        "api_keys",
                        i,
                        "secret",
                        "secret is already used by another key",
                    ));
                }
                if k.rate_limit_per_minute == Some(0) {
                    return Err(SnapshotError::at(
                        "api_keys",
                        i,
                        "rate_limit_per_minute",
                        "must be at least 1",
                    ));
                }
                new_keys.push(ApiKey {
                    id: k.id.clone(),
                    workspace_id: workspace.id,
                    secret_hash: hash,
                    scopes,
                    created_by: k.created_by,
                    revoked: k.revoked,
                    rate_limit_per_minute: k.rate_limit_per_minute,
                    created_at: keys.key(&k.id).and_then(|existing| existing.created_at),
                });
            }
            Entry::Delete(id) => match keys.key(id) {
                Some(k) if k.workspace_id != workspace.id => {
                    return Err(SnapshotError::at(
                        "api_keys",
                        i,
                        "id",
                        "key id is taken by another workspace",
                    ));
                }
                // A key "deleted" by a snapshot is revoked: its row stays, so that the id
                // stays taken and the revocation is on record.
                Some(k) => new_keys.push(ApiKey { revoked: true, ..k }),
                None => {}
            },
        }
    }

    for (i, e) in snap.companies.iter().enumerate() {
        if let Entry::Upsert(c) = e {
            user_ref("companies", i, "owner_id", c.owner_id)?;
        }
    }
    for (i, e) in snap.contacts.iter().enumerate() {
        if let Entry::Upsert(c) = e {
            record_ref(
                "contacts",
                i,
                "company_id",
                RecordKind::Company,
                Some(c.company_id),
            )?;
            user_ref("contacts", i, "owner_id", c.owner_id)?;
        }
    }
    for (i, e) in snap.jobs.iter().enumerate() {
        if let Entry::Upsert(j) = e {
            record_ref("jobs", i, "company_id", RecordKind::Company, j.company_id)?;
            user_ref("jobs", i, "assigned_recruiter_id", j.assigned_recruiter_id)?;
            user_ref("jobs", i, "created_by", j.created_by)?;
        }
    }
    for (i, e) in snap.candidates.iter().enumerate() {
        if let Entry::Upsert(c) = e {
            record_ref("candidates", i, "job_id", RecordKind::Job, c.job_id)?;
            record_ref("candidates", i, "stage_id", RecordKind::Stage, c.stage_id)?;
            user_ref("candidates", i, "owner_id", c.owner_id)?;
            if c.job_id.is_none() && c.stage_id.is_some() {
                return Err(SnapshotError::at(
                    "candidates",
                    i,
                    "stage_id",
                    "must be null on the primary row (job_id null)",
                ));
            }
            if c.outcome == Some(Outcome::Rejected) && c.rejected_at.is_none() {
                return Err(SnapshotError::at(
                    "candidates",
                    i,
                    "rejected_at",
                    "is required when outcome is rejected",
                ));
            }
        }
    }
    // Exactly one primary row per person, judged on the workspace as it will be.
    {
        let mut file_rows: HashMap<Uuid, Vec<(usize, &Candidate)>> = HashMap::new();
        let mut touched_ids: HashSet<Uuid> = HashSet::new();
        for (i, e) in snap.candidates.iter().enumerate() {
            match e {
                Entry::Upsert(c) => {
                    file_rows.entry(c.person_id).or_default().push((i, c));
                    touched_ids.insert(c.id);
                }
                Entry::Delete(id) => {
                    if let Ok(u) = Uuid::parse_str(id) {
                        touched_ids.insert(u);
                    }
                }
            }
        }
        for (person, rows) in &file_rows {
            let from_state = state
                .persons
                .get(person)
                .into_iter()
                .flatten()
                .filter(|id| !touched_ids.contains(id))
                .filter_map(|id| state.candidates.get(id))
                .filter(|r| r.raw.is_primary())
                .count();
            let from_file = rows.iter().filter(|(_, c)| c.is_primary()).count();
            if from_state + from_file != 1 {
                let (i, _) = rows
                    .iter()
                    .find(|(_, c)| c.is_primary())
                    .copied()
                    .unwrap_or(rows[0]);
                let msg = if from_state + from_file == 0 {
                    format!("person {person} has no primary row (a row with job_id null)")
                } else {
                    format!("person {person} has more than one primary row (job_id null)")
                };
                return Err(SnapshotError::at("candidates", i, "person_id", msg));
            }
        }
    }
    let mut notes = Vec::new();
    for (i, e) in snap.notes.iter().enumerate() {
        if let Entry::Upsert(n) = e {
            let mut n = n.clone();
            record_ref(
                "notes",
                i,
                "parent_id",
                parent_kind(n.parent_type),
                Some(n.parent_id),
            )?;
            user_ref("notes", i, "author_id", n.author_id)?;
            if n.parent_type != ParentType::Candidate && n.job_id.is_some() {
                return Err(SnapshotError::at(
                    "notes",
                    i,
                    "job_id",
                    "only candidate notes carry a job_id",
                ));
            }
            if n.parent_type != ParentType::Contact && n.company_id.is_some() {
                return Err(SnapshotError::at(
                    "notes",
                    i,
                    "company_id",
                    "only contact notes carry a company_id",
                ));
            }
            record_ref("notes", i, "job_id", RecordKind::Job, n.job_id)?;
            record_ref("notes", i, "company_id", RecordKind::Company, n.company_id)?;
            if n.parent_type == ParentType::Contact && n.company_id.is_none() {
                // Filled from the contact when omitted (the file's version wins).
                n.company_id = snap
                    .contacts
                    .iter()
                    .find_map(|c| match c {
                        Entry::Upsert(c) if c.id == n.parent_id => Some(c.company_id),
                        _ => None,
                    })
                    .or_else(|| state.contacts.get(&n.parent_id).map(|c| c.raw.company_id));
            }
            notes.push(n);
        }
    }
    for (i, e) in snap.tasks.iter().enumerate() {
        if let Entry::Upsert(t) = e {
            if t.parent_type == ParentType::Job {
                return Err(SnapshotError::at(
                    "tasks",
                    i,
                    "parent_type",
                    "tasks belong to a candidate, contact or company, never a job",
                ));
            }
            record_ref(
                "tasks",
                i,
                "parent_id",
                parent_kind(t.parent_type),
                Some(t.parent_id),
            )?;
            user_ref("tasks", i, "owner_id", t.owner_id)?;
            record_ref(
                "tasks",
                i,
                "placement_row_id",
                RecordKind::Candidate,
                t.placement_row_id,
            )?;
        }
    }
    let mut attachments = Vec::new();
    let mut blobs = Vec::new();
    for (i, e) in snap.attachments.iter().enumerate() {
        if let Entry::Upsert(a) = e {
            if split_attachment_id(&a.id).is_none() {
                return Err(SnapshotError::at(
                    "attachments",
                    i,
                    "id",
                    "must be cv:, file:, cvdoc: or clientfile: followed by an identifier",
                ));
            }
            if !matches!(a.parent_type, ParentType::Candidate | ParentType::Company) {
                return Err(SnapshotError::at(
                    "attachments",
                    i,
                    "parent_type",
                    "must be candidate or company",
                ));
            }
            record_ref(
                "attachments",
                i,
                "parent_id",
                parent_kind(a.parent_type),
                Some(a.parent_id),
            )?;
            let bytes = match &a.content_base64 {
                Some(b64) => Some(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64.as_bytes())
                        .map_err(|e| {
                            SnapshotError::at(
                                "attachments",
                                i,
                                "content_base64",
                                format!("is not valid base64: {e}"),
                            )
                        })?,
                ),
                None => None,
            };
            let size = a.size.or(bytes.as_ref().map(|b| b.len() as u64));
            let has_content = bytes.is_some();
            if let Some(b) = bytes {
                blobs.push((a.id.clone(), b));
            }
            attachments.push(Attachment {
                id: a.id.clone(),
                parent_type: a.parent_type,
                parent_id: a.parent_id,
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                size,
                kind: a.kind,
                storage_ref: a.storage_ref.clone(),
                has_content,
                created_at: a.created_at,
                updated_at: a.updated_at,
            });
        }
    }

    // Build the change set, in dependency order.
    let mut changes = ChangeSet {
        workspace: Some(workspace.clone()),
        ..ChangeSet::default()
    };
    let mut upserted = Counts::new();
    let mut deleted = Counts::new();
    // Upserts in dependency order; notes and attachments as completed by validation
    // (one completed record per upsert entry, in file order).
    let mut out = (&mut changes, &mut upserted, &mut deleted);
    take(
        "users",
        RecordKind::User,
        snap.users,
        Record::User,
        &mut out,
    );
    take(
        "pipeline_stages",
        RecordKind::Stage,
        snap.pipeline_stages,
        Record::Stage,
        &mut out,
    );
    take(
        "companies",
        RecordKind::Company,
        snap.companies,
        Record::Company,
        &mut out,
    );
    take(
        "contacts",
        RecordKind::Contact,
        snap.contacts,
        Record::Contact,
        &mut out,
    );
    take("jobs", RecordKind::Job, snap.jobs, Record::Job, &mut out);
    take(
        "candidates",
        RecordKind::Candidate,
        snap.candidates,
        |c| Record::Candidate(Box::new(c)),
        &mut out,
    );
    take(
        "tasks",
        RecordKind::Task,
        snap.tasks,
        Record::Task,
        &mut out,
    );
    let mut notes = notes.into_iter();
    take(
        "notes",
        RecordKind::Note,
        snap.notes,
        |_| Record::Note(notes.next().expect("one per upsert")),
        &mut out,
    );
    let mut attachments = attachments.into_iter();
    take(
        "attachments",
        RecordKind::Attachment,
        snap.attachments,
        |_| Record::Attachment(attachments.next().expect("one per upsert")),
        &mut out,
    );
    let k_del = snap
        .api_keys
        .iter()
        .filter(|e| matches!(e, Entry::Delete(_)))
        .count();
    upserted.insert("api_keys", snap.api_keys.len() - k_del);
    deleted.insert("api_keys", k_del);
    changes.keys = new_keys;

    // The service's own consequences: tasks reminding of a placement that this import
    // undoes are cancelled (stamped after everything else in the workspace).
    let mut unplaced: HashSet<Uuid> = HashSet::new();
    for r in &changes.upserts {
        if let Record::Candidate(c) = r {
            let was_placed = state
                .candidates
                .get(&c.id)
                .is_some_and(|old| old.raw.outcome == Some(Outcome::Placed));
            if was_placed && c.outcome != Some(Outcome::Placed) {
                unplaced.insert(c.id);
            }
        }
    }
    if !unplaced.is_empty() {
        let reminds = |t: &Task| {
            t.status == TaskStatus::Open
                && t.placement_row_id.is_some_and(|p| unplaced.contains(&p))
        };
        let in_file: HashSet<Uuid> = changes
            .upserts
            .iter()
            .filter_map(|r| match r {
                Record::Task(t) => Some(t.id),
                _ => None,
            })
            .collect();
        let deleted_tasks: HashSet<&str> = changes
            .deletes
            .iter()
            .filter(|(k, _)| *k == RecordKind::Task)
            .map(|(_, id)| id.as_str())
            .collect();
        let mut cancel: Vec<Task> = changes
            .upserts
            .iter()
            .filter_map(|r| match r {
                Record::Task(t) if reminds(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        cancel.extend(
            state
                .tasks
                .iter()
                .filter(|(id, t)| {
                    !in_file.contains(id)
                        && !deleted_tasks.contains(id.to_string().as_str())
                        && reminds(t)
                })
                .map(|(_, t)| (**t).clone()),
        );
        let cancelled_ids: HashSet<Uuid> = cancel.iter().map(|t| t.id).collect();
        changes
            .upserts
            .retain(|r| !matches!(r, Record::Task(t) if cancelled_ids.contains(&t.id)));
        let mut clock = changes
            .upserts
            .iter()
            .filter_map(Record::updated_at)
            .fold(state.last_stamp, Stamp::max);
        for mut t in cancel {
            clock = Stamp::now().max(clock.next());
            t.status = TaskStatus::Cancelled;
            t.completed_at = None;
            t.updated_at = clock;
            changes.upserts.push(Record::Task(t));
        }
    }

    // Ids appear once per array, so what is new and what is removed add up exactly.
    let records_after = state.stored_records()
        + changes
            .upserts
            .iter()
            .filter(|r| !state.holds_record(r))
            .count()
        - changes
            .deletes
            .iter()
            .filter(|(k, id)| state.holds(*k, id))
            .count();

    // The next state, unless the caller only needs the change set (offline imports).
    let next = build_next.then(|| {
        let mut next = state.clone();
        // A bulk import rebuilds the search indexes once rather than key by key.
        let changed = changes.upserts.len() + changes.deletes.len();
        let held = state.candidates.len() + state.contacts.len() + state.companies.len();
        let bulk = changed >= BULK_IMPORT_RECORDS && changed * 4 >= held;
        if bulk {
            next.defer_search();
        }
        next.set_workspace(workspace.clone());
        for r in changes.upserts.iter().cloned() {
            next.put(r);
        }
        for (k, id) in &changes.deletes {
            next.delete(*k, id);
        }
        if bulk {
            next.rebuild_search();
        }
        next
    });

    Ok(ImportPlan {
        workspace,
        changes,
        blobs,
        next,
        upserted,
        deleted,
        records_after,
    })
}

#[cfg(test)]
mod tests;
