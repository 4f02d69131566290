//! Users: the workspace's members. The API lists them as `users`; other records name them
//! as owners, authors and recruiters, and a user's activity decides whether those
//! references are shown.

use super::shared::{field, ApiField, Shape::*, Surroundings, View};
use crate::packed::rec::{accessors, id_bytes, stamp_word, Rec};
use crate::packed::Writer;
use crate::rendered::{Obj, Rendered};
use crate::time::Stamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserStatus {
    Active,
    Invited,
    Removed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub id: Uuid,
    pub name: Option<String>,
    pub email: Option<String>,
    pub role: Option<String>,
    pub status: UserStatus,
    pub created_at: Stamp,
    pub updated_at: Stamp,
}

impl User {
    pub fn is_active(&self) -> bool {
        self.status == UserStatus::Active
    }
}

/// Where each field sits in the packed layout: its class (ids, words, bytes, flags,
/// texts) and its index within it.
pub(crate) mod layout {
    pub const ID: u8 = 0;
    pub const CREATED: u8 = 0;
    pub const UPDATED: u8 = 1;
    pub const STATUS: u8 = 0;
    pub const NAME: u8 = 0;
    pub const EMAIL: u8 = 1;
    pub const ROLE: u8 = 2;
}

fn user_status_code(s: UserStatus) -> u8 {
    match s {
        UserStatus::Active => 0,
        UserStatus::Invited => 1,
        UserStatus::Removed => 2,
    }
}

impl Rec<User> {
    pub fn pack(u: &User) -> Arc<Self> {
        use layout::*;
        let mut w = Writer::default();
        w.id(ID, id_bytes(Some(u.id)))
            .word(CREATED, stamp_word(Some(u.created_at)))
            .word(UPDATED, stamp_word(Some(u.updated_at)))
            .byte(STATUS, Some(user_status_code(u.status)))
            .text(NAME, u.name.as_deref())
            .text(EMAIL, u.email.as_deref())
            .text(ROLE, u.role.as_deref());
        Rec::new(w.finish())
    }

    pub fn status(&self) -> UserStatus {
        match self.packed().byte(layout::STATUS) {
            Some(0) => UserStatus::Active,
            Some(1) => UserStatus::Invited,
            _ => UserStatus::Removed,
        }
    }

    pub fn is_active(&self) -> bool {
        self.status() == UserStatus::Active
    }

    pub fn raw(&self) -> User {
        use layout::*;
        let t = self.text_fields();
        User {
            id: self.id(),
            name: t.string(NAME),
            email: t.string(EMAIL),
            role: t.string(ROLE),
            status: self.status(),
            created_at: self.created_at(),
            updated_at: self.updated_at(),
        }
    }
}

accessors!(User {
    id: uuid(layout::ID) -> Uuid;
    created_at: stamp(layout::CREATED) -> Stamp;
    updated_at: stamp(layout::UPDATED) -> Stamp;
    name: text(layout::NAME) -> Option<&str>;
    email: text(layout::EMAIL) -> Option<&str>;
    role: text(layout::ROLE) -> Option<&str>;
});

/// The members of a user as the API shows it, in order.
#[rustfmt::skip]
pub const API_FIELDS: &[ApiField] = &[
    field("id", Text, ""),
    field("name", NullableText, "Full name."),
    field("email", NullableText, ""),
    field("active", Bool, "True for live access; false for a never-accepted invitation."),
    field("role", NullableText, "Workspace role."),
    field("external_id", Null, "Always null."),
    field("created_at", Stamp, ""),
    field("updated_at", Stamp, "Never null. A change to name, e-mail, role or invitation acceptance moves `updated_at`."),
];

impl<W: Surroundings> Rendered for View<'_, W, User> {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let u = self.rec;
        let mut o = Obj::begin(out);
        o.uuid("id", Some(u.id))
            .str("name", u.name.as_deref())
            .str("email", u.email.as_deref())
            .bool("active", u.is_active())
            .str("role", u.role.as_deref())
            .null("external_id")
            .times(u.created_at, u.updated_at);
        o.end();
        Ok(())
    }
}

// The serde copy of the view (see `rendered`).
#[cfg(any(test, feature = "oracle"))]
mod oracle {
    use super::*;
    use crate::time::reported_updated_at;
    use serde::Serializer;

    #[derive(Serialize)]
    struct UserOut<'a> {
        id: &'a Uuid,
        name: Option<&'a str>,
        email: Option<&'a str>,
        active: bool,
        role: Option<&'a str>,
        external_id: Option<()>,
        created_at: Stamp,
        updated_at: Stamp,
    }

    impl<W: Surroundings> Serialize for View<'_, W, User> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let u = self.rec;
            UserOut {
                id: &u.id,
                name: u.name.as_deref(),
                email: u.email.as_deref(),
                active: u.is_active(),
                role: u.role.as_deref(),
                external_id: None,
                created_at: u.created_at,
                updated_at: reported_updated_at(u.created_at, u.updated_at),
            }
            .serialize(s)
        }
    }
}
