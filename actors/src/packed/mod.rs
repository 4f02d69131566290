//! Records as a workspace holds them in memory: each record version is one immutable
//! allocation of bytes, shared by every state that holds it (a thin `Arc`, one word).
//!
//! A million people are six million records, so a record costs what its data costs and
//! little more. The layout of every kind is the same:
//!
//! ```text
//! [mask: u64 LE] [16-byte fields] [8-byte fields] [1-byte fields] [texts]
//! ```
//!
//! - The mask says which fields are present, and holds the booleans. Its bits are
//!   grouped by class: 16-byte fields (UUIDs) at bits 0–7, 8-byte words (timestamps,
//!   sizes) at 8–15, bytes (enumerations) at 16–23, flags at 24–31, texts at 32–63.
//! - Fixed-size fields are stored only when present, in bit order within their class,
//!   so a field's offset is a population count of the mask: O(1), no table.
//! - Texts follow, each present one as a LEB128 varint `len << 1 | escape` and its UTF-8
//!   bytes, unescaped. `escape` says whether JSON needs any of its bytes escaped; most
//!   texts need none, so a rendering copies them as they are.
//!
//! Which field is which is each kind's business ([`kinds`]); this module knows the
//! classes only. [`Packed`] holds the bytes; [`Writer`] builds them.

pub mod rec;

use std::fmt;
use std::sync::Arc;

/// The class of a field and its index within the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// 16 bytes (a UUID); index 0–7.
    Id(u8),
    /// 8 bytes (a timestamp, a size); index 0–7.
    Word(u8),
    /// 1 byte (an enumeration's code); index 0–7.
    Byte(u8),
    /// A boolean kept in the mask; index 0–7.
    Flag(u8),
    /// A UTF-8 text of any length; index 0–31.
    Text(u8),
}

const ID_BITS: u32 = 0;
const WORD_BITS: u32 = 8;
const BYTE_BITS: u32 = 16;
const FLAG_BITS: u32 = 24;
const TEXT_BITS: u32 = 32;
const HEADER: usize = 8;

/// The bits of one class of the mask, below `index` (all of them for `index` = 8/32).
fn class_bits_below(mask: u64, base: u32, index: u8) -> u32 {
    let class = (mask >> base) & if base == TEXT_BITS { u64::MAX } else { 0xff };
    (class & ((1u64 << index) - 1)).count_ones()
}

fn class_count(mask: u64, base: u32) -> u32 {
    let width = if base == TEXT_BITS { 32 } else { 8 };
    ((mask >> base) & ((1u64 << width) - 1)).count_ones()
}

pub use crate::rendered::needs_escape;

/// One record version's bytes, held as `Arc<Packed>`: one allocation with the reference
/// count, so that a table's row reaches the bytes in one step.
#[repr(transparent)]
pub struct Packed([u8]);

impl fmt::Debug for Packed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Packed({} bytes)", self.bytes().len())
    }
}

