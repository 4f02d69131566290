//! A packed record of one kind, `Rec<T>`, and what every kind's layout is written with:
//! the conversions of ids, timestamps and numbers to packed fields, and the `accessors!`
//! macro that names a kind's fields. Each kind's own layout (which class and index holds
//! what, `pack` and `raw`) is declared with the kind, in `model`.
//!
//! Numbers (salaries) are kept as the JSON text serde_json writes for them, so that a
//! rendering copies them and unpacking parses them back to the same value; dates as their
//! `YYYY-MM-DD` text.

use super::Packed;
use crate::time::Stamp;
use serde_json::Number;
use std::marker::PhantomData;
use std::sync::Arc;
use uuid::Uuid;

/// A record of kind `T`, packed; held as `Arc<Rec<T>>` (one allocation).
#[repr(transparent)]
pub struct Rec<T> {
    kind: PhantomData<fn() -> T>,
    packed: Packed,
}

impl<T> std::fmt::Debug for Rec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rec<{}>({:?})", std::any::type_name::<T>(), &self.packed)
    }
}

impl<T> PartialEq for Rec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.packed == other.packed
    }
}

impl<T> Rec<T> {
    pub(crate) fn new(packed: Arc<Packed>) -> Arc<Self> {
        // SAFETY: `Rec<T>` is a `repr(transparent)` wrapper of `Packed` (its other field
        // is zero-sized), so a pointer to the one is a valid pointer to the other.
        unsafe { Arc::from_raw(Arc::into_raw(packed) as *const Rec<T>) }
    }

    pub fn packed(&self) -> &Packed {
        &self.packed
    }

    /// A record of this kind from checked bytes (a checkpoint).
    pub fn from_packed(packed: Arc<Packed>) -> Arc<Self> {
        Rec::new(packed)
    }

    /// The packed bytes, as the `Arc` they are held in.
    pub fn into_packed(rec: Arc<Self>) -> Arc<Packed> {
        // SAFETY: the inverse of `new`: `Rec<T>` is a `repr(transparent)` wrapper of
        // `Packed`, so a pointer to the one is a valid pointer to the other.
        unsafe { Arc::from_raw(Arc::into_raw(rec) as *const Packed) }
    }

    pub(crate) fn uuid(&self, i: u8) -> Option<Uuid> {
        self.packed.id(i).map(Uuid::from_bytes)
    }

    pub(crate) fn stamp(&self, i: u8) -> Option<Stamp> {
        self.packed.word(i).map(|w| Stamp::from_millis(w as i64))
    }

    /// A copy with the timestamp `i`, which must be present, at `s`.
    pub(crate) fn with_stamp(&self, i: u8, s: Stamp) -> Arc<Self> {
        Rec::new(self.packed.with_word(i, s.millis() as u64))
    }

    /// Every text field, read in one pass: for `raw`, which reads them all (one by one,
    /// each would walk the texts before it).
    pub(crate) fn text_fields(&self) -> TextFields<'_> {
        TextFields(self.packed.text_table())
    }

    /// The record's id as the tables key it: a UUID's 16 bytes, an attachment's id text.
    /// Byte order is the API's id order (UUIDs compare as their bytes, texts as theirs).
    pub fn key(&self) -> &[u8] {
        match self.packed.id(0) {
            // Id 0 is the id of every UUID-keyed kind and is stored first.
            Some(_) => &self.packed.bytes()[8..24],
            None => self
                .packed
                .text(ATTACHMENT_ID)
                .expect("an attachment has an id")
                .as_bytes(),
        }
    }
}

/// The text holding an attachment's id, which keys it: attachments are the one kind not
/// keyed by a UUID, and leave id 0 empty so that [`Rec::key`] tells the two apart.
pub(crate) const ATTACHMENT_ID: u8 = 0;

/// A record's text fields by index (`Rec::text_fields`).
pub(crate) struct TextFields<'a>([Option<(&'a str, bool)>; 32]);

impl TextFields<'_> {
    pub(crate) fn string(&self, i: u8) -> Option<String> {
        self.0[usize::from(i)].map(|(s, _)| s.to_string())
    }

    pub(crate) fn number(&self, i: u8) -> Option<Number> {
        self.0[usize::from(i)].map(|(s, _)| {
            serde_json::from_str(s).expect("numbers are kept as serde_json wrote them")
        })
    }
}

pub(crate) fn id_bytes(u: Option<Uuid>) -> Option<[u8; 16]> {
    u.map(|u| *u.as_bytes())
}

pub(crate) fn stamp_word(s: Option<Stamp>) -> Option<u64> {
    s.map(|s| s.millis() as u64)
}

pub(crate) fn number_text(n: &Option<Number>) -> Option<String> {
    n.as_ref().map(|n| n.to_string())
}

/// Defines typed accessors: `name: class(index) -> type`.
macro_rules! accessors {
    ($t:ty { $($name:ident: $how:ident($field:expr) -> $ret:ty;)* }) => {
        impl $crate::packed::rec::Rec<$t> {
            $(
                pub fn $name(&self) -> $ret {
                    $crate::packed::rec::accessors!(@get self, $how, $field)
                }
            )*
        }
    };
    (@get $s:ident, uuid, $f:expr) => { $s.uuid($f).expect("a required id") };
    (@get $s:ident, opt_uuid, $f:expr) => { $s.uuid($f) };
    (@get $s:ident, stamp, $f:expr) => { $s.stamp($f).expect("a required timestamp") };
    (@get $s:ident, opt_stamp, $f:expr) => { $s.stamp($f) };
    (@get $s:ident, text, $f:expr) => { $s.packed().text($f) };
    (@get $s:ident, flag, $f:expr) => { $s.packed().flag($f) };
}

pub(crate) use accessors;
