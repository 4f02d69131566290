//! The console's sessions. A login with the admin token opens one: a random id (32
//! bytes from the OS) goes to the browser in a cookie, and the server keeps only its
//! SHA-256 and its expiry, in memory (a restart logs everyone out). The cookie never
//! holds the token; a session id is worth reads of the console alone (see the module
//! above), and is never logged.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The cookie's name.
pub const COOKIE: &str = "recruitd_console";

/// How long a session lasts from its login (not renewed by use).
pub const LIFETIME: Duration = Duration::from_secs(8 * 3600);

/// Most sessions kept at once: a login past it ends the session that would end first.
pub const MOST: usize = 64;

/// Characters of a session id: 32 bytes, base64url without padding.
const ID_LEN: usize = 43;

/// See the module's docs.
pub struct Sessions {
    lifetime: Duration,
    /// SHA-256 of each open session's id → when it ends.
    open: parking_lot::Mutex<HashMap<[u8; 32], Instant>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new(LIFETIME)
    }
}

impl Sessions {
    pub fn new(lifetime: Duration) -> Self {
        Sessions {
            lifetime,
            open: Default::default(),
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session at `now`: its id, for the cookie (kept here only hashed).
    pub fn open(&self, now: Instant) -> String {
        use base64::Engine;
        use rand::RngCore;
        let mut raw = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut raw);
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
        let mut open = self.open.lock();
        open.retain(|_, ends| *ends > now);
        if open.len() >= MOST {
            if let Some(first) = open.iter().min_by_key(|(_, ends)| **ends).map(|(h, _)| *h) {
                open.remove(&first);
            }
        }
        open.insert(hash(&id), now + self.lifetime);
        id
    }

    /// Whether `id` names a session open at `now`.
    pub fn holds(&self, id: &str, now: Instant) -> bool {
        if id.len() != ID_LEN {
            return false;
        }
        let mut open = self.open.lock();
        let key = hash(id);
        match open.get(&key) {
            Some(ends) if *ends > now => true,
            Some(_) => {
                open.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Ends the session `id` names, if any.
    pub fn close(&self, id: &str) {
        self.open.lock().remove(&hash(id));
    }

    /// How many sessions are open (ended ones not yet forgotten included).
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn hash(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// The session id a request's `Cookie` headers carry, if any.
pub fn presented(req: &actix_web::HttpRequest) -> Option<&str> {
    req.headers()
        .get_all(actix_web::http::header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim_matches('"'))
}

/// The `Set-Cookie` value of a new session: sent back on the admin paths alone, never
/// readable by scripts, never sent with a request another site starts. `secure` marks it
/// for HTTPS alone (the admin listener serves plain HTTP today, so it is not set).
pub fn set_cookie(id: &str, lifetime: Duration, secure: bool) -> String {
    format!(
        "{COOKIE}={id}; Path=/admin; Max-Age={}; HttpOnly; SameSite=Strict{}",
        lifetime.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the cookie (a logout).
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_holds_until_it_ends_or_is_closed() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let id = sessions.open(t0);
        assert_eq!(id.len(), ID_LEN);
        assert!(sessions.holds(&id, t0 + Duration::from_secs(59)));
        assert!(!sessions.holds(&id, t0 + Duration::from_secs(60)));
        // Ended: forgotten at its first look after the end.
        assert!(sessions.is_empty());

        let id = sessions.open(t0);
        let other = sessions.open(t0);
        assert_ne!(id, other);
        sessions.close(&id);
        assert!(!sessions.holds(&id, t0));
        assert!(sessions.holds(&other, t0));
        // Any other string of the id's shape, or of another, names nothing.
        let forged = "A".repeat(ID_LEN);
        assert!(!sessions.holds(&forged, t0));
        assert!(!sessions.holds("", t0));
    }

    #[test]
    fn only_hashes_are_kept_and_a_full_table_ends_the_first_to_end() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let first = sessions.open(t0);
        let ids: Vec<String> = (1..MOST as u64)
            .map(|i| sessions.open(t0 + Duration::from_millis(i)))
            .collect();
        assert_eq!(sessions.len(), MOST);
        // What is kept is no id, only hashes of them.
        let kept = sessions.open.lock();
        assert!(kept.contains_key(&hash(&first)));
        assert!(kept
            .keys()
            .all(|k| ids.iter().all(|id| k.as_slice() != id.as_bytes())));
        drop(kept);
        let newest = sessions.open(t0 + Duration::from_secs(1));
        assert_eq!(sessions.len(), MOST);
        assert!(!sessions.holds(&first, t0 + Duration::from_secs(1)));
        assert!(sessions.holds(&ids[0], t0 + Duration::from_secs(1)));
        assert!(sessions.holds(&newest, t0 + Duration::from_secs(1)));
    }

    #[test]
    fn the_cookie_is_found_among_others_and_is_http_only_and_strict() {
        let req = actix_web::test::TestRequest::default()
            .insert_header(("cookie", "a=1; recruitd_console=abc; b=2"))
            .to_http_request();
        assert_eq!(presented(&req), Some("abc"));
        let req = actix_web::test::TestRequest::default()
            .insert_header(("cookie", "recruitd_console_x=1"))
            .to_http_request();
        assert_eq!(presented(&req), None);
        assert_eq!(
            set_cookie("abc", Duration::from_secs(3600), false),
            "recruitd_console=abc; Path=/admin; Max-Age=3600; HttpOnly; SameSite=Strict"
        );
        assert!(set_cookie("abc", LIFETIME, true).ends_with("; Secure"));
        assert!(clear_cookie().contains("Max-Age=0"));
    }
}