impl PartialEq for Packed {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Packed {
    /// Takes bytes a [`Writer`] made (or a checked copy of them).
    fn from_bytes(bytes: &[u8]) -> Arc<Packed> {
        let shared: Arc<[u8]> = Arc::from(bytes);
        // SAFETY: `Packed` is a `repr(transparent)` wrapper of `[u8]`, so the pointer to
        // the slice (its length included) is a valid pointer to a `Packed`.
        unsafe { Arc::from_raw(Arc::into_raw(shared) as *const Packed) }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Heap bytes of this version: the allocation's header, length and data.
    pub fn heap_size(&self) -> usize {
        2 * std::mem::size_of::<usize>() + self.bytes().len()
    }

    fn mask(&self) -> u64 {
        u64::from_le_bytes(self.bytes()[..HEADER].try_into().expect("8 bytes"))
    }

    fn has(&self, bit: u32) -> bool {
        self.mask() & (1u64 << bit) != 0
    }

    fn fixed_at(&self, f: Field) -> Option<usize> {
        let mask = self.mask();
        let ids = 16 * class_count(mask, ID_BITS) as usize;
        let words = 8 * class_count(mask, WORD_BITS) as usize;
        let (base, start, width) = match f {
            Field::Id(i) => (ID_BITS + u32::from(i), HEADER, 16),
            Field::Word(i) => (WORD_BITS + u32::from(i), HEADER + ids, 8),
            Field::Byte(i) => (BYTE_BITS + u32::from(i), HEADER + ids + words, 1),
            Field::Flag(_) | Field::Text(_) => unreachable!("not a fixed-size field"),
        };
        if mask & (1u64 << base) == 0 {
            return None;
        }
        let class = base - base % 8;
        let index = (base % 8) as u8;
        Some(start + width * class_bits_below(mask, class, index) as usize)
    }

    /// A 16-byte field.
    pub fn id(&self, i: u8) -> Option<[u8; 16]> {
        let at = self.fixed_at(Field::Id(i))?;
        Some(self.bytes()[at..at + 16].try_into().expect("16 bytes"))
    }

    /// An 8-byte field.
    pub fn word(&self, i: u8) -> Option<u64> {
        let at = self.fixed_at(Field::Word(i))?;
        Some(u64::from_le_bytes(
            self.bytes()[at..at + 8].try_into().expect("8 bytes"),
        ))
    }

    /// A copy with the 8-byte field `i`, which must be present, set to `w`: one
    /// allocation and a copy of the bytes, where unpacking and packing again would
    /// allocate every text.
    pub fn with_word(&self, i: u8, w: u64) -> Arc<Packed> {
        let at = self.fixed_at(Field::Word(i)).expect("a present word");
        let mut bytes = self.bytes().to_vec();
        bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
        Packed::from_bytes(&bytes)
    }

    /// A 1-byte field.
    pub fn byte(&self, i: u8) -> Option<u8> {
        let at = self.fixed_at(Field::Byte(i))?;
        Some(self.bytes()[at])
    }

    /// A flag.
    pub fn flag(&self, i: u8) -> bool {
        self.has(FLAG_BITS + u32::from(i))
    }

    fn texts_start(&self) -> usize {
        let mask = self.mask();
        HEADER
            + 16 * class_count(mask, ID_BITS) as usize
            + 8 * class_count(mask, WORD_BITS) as usize
            + class_count(mask, BYTE_BITS) as usize
    }

    /// A text field, and whether JSON escapes any of its bytes.
    pub fn text_escaped(&self, i: u8) -> Option<(&str, bool)> {
        if !self.has(TEXT_BITS + u32::from(i)) {
            return None;
        }
        let before = class_bits_below(self.mask(), TEXT_BITS, i);
        let mut texts = Texts {
            bytes: self.bytes(),
            at: self.texts_start(),
        };
        for _ in 0..before {
            texts.skip_text();
        }
        Some(texts.next_text())
    }

    /// Every text field by index, read in one pass (a view that shows most of a
    /// record's texts reads them this way rather than one by one).
    pub fn text_table(&self) -> [Option<(&str, bool)>; 32] {
        let mut table = [None; 32];
        for (i, s, escape) in self.texts() {
            table[usize::from(i)] = Some((s, escape));
        }
        table
    }

    /// A text field.
    pub fn text(&self, i: u8) -> Option<&str> {
        self.text_escaped(i).map(|(s, _)| s)
    }

    /// Every text field in index order: `(index, text, escape)` of the present ones.
    pub fn texts(&self) -> impl Iterator<Item = (u8, &str, bool)> + '_ {
        let mut present = self.mask() >> TEXT_BITS;
        let mut texts = Texts {
            bytes: self.bytes(),
            at: self.texts_start(),
        };
        std::iter::from_fn(move || {
            if present == 0 {
                return None;
            }
            let i = present.trailing_zeros() as u8;
            present &= present - 1;
            let (s, esc) = texts.next_text();
            Some((i, s, esc))
        })
    }

