//! API keys: the key ring every request authenticates against, and the key service, the
//! one way keys are created and revoked outside imports (the admin interface and the
//! command line alike).
//!
//! A request is parsed first ([`NewKey::parse`]: scopes, rate limit), before any store is
//! read or anything else is done, so a bad request costs nothing. The key is then built
//! against its creator ([`build_key`]), a user the caller looked up however is cheapest
//! for it: the admin interface in the loaded workspace, the command line by reading only
//! the workspace's users from the store ([`KeyService::member`]). The service commits the
//! key and only then puts it in the ring, so the ring never holds a key the store lacks.

use crate::model::{hash_secret, ApiKey, Record, RecordKind, Scope, Scopes, User};
use crate::store::{ChangeSet, Store, StoreError};
use dashmap::DashMap;
use rand::RngCore;
use std::sync::Arc;
use uuid::Uuid;

/// What an import's planner (`crate::snapshot`) needs to know about the keys that already exist (of any workspace).
pub trait KeyDirectory {
    /// The key with this id, if the id is taken.
    fn key(&self, key_id: &str) -> Option<ApiKey>;
    /// The id of the key holding a secret hash, if any.
    fn key_by_hash(&self, hash: &[u8; 32]) -> Option<String>;
}

/// All API keys, by secret hash (the authentication path) and by id (admin paths).
#[derive(Default)]
pub struct KeyRing {
    by_hash: DashMap<[u8; 32], Arc<ApiKey>>,
    by_id: DashMap<String, Arc<ApiKey>>,
    /// When the keys were last read for a secret the ring did not know (milliseconds
    /// since the epoch), see [`KeyRing::reload_for_unknown`].
    unknown_read_at: std::sync::atomic::AtomicU64,
}

impl KeyRing {
    /// Inserts or replaces a key (after the store has committed it).
    pub fn put(&self, key: ApiKey) {
        let key = Arc::new(key);
        if let Some(old) = self.by_id.insert(key.id.clone(), key.clone()) {
            if old.secret_hash != key.secret_hash {
                self.by_hash.remove(&old.secret_hash);
            }
        }
        self.by_hash.insert(key.secret_hash, key);
    }

    /// The key a client presented, by its secret (revoked keys included; callers check).
    pub fn by_secret(&self, secret: &str) -> Option<Arc<ApiKey>> {
        self.by_hash
            .get(&hash_secret(secret))
            .map(|k| k.value().clone())
    }

    pub fn by_id(&self, id: &str) -> Option<Arc<ApiKey>> {
        self.by_id.get(id).map(|k| k.value().clone())
    }

    /// The keys of one workspace, revoked ones included, in id order (a walk of every
    /// key: for the operator's views, never a request's path).
    pub fn of_workspace(&self, workspace: Uuid) -> Vec<Arc<ApiKey>> {
        let mut keys: Vec<Arc<ApiKey>> = self
            .by_id
            .iter()
            .filter(|k| k.workspace_id == workspace)
            .map(|k| k.value().clone())
            .collect();
        keys.sort_by(|a, b| a.id.cmp(&b.id));
        keys
    }

    /// Reads the keys afresh for a presented secret the ring does not know (a key made
    /// through another server since the ring was read): at once when `certain` (another
    /// server knew the key), otherwise at most once a second, so that a flood of bad
    /// keys is not a flood of store reads.
    pub async fn reload_for_unknown(
        &self,
        store: &dyn Store,
        certain: bool,
    ) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        let now = crate::store::now_ms() as u64;
        let last = self.unknown_read_at.load(Ordering::Relaxed);
        let throttled = now.saturating_sub(last) < 1000
            || self
                .unknown_read_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err();
        if throttled && !certain {
            return Ok(());
        }
        self.load(store).await.map(drop)
    }

    /// Reads every key of the store into the ring; how many there are.
    pub async fn load(&self, store: &dyn Store) -> Result<usize, StoreError> {
        let keys = store.keys().await?;
        let n = keys.len();
        for k in keys {
            self.put(k);
        }
        Ok(n)
    }
}

impl KeyDirectory for KeyRing {
    fn key(&self, key_id: &str) -> Option<ApiKey> {
        self.by_id(key_id).map(|k| (*k).clone())
    }
    fn key_by_hash(&self, hash: &[u8; 32]) -> Option<String> {
        self.by_hash.get(hash).map(|k| k.id.clone())
    }
}

