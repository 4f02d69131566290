//! Creating API keys (admin interface and `recruitd key create`).

use crate::secrets::{new_key_id, new_key_secret};
use actors::model::{hash_secret, ApiKey, Scope, Scopes};
use actors::state::WorkspaceState;

/// A request for a new key.
pub struct NewKey<'a> {
    pub created_by_email: &'a str,
    pub scopes: &'a [String],
    pub rate_limit_per_minute: Option<u32>,
}

/// Builds a key for `state`'s workspace; the secret is returned once, never kept.
/// Errors are messages for the operator.
pub fn build_key(state: &WorkspaceState, req: &NewKey<'_>) -> Result<(ApiKey, String), String> {
    let email = req.created_by_email.trim().to_lowercase();
    let user_id = *state.users_by_email.get(email.as_str()).ok_or_else(|| {
        format!(
            "no user with e-mail {:?} in the workspace",
            req.created_by_email
        )
    })?;
    if !state.user_is_active(user_id) {
        return Err(format!(
            "user {:?} is not an active member of the workspace; a key they create would not work",
            req.created_by_email
        ));
    }
    let mut scopes = Scopes::read_only();
    for s in req.scopes {
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            scopes = scopes.with(Scope::parse(part).ok_or_else(|| {
                format!("unknown scope {part:?}: expected read, notes:write, tasks:write or records:write")
            })?);
        }
    }
    if req.rate_limit_per_minute == Some(0) {
        return Err("rate_limit_per_minute must be at least 1".into());
    }
    let secret = new_key_secret();
    Ok((
        ApiKey {
            id: new_key_id(),
            workspace_id: state.id(),
            secret_hash: hash_secret(&secret),
            scopes,
            created_by: user_id,
            revoked: false,
            rate_limit_per_minute: req.rate_limit_per_minute,
            created_at: None,
        },
        secret,
    ))
}
