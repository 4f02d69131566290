//! Followers: a node that holds a workspace it does not write keeps its copy in step
//! with the writer's commits, from the change log (`actors::follow`).
//!
//! Every [`FOLLOW_EVERY`] the node reads, in one statement, the store's commit position
//! of every workspace it follows, and has each one that moved catch up (its actor reads
//! the log after its position and the records it names). So a write committed by the
//! writer is in every holder's copy a few tens of milliseconds later: reads a node
//! answers from its own copy (its writer unreachable) see it, and a holder that becomes
//! the writer is already at the store's position (no reload before its first commit).
//! The lag of each commit (from when it was made to when the copy holds it) is measured
//! where the copy applies it (`Held::follow`).

use super::writers::Held;
use super::Membership;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How often a node looks for commits to follow.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(20);

impl Membership {
    /// Follows the writers of the workspaces this node holds and does not write, for as
    /// long as the process runs (on its own, there is nothing to follow).
    pub async fn follow_writers(self: Arc<Self>, held: Arc<dyn Held>) {
        let Some(s) = &self.shared else {
            return;
        };
        let mut failing = false;
        loop {
            tokio::time::sleep(FOLLOW_EVERY).await;
            let followed: HashMap<Uuid, u64> = held
                .held()
                .into_iter()
                .filter(|(ws, _)| s.fences.epoch(*ws).is_none())
                .collect();
            if followed.is_empty() {
                continue;
            }
            let ids: Vec<String> = followed.keys().map(Uuid::to_string).collect();
            let positions: Vec<(String, i64)> = match sqlx::query_as(
                "SELECT workspace_id, position FROM commit_positions WHERE workspace_id = ANY($1)",
            )
            .bind(&ids)
            .fetch_all(&s.pool)
            .await
            {
                Ok(rows) => {
                    failing = false;
                    rows
                }
                Err(e) => {
                    if !std::mem::replace(&mut failing, true) {
                        tracing::warn!(error = %e, "reading the commit positions to follow");
                    }
                    continue;
                }
            };
            for (ws, position) in positions {
                let Ok(ws) = Uuid::parse_str(&ws) else {
                    continue;
                };
                if followed.get(&ws).is_some_and(|at| (*at as i64) < position) {
                    if let Err(e) = held.follow(ws).await {
                        tracing::warn!(workspace = %ws, error = %e, "following the workspace's writer");
                    }
                }
            }
        }
    }
}