/// A checked request for a new key.
#[derive(Clone, Debug)]
pub struct NewKey {
    /// Lower-cased, as user e-mails are compared.
    pub created_by_email: String,
    pub scopes: Scopes,
    pub rate_limit_per_minute: Option<u32>,
}

impl NewKey {
    /// Checks the request's own fields; the errors are messages for the operator.
    /// `scopes` may hold several comma-separated scopes per entry; `read` is implied.
    pub fn parse(
        created_by_email: &str,
        scopes: &[String],
        rate_limit_per_minute: Option<u32>,
    ) -> Result<NewKey, String> {
        let mut parsed = Scopes::read_only();
        for s in scopes {
            for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                parsed = parsed.with(Scope::parse(part).ok_or_else(|| {
                    format!(
                        "unknown scope {part:?}: expected read, notes:write, tasks:write, records:write or webhooks:write"
                    )
                })?);
            }
        }
        if rate_limit_per_minute == Some(0) {
            return Err("rate_limit_per_minute must be at least 1".into());
        }
        let email = created_by_email.trim().to_lowercase();
        if email.is_empty() {
            return Err("the creator's e-mail is empty".into());
        }
        Ok(NewKey {
            created_by_email: email,
            scopes: parsed,
            rate_limit_per_minute,
        })
    }
}

/// A key request as the admin interface takes it (`POST /admin/v1/keys`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRequest {
    workspace_id: Uuid,
    created_by_email: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    rate_limit_per_minute: Option<u32>,
}

/// The workspace and the key a request body asks for, or why it cannot be granted.
pub fn parse_key_request(body: &[u8]) -> Result<(Uuid, NewKey), String> {
    let kr: KeyRequest =
        serde_json::from_slice(body).map_err(|e| format!("invalid key request: {e}"))?;
    let new_key = NewKey::parse(&kr.created_by_email, &kr.scopes, kr.rate_limit_per_minute)?;
    Ok((kr.workspace_id, new_key))
}

/// Why a key was not created.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The request cannot be granted (the creator, the scopes); a message for the operator.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a user may create keys: an active owner or administrator of the workspace
/// ("keys are created by a workspace owner or administrator").
pub fn may_create_keys(user: &User) -> bool {
    user.is_active() && role_creates_keys(user.role.as_deref())
}

/// Whether a role is one that creates keys: owner or administrator.
fn role_creates_keys(role: Option<&str>) -> bool {
    role.is_some_and(|r| {
        ["owner", "admin", "administrator"]
            .iter()
            .any(|allowed| r.eq_ignore_ascii_case(allowed))
    })
}

/// Fewest characters a key's secret may have.
pub const MIN_SECRET_CHARS: usize = 20;
/// Fewest distinct characters a key's secret may have.
pub const MIN_SECRET_DISTINCT: usize = 10;
/// Fewest bits a secret must be worth, estimated as its length times the bits of one
/// character drawn from as many symbols as it has distinct ones.
pub const MIN_SECRET_BITS: f64 = 80.0;

/// Why a secret given from outside (a snapshot's `api_keys[].secret`) is too weak to
/// guard a workspace, if it is: fewer than `MIN_SECRET_CHARS` characters, fewer than
/// `MIN_SECRET_DISTINCT` distinct ones, under `MIN_SECRET_BITS` by the estimate above,
/// or characters a client could not send in an `Authorization` header (whitespace,
/// controls, anything outside visible ASCII). A floor against guessable secrets
/// (`"a"`, `"password"`, `"aaaa…"`), not a measure of randomness: secrets made by
/// [`new_key_secret`] carry 256 random bits.
pub fn weak_secret(secret: &str) -> Option<String> {
    if let Some(c) = secret.chars().find(|c| !c.is_ascii_graphic()) {
        return Some(format!(
            "must be visible ASCII characters only (found {:?})",
            c
        ));
    }
    let chars = secret.len();
    if chars < MIN_SECRET_CHARS {
        return Some(format!(
            "is too short: {chars} characters, at least {MIN_SECRET_CHARS} are required \
             (`recruitd key create` makes strong ones)"
        ));
    }
    let mut seen = [false; 128];
    for b in secret.bytes() {
        seen[b as usize] = true;
    }
    let distinct = seen.iter().filter(|&&s| s).count();
    let bits = chars as f64 * (distinct as f64).log2();
    if distinct < MIN_SECRET_DISTINCT || bits < MIN_SECRET_BITS {
        return Some(format!(
            "is too weak: {distinct} distinct characters in {chars}; use a random secret \
             of at least {MIN_SECRET_CHARS} characters (`recruitd key create` makes strong ones)"
        ));
    }
    None
}

