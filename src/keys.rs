//! Creating API keys (admin interface and `recruitd key create`).
//!
//! A request is parsed first ([`NewKey::parse`]: scopes, rate limit), before any store is
//! opened or anything else is done, so a bad request costs nothing. The key is then built
//! against its creator ([`build_key`]), a user the caller looked up however is cheapest
//! for it: the admin interface in the loaded workspace, the CLI by reading only the
//! workspace's users from the store.

use crate::secrets::{new_key_id, new_key_secret};
use actors::model::{hash_secret, ApiKey, Scope, Scopes, User};
use uuid::Uuid;

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
                        "unknown scope {part:?}: expected read, notes:write, tasks:write or records:write"
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

/// Whether a user may create keys: an active owner or administrator of the workspace
/// ("keys are created by a workspace owner or administrator").
pub fn may_create_keys(user: &User) -> bool {
    user.is_active()
        && user.role.as_deref().is_some_and(|r| {
            ["owner", "admin", "administrator"]
                .iter()
                .any(|allowed| r.eq_ignore_ascii_case(allowed))
        })
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

/// An active owner's (else administrator's) e-mail in a workspace of the store, read
/// from its users alone.
pub async fn suggested_creator_in(
    store: &dyn actors::store::Store,
    workspace: uuid::Uuid,
) -> anyhow::Result<Option<String>> {
    let mut users = Vec::new();
    store
        .load_kind(workspace, actors::model::RecordKind::User, &mut |r| {
            if let actors::model::Record::User(u) = r {
                users.push(u);
            }
        })
        .await?;
    Ok(suggested_creator(&users).and_then(|u| u.email.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use actors::model::UserStatus;

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
}