    /// Checks bytes from outside this process (a checkpoint) and takes them: the mask's
    /// fields fit, and every text is UTF-8 ending exactly at the end.
    pub fn from_checked(bytes: &[u8]) -> Option<Arc<Packed>> {
        if bytes.len() < HEADER {
            return None;
        }
        let mask = u64::from_le_bytes(bytes[..HEADER].try_into().ok()?);
        let start = HEADER
            + 16 * class_count(mask, ID_BITS) as usize
            + 8 * class_count(mask, WORD_BITS) as usize
            + class_count(mask, BYTE_BITS) as usize;
        let mut at = start;
        for _ in 0..class_count(mask, TEXT_BITS) {
            let (tag, len) = read_varint(bytes.get(at..)?)?;
            at += len;
            let n = usize::try_from(tag >> 1).ok()?;
            let text = std::str::from_utf8(bytes.get(at..at.checked_add(n)?)?).ok()?;
            if (tag & 1 == 1) != needs_escape(text) {
                return None;
            }
            at += n;
        }
        (at == bytes.len()).then(|| Packed::from_bytes(bytes))
    }
}

/// A cursor over the texts of a record.
struct Texts<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Texts<'a> {
    /// Steps over a text without reading it.
    fn skip_text(&mut self) {
        let (tag, len) = read_varint(&self.bytes[self.at..]).expect("a text's length");
        self.at += len + (tag >> 1) as usize;
    }

    fn next_text(&mut self) -> (&'a str, bool) {
        let (tag, len) = read_varint(&self.bytes[self.at..]).expect("a text's length");
        self.at += len;
        let n = (tag >> 1) as usize;
        let raw = &self.bytes[self.at..self.at + n];
        self.at += n;
        debug_assert!(std::str::from_utf8(raw).is_ok());
        // SAFETY: a `Packed` is made only by `Writer::finish`, which copies each text from
        // a `&str` whole, or by `from_checked`, which checks every text is UTF-8; texts
        // are read at the boundaries those wrote. Checking again here was a seventh of
        // the time of writing a record's JSON.
        let s = unsafe { std::str::from_utf8_unchecked(raw) };
        (s, tag & 1 == 1)
    }
}

fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Builds one record's bytes: set fields in any order, then [`Writer::finish`].
#[derive(Default)]
pub struct Writer<'a> {
    mask: u64,
    ids: [[u8; 16]; 8],
    words: [u64; 8],
    bytes: [u8; 8],
    texts: [Option<&'a str>; 32],
}

impl<'a> Writer<'a> {
    pub fn id(&mut self, i: u8, v: Option<[u8; 16]>) -> &mut Self {
        if let Some(v) = v {
            self.mask |= 1 << (ID_BITS + u32::from(i));
            self.ids[usize::from(i)] = v;
        }
        self
    }

    pub fn word(&mut self, i: u8, v: Option<u64>) -> &mut Self {
        if let Some(v) = v {
            self.mask |= 1 << (WORD_BITS + u32::from(i));
            self.words[usize::from(i)] = v;
        }
        self
    }

    pub fn byte(&mut self, i: u8, v: Option<u8>) -> &mut Self {
        if let Some(v) = v {
            self.mask |= 1 << (BYTE_BITS + u32::from(i));
            self.bytes[usize::from(i)] = v;
        }
        self
    }

    pub fn flag(&mut self, i: u8, v: bool) -> &mut Self {
        if v {
            self.mask |= 1 << (FLAG_BITS + u32::from(i));
        }
        self
    }

    pub fn text(&mut self, i: u8, v: Option<&'a str>) -> &mut Self {
        if let Some(v) = v {
            self.mask |= 1 << (TEXT_BITS + u32::from(i));
            self.texts[usize::from(i)] = Some(v);
        }
        self
    }