/// The user to suggest as a key's creator: the earliest active owner, else the earliest
/// active administrator.
pub fn suggested_creator<'a>(users: impl IntoIterator<Item = &'a User>) -> Option<&'a User> {
    users
        .into_iter()
        .filter(|u| may_create_keys(u))
        .min_by_key(|u| {
            let owner = u
                .role
                .as_deref()
                .is_some_and(|r| r.eq_ignore_ascii_case("owner"));
            (!owner, u.created_at, u.id)
        })
}

/// Builds a key of `workspace` created by `creator` (the user whose e-mail the request
/// names, `None` when the workspace has no such user). The secret is returned once,
/// never kept. Errors are messages for the operator.
pub fn build_key(
    workspace: Uuid,
    creator: Option<&User>,
    req: &NewKey,
) -> Result<(ApiKey, String), String> {
    let user = creator.ok_or_else(|| {
        format!(
            "no user with e-mail {:?} in the workspace",
            req.created_by_email
        )
    })?;
    if !user.is_active() {
        return Err(format!(
            "user {:?} is not an active member of the workspace; a key they create would not work",
            req.created_by_email
        ));
    }
    if !may_create_keys(user) {
        return Err(format!(
            "user {:?} is a {}; keys are created by a workspace owner or administrator",
            req.created_by_email,
            user.role.as_deref().unwrap_or("member without a role")
        ));
    }
    let secret = new_key_secret();
    Ok((
        ApiKey {
            id: new_key_id(),
            workspace_id: workspace,
            secret_hash: hash_secret(&secret),
            scopes: req.scopes,
            created_by: user.id,
            revoked: false,
            rate_limit_per_minute: req.rate_limit_per_minute,
            created_at: None,
        },
        secret,
    ))
}

