//! Records' JSON as the API shows it, written straight into the answer's buffer.
//!
//! Each kind's view writes its JSON with [`Obj`], declared with the kind in `model`: keys
//! are static, ids and timestamps are formatted into stack buffers, and a text is copied
//! whole unless it holds a character JSON must escape. Lists, sub-resources, search and
//! write answers all write records this one way. Each view also has a serde copy in
//! tests, the plain reference: a test renders every record of workspaces, across every
//! change a view depends on, both ways and holds them equal.
//!
//! Nothing is cached: a full sync renders every record it reads, so a sync costs no
//! memory, and what a view derives from other records (a stage's name, a user's status)
//! is read fresh each time.

use crate::time::{reported_updated_at, Stamp};
use serde::Serialize;
use uuid::Uuid;

/// A view of a record that writes its own JSON.
pub trait Rendered: Reference {
    /// Appends the view's JSON.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;

    /// Asks the processor for the memory [`Self::write_json`] will read first, a few
    /// records ahead of writing it (a page walks records scattered over the heap, and
    /// waiting for each in turn was most of the time of writing it).
    fn prefetch(&self) {}
}

/// In tests, every view is also `Serialize`: the plain serde copy its writer is held
/// equal to. Builds carry no such copy.
#[cfg(any(test, feature = "oracle"))]
pub trait Reference: Serialize {}
#[cfg(any(test, feature = "oracle"))]
impl<T: Serialize + ?Sized> Reference for T {}
#[cfg(not(any(test, feature = "oracle")))]
pub trait Reference {}
#[cfg(not(any(test, feature = "oracle")))]
impl<T: ?Sized> Reference for T {}

/// Asks the processor to bring the cache line at `p` closer; never faults, never waits.
#[inline]
pub fn prefetch<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees, and the processor
    // ignores addresses it cannot reach.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches the first two cache lines of a packed record (its fixed fields and first
/// texts).
pub fn prefetch_packed(bytes: &[u8]) {
    prefetch(bytes.as_ptr());
    if let Some(b) = bytes.get(64) {
        prefetch(b);
    }
}

/// Prefetches the heap bytes of a record's texts.
pub fn prefetch_texts(texts: &[&Option<String>]) {
    for t in texts.iter().filter_map(|t| t.as_deref()) {
        prefetch(t.as_ptr());
    }
}

/// Whether serde_json would escape a character of `s` (controls, `"` and `\`; it copies
/// everything else, non-ASCII included, as it is). Eight bytes at a time: most texts
/// need nothing, and this check is most of what writing them costs.
pub fn needs_escape(s: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `w` is zero exactly where the high bit of the result is set (for bytes
    // that are not zero no false positives matter here: they are only rechecked below).
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let bytes = s.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        // Below 0x20: the top three bits clear. Then `"` and `\\` by equality.
        let control = has_zero(w & (0xe0 * ONES));
        let quote = has_zero(w ^ (u64::from(b'"') * ONES));
        let backslash = has_zero(w ^ (u64::from(b'\\') * ONES));
        if control | quote | backslash != 0 {
            return c.iter().any(|&b| escaped(b));
        }
    }
    chunks.remainder().iter().any(|&b| escaped(b))
}

fn escaped(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Appends `s` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    write_checked_str(out, s, needs_escape(s))
}

/// Appends `s` as a JSON string, `escape` saying whether [`needs_escape`] holds for it.
fn write_checked_str(out: &mut Vec<u8>, s: &str, escape: bool) {
    if escape {
        serde_json::to_writer(&mut *out, s).expect("writing to memory");
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// A JSON object being written: each call appends one member.
pub struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    pub fn begin(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    pub fn null(&mut self, key: &str) -> &mut Self {
        self.key(key).extend_from_slice(b"null");
        self
    }

    pub fn str(&mut self, key: &str, v: Option<&str>) -> &mut Self {
        match v {
            Some(s) => write_str(self.key(key), s),
            None => {
                self.null(key);
            }
        }
        self
    }

    /// A text whose escaping was decided when it was stored (a packed record's).
    pub fn text(&mut self, key: &str, v: Option<(&str, bool)>) -> &mut Self {
        match v {
            Some((s, escape)) => write_checked_str(self.key(key), s, escape),
            None => {
                self.null(key);
            }
        }
        self
    }

    pub fn uuid(&mut self, key: &str, v: Option<Uuid>) -> &mut Self {
        match v {
            Some(u) => {
                let mut buf = Uuid::encode_buffer();
                let text = u.hyphenated().encode_lower(&mut buf);
                let out = self.key(key);
                out.push(b'"');
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            }
            None => {
                self.null(key);
            }
        }
        self
    }

    pub fn stamp(&mut self, key: &str, v: Option<Stamp>) -> &mut Self {
        match v {
            Some(s) => {
                let mut buf = [0u8; 24];
                s.write_iso_ascii(&mut buf);
                let out = self.key(key);
                out.push(b'"');
                out.extend_from_slice(&buf);
                out.push(b'"');
            }
            None => {
                self.null(key);
            }
        }
        self
    }

    /// `created_at` and `updated_at` as a record reports them (the latter as
    /// [`reported_updated_at`] has it).
    pub fn times(&mut self, created_at: Stamp, updated_at: Stamp) -> &mut Self {
        self.stamp("created_at", Some(created_at)).stamp(
            "updated_at",
            Some(reported_updated_at(created_at, updated_at)),
        )
    }

    pub fn bool(&mut self, key: &str, v: bool) -> &mut Self {
        let text: &[u8] = if v { b"true" } else { b"false" };
        self.key(key).extend_from_slice(text);
        self
    }

    pub fn u64(&mut self, key: &str, v: Option<u64>) -> &mut Self {
        match v {
            Some(n) => {
                let mut buf = itoa::Buffer::new();
                self.key(key).extend_from_slice(buf.format(n).as_bytes());
            }
            None => {
                self.null(key);
            }
        }
        self
    }

    /// A value already in JSON (a number as serde_json wrote it).
    pub fn raw(&mut self, key: &str, json: Option<&str>) -> &mut Self {
        match json {
            Some(j) => self.key(key).extend_from_slice(j.as_bytes()),
            None => {
                self.null(key);
            }
        }
        self
    }

    /// Any value, through serde (small enumerations).
    pub fn serde<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> &mut Self {
        serde_json::to_writer(&mut *self.key(key), v).expect("writing to memory");
        self
    }

    /// `[text]`, or `[]` without one.
    pub fn one_or_none(&mut self, key: &str, v: Option<&str>) -> &mut Self {
        let out = self.key(key);
        out.push(b'[');
        if let Some(s) = v {
            write_str(out, s);
        }
        out.push(b']');
        self
    }

    /// A member whose value is an object written by `f`.
    pub fn object(&mut self, key: &str, f: impl FnOnce(&mut Obj<'_>)) -> &mut Self {
        let out = self.key(key);
        let mut inner = Obj::begin(out);
        f(&mut inner);
        inner.end();
        self
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod escape_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time check says what the byte-at-a-time one says.
        #[test]
        fn escapes_are_found_wherever_they_are(s in "(\\PC|[\\x00-\\x1f\"\\\\é✓]){0,40}") {
            prop_assert_eq!(needs_escape(&s), s.bytes().any(escaped));
            let mut out = Vec::new();
            write_str(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_vec(&s).unwrap());
        }
    }
}