    pub fn finish(&self) -> Arc<Packed> {
        let text_len: usize = self.texts.iter().flatten().map(|t| t.len() + 2).sum();
        let mut out = Vec::with_capacity(HEADER + 16 * 8 + 8 * 8 + 8 + text_len);
        out.extend_from_slice(&self.mask.to_le_bytes());
        for i in 0..8 {
            if self.mask & (1 << (ID_BITS + i)) != 0 {
                out.extend_from_slice(&self.ids[i as usize]);
            }
        }
        for i in 0..8 {
            if self.mask & (1 << (WORD_BITS + i)) != 0 {
                out.extend_from_slice(&self.words[i as usize].to_le_bytes());
            }
        }
        for i in 0..8 {
            if self.mask & (1 << (BYTE_BITS + i)) != 0 {
                out.push(self.bytes[i as usize]);
            }
        }
        for t in self.texts.iter().flatten() {
            write_varint(
                &mut out,
                ((t.len() as u64) << 1) | u64::from(needs_escape(t)),
            );
            out.extend_from_slice(t.as_bytes());
        }
        Packed::from_bytes(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn absent_fields_take_no_room_and_read_as_absent() {
        let mut w = Writer::default();
        w.id(3, Some([7; 16]))
            .word(5, Some(42))
            .flag(1, true)
            .text(4, Some("a\"b"));
        let p = w.finish();
        // mask + one id + one word + a one-byte length + three bytes.
        assert_eq!(p.bytes().len(), 8 + 16 + 8 + 1 + 3);
        assert_eq!(p.id(3), Some([7; 16]));
        assert_eq!((p.id(0), p.id(4)), (None, None));
        assert_eq!((p.word(5), p.word(4)), (Some(42), None));
        assert_eq!(p.byte(0), None);
        assert!(p.flag(1) && !p.flag(0));
        assert_eq!(p.text_escaped(4), Some(("a\"b", true)));
        assert_eq!(p.text(3), None);
        assert_eq!(Packed::from_checked(p.bytes()), Some(p));
    }

    #[test]
    fn damaged_bytes_are_refused() {
        let mut w = Writer::default();
        w.id(0, Some([1; 16])).text(0, Some("hé")).text(2, Some(""));
        let p = w.finish();
        let b = p.bytes();
        assert!(Packed::from_checked(&b[..b.len() - 1]).is_none());
        let mut longer = b.to_vec();
        longer.push(0);
        assert!(Packed::from_checked(&longer).is_none());
        let mut bad_utf8 = b.to_vec();
        let at = bad_utf8.len() - 3;
        bad_utf8[at] = 0xff;
        assert!(Packed::from_checked(&bad_utf8).is_none());
        assert!(Packed::from_checked(&[1, 2]).is_none());
    }

    /// Every field class's values: ids, words, bytes, flags, texts.
    type FieldValues = (
        Vec<Option<[u8; 16]>>,
        Vec<Option<u64>>,
        Vec<Option<u8>>,
        Vec<bool>,
        Vec<Option<String>>,
    );

    fn field_values() -> impl Strategy<Value = FieldValues> {
        (
            proptest::collection::vec(proptest::option::of(any::<[u8; 16]>()), 8),
            proptest::collection::vec(proptest::option::of(any::<u64>()), 8),
            proptest::collection::vec(proptest::option::of(any::<u8>()), 8),
            proptest::collection::vec(any::<bool>(), 8),
            proptest::collection::vec(proptest::option::of(".{0,200}"), 32),
        )
    }

    proptest! {
        #[test]
        fn every_field_reads_back_as_written((ids, words, bytes, flags, texts) in field_values()) {
            let mut w = Writer::default();
            for i in 0..8u8 {
                let u = usize::from(i);
                w.id(i, ids[u]).word(i, words[u]).byte(i, bytes[u]).flag(i, flags[u]);
            }
            for (i, t) in texts.iter().enumerate() {
                w.text(i as u8, t.as_deref());
            }
            let p = w.finish();
            for i in 0..8u8 {
                let u = usize::from(i);
                prop_assert_eq!(p.id(i), ids[u]);
                prop_assert_eq!(p.word(i), words[u]);
                prop_assert_eq!(p.byte(i), bytes[u]);
                prop_assert_eq!(p.flag(i), flags[u]);
            }
            for (i, t) in texts.iter().enumerate() {
                prop_assert_eq!(p.text(i as u8), t.as_deref());
                if let Some(t) = t {
                    prop_assert_eq!(p.text_escaped(i as u8).map(|x| x.1), Some(needs_escape(t)));
                }
            }
            let listed: Vec<(u8, String)> = p.texts().map(|(i, s, _)| (i, s.to_string())).collect();
            let want: Vec<(u8, String)> = texts
                .iter()
                .enumerate()
                .filter_map(|(i, t)| t.clone().map(|t| (i as u8, t)))
                .collect();
            prop_assert_eq!(listed, want);
            prop_assert_eq!(Packed::from_checked(p.bytes()), Some(p));
        }
    }
}