/// A fresh API key secret: `rk_` and 43 characters of base64url (256 bits).
pub fn new_key_secret() -> String {
    use base64::Engine;
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    format!(
        "rk_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    )
}

/// A fresh key id: `key_` and 16 hex digits.
pub fn new_key_id() -> String {
    let mut b = [0u8; 8];
    rand::rngs::OsRng.fill_bytes(&mut b);
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("key_{hex}")
}

/// Creates and revokes keys: the store first, then the ring.
#[derive(Clone)]
pub struct KeyService {
    store: Arc<dyn Store>,
    ring: Arc<KeyRing>,
}

impl KeyService {
    pub fn new(store: Arc<dyn Store>, ring: Arc<KeyRing>) -> Self {
        KeyService { store, ring }
    }

    /// Creates a key of `workspace` by `creator` (see [`build_key`]); the key and its
    /// secret, shown this once.
    pub async fn create(
        &self,
        workspace: Uuid,
        creator: Option<&User>,
        req: &NewKey,
    ) -> Result<(ApiKey, String), KeyError> {
        let (key, secret) = build_key(workspace, creator, req).map_err(KeyError::Refused)?;
        self.store
            .commit(
                workspace,
                &ChangeSet {
                    keys: vec![key.clone()],
                    ..ChangeSet::default()
                },
            )
            .await?;
        self.ring.put(key.clone());
        Ok((key, secret))
    }

    /// Creates a key of a workspace this node holds, by the creator `req` names as
    /// `state` (the workspace as loaded) has it.
    pub async fn create_in(
        &self,
        state: &crate::state::WorkspaceState,
        req: &NewKey,
    ) -> Result<(ApiKey, String), KeyError> {
        let creator = state
            .users_by_email
            .get(req.created_by_email.as_str())
            .and_then(|id| state.users.get(id));
        self.create(state.id(), creator.map(|u| &**u), req).await
    }

    /// Revokes a key; the key as it now stands, or `None` for an unknown id. Effective on
    /// the next request that presents it.
    pub async fn revoke(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        let revoked = self.store.revoke_key(id).await?;
        if let Some(k) = &revoked {
            self.ring.put(k.clone());
        }
        Ok(revoked)
    }

    /// The user of `workspace` with this (lower-cased) e-mail, read from the store's
    /// users alone: for a caller that has not loaded the workspace.
    pub async fn member(&self, workspace: Uuid, email: &str) -> Result<Option<User>, StoreError> {
        let mut found = None;
        self.store
            .load_kind(workspace, RecordKind::User, &mut |r| {
                if let Record::User(u) = r {
                    if u.email.as_deref().map(str::to_lowercase).as_deref() == Some(email) {
                        found = Some(u);
                    }
                }
            })
            .await?;
        Ok(found)
    }

    /// An active owner's (else administrator's) e-mail in `workspace`, read from its
    /// users alone: who to name when suggesting `key create`.
    pub async fn suggested_creator(&self, workspace: Uuid) -> Result<Option<String>, StoreError> {
        let mut users = Vec::new();
        self.store
            .load_kind(workspace, RecordKind::User, &mut |r| {
                if let Record::User(u) = r {
                    users.push(u);
                }
            })
            .await?;
        Ok(suggested_creator(&users).and_then(|u| u.email.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::UserStatus;
    use crate::store::MemoryStore;

    fn user(role: &str, status: UserStatus) -> User {
        serde_json::from_value(serde_json::json!({
            "id": "0986a580-8fc6-5461-afb0-b69c0a512919",
            "email": "a@b.example", "role": role, "status": status,
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn requests_are_checked_before_anything_else() {
        let scopes = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            NewKey::parse("a@b.example", &scopes(&["notes:write,records:write"]), None).is_ok()
        );
        let err = NewKey::parse("a@b.example", &scopes(&["notes:wirte"]), None).unwrap_err();
        assert!(err.contains("unknown scope \"notes:wirte\""), "{err}");
        assert!(NewKey::parse("a@b.example", &[], Some(0)).is_err());
        assert!(NewKey::parse("  ", &[], None).is_err());
        assert_eq!(
            NewKey::parse(" A@B.Example ", &[], None)
                .unwrap()
                .created_by_email,
            "a@b.example"
        );
    }

    #[test]
    fn only_active_owners_and_administrators_create_keys() {
        let req = NewKey::parse("a@b.example", &[], None).unwrap();
        let ws = Uuid::new_v4();
        for role in ["owner", "admin", "Administrator"] {
            let (key, secret) = build_key(ws, Some(&user(role, UserStatus::Active)), &req)
                .unwrap_or_else(|e| panic!("{role}: {e}"));
            assert_eq!(key.workspace_id, ws);
            assert_eq!(key.secret_hash, hash_secret(&secret));
        }
        for role in ["recruiter", "researcher", ""] {
            let err = build_key(ws, Some(&user(role, UserStatus::Active)), &req).unwrap_err();
            assert!(err.contains("owner or administrator"), "{role}: {err}");
        }
        let err = build_key(ws, Some(&user("owner", UserStatus::Invited)), &req).unwrap_err();
        assert!(err.contains("not an active member"), "{err}");
        assert!(build_key(ws, None, &req).unwrap_err().contains("no user"));
    }

    #[test]
    fn the_suggested_creator_is_an_active_owner_before_an_administrator() {
        let admin = user("admin", UserStatus::Active);
        let mut owner = user("owner", UserStatus::Active);
        owner.id = Uuid::new_v4();
        let gone = user("owner", UserStatus::Removed);
        let recruiter = user("recruiter", UserStatus::Active);
        assert_eq!(
            suggested_creator([&admin, &gone, &owner]).map(|u| u.id),
            Some(owner.id)
        );
        assert_eq!(
            suggested_creator([&recruiter, &admin]).map(|u| u.id),
            Some(admin.id)
        );
        assert!(suggested_creator([&recruiter, &gone]).is_none());
    }

    #[tokio::test]
    async fn the_service_commits_before_the_ring_knows_and_revokes_the_same_way() {
        let store = MemoryStore::new();
        let ring = Arc::new(KeyRing::default());
        let service = KeyService::new(store.clone(), ring.clone());
        let ws = Uuid::new_v4();
        let req = NewKey::parse("a@b.example", &["notes:write".into()], None).unwrap();
        // A store that refuses: no key anywhere.
        store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let owner = user("owner", UserStatus::Active);
        assert!(matches!(
            service.create(ws, Some(&owner), &req).await,
            Err(KeyError::Store(_))
        ));
        store.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(store.keys().await.unwrap().is_empty());
        let (key, secret) = service.create(ws, Some(&owner), &req).await.unwrap();
        assert_eq!(ring.by_secret(&secret).unwrap().id, key.id);
        assert_eq!(store.keys().await.unwrap().len(), 1);
        let revoked = service.revoke(&key.id).await.unwrap().unwrap();
        assert!(revoked.revoked && ring.by_id(&key.id).unwrap().revoked);
        assert!(service.revoke("key_nope").await.unwrap().is_none());
    }
}
