//! Finding the values of a snapshot document without parsing them: the top-level
//! object's keys, and each value's extent (an array's elements one by one), read from a
//! stream through a window that holds only what is not yet handed out. The parser then
//! decodes the elements of an array in batches on every core.
//!
//! A value's extent is found by its brackets and strings alone; whether it is
//! well-formed JSON is for its decoder to say (an element that is not names its array
//! and index).

use std::io::Read;

/// Bytes asked of the reader at a time.
const READ_CHUNK: usize = 1 << 20;

/// A syntax or read error, with the byte offset it was found at.
#[derive(Debug)]
pub(super) struct ScanError(pub(super) String);

/// The window over the document.
pub(super) struct Scanner<R> {
    src: R,
    /// Bytes read and not yet dropped are `buf[..end]`; `buf[pos..end]` is what is not
    /// consumed. The rest of `buf` is room for the next read (zeroed once, when the
    /// buffer grows, not at every read).
    buf: Vec<u8>,
    end: usize,
    pos: usize,
    /// Bytes dropped from the front of `buf` so far (offsets in errors are the
    /// document's).
    dropped: u64,
    eof: bool,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl<R: Read> Scanner<R> {
    pub(super) fn new(src: R) -> Self {
        Scanner {
            src,
            buf: Vec::new(),
            end: 0,
            pos: 0,
            dropped: 0,
            eof: false,
        }
    }

    fn error(&self, at: usize, what: &str) -> ScanError {
        ScanError(format!("{what} at byte {}", self.dropped + at as u64))
    }

    /// Reads more of the document onto the window; `false` at its end.
    fn fill(&mut self) -> Result<bool, ScanError> {
        if self.eof {
            return Ok(false);
        }
        if self.buf.len() - self.end < READ_CHUNK / 2 {
            let grown = (self.buf.len() * 2).max(self.end + READ_CHUNK);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    self.eof = n == 0;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ScanError(format!("reading the document: {e}"))),
            }
        }
    }

    /// Drops what was handed out. Ranges returned before are no longer valid.
    pub(super) fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.dropped += self.pos as u64;
            self.pos = 0;
        }
    }

    /// The next byte that is not whitespace, without consuming it; `None` at the end.
    pub(super) fn peek(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            while let Some(&b) = self.buf[..self.end].get(self.pos) {
                if !is_ws(b) {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consumes the next non-whitespace byte, which must be `b`.
    pub(super) fn expect(&mut self, b: u8) -> Result<(), ScanError> {
        match self.peek()? {
            Some(x) if x == b => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.error(self.pos, &format!("expected `{}`", b as char))),
            None => Err(self.error(
                self.pos,
                &format!("expected `{}`, found the end", b as char),
            )),
        }
    }

    /// Consumes the next value (after whitespace) and returns where it lies in
    /// [`Self::window`], valid until the next [`Self::compact`].
    pub(super) fn value(&mut self) -> Result<std::ops::Range<usize>, ScanError> {
        let Some(first) = self.peek()? else {
            return Err(self.error(self.pos, "expected a value, found the end"));
        };
        let start = self.pos;
        let mut at = start;
        match first {
            b'"' => at = self.string_end(at)?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    let b = match self.buf[..self.end].get(at) {
                        Some(&b) => b,
                        None => {
                            if !self.fill()? {
                                return Err(self.error(start, "unterminated value"));
                            }
                            continue;
                        }
                    };
                    match b {
                        b'"' => {
                            at = self
                                .string_end(at)
                                .map_err(|_| self.error(start, "unterminated value"))?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
            }
            _ => loop {
                // A scalar: up to the next delimiter.
                match self.buf[..self.end].get(at) {
                    Some(&b) if is_ws(b) || matches!(b, b',' | b']' | b'}') => break,
                    Some(_) => at += 1,
                    None => {
                        if !self.fill()? {
                            break;
                        }
                    }
                }
            },
        }
        self.pos = at;
        Ok(start..at)
    }

    /// The index just past the string that starts at `at` (its opening quote).
    fn string_end(&mut self, at: usize) -> Result<usize, ScanError> {
        let mut i = at + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', &self.buf[i.min(self.end)..self.end]) {
                Some(off) => {
                    let j = i + off;
                    if self.buf[j] == b'"' {
                        return Ok(j + 1);
                    }
                    // An escape: the byte after the backslash is never the end.
                    if j + 1 >= self.end && !self.fill()? {
                        return Err(self.error(at, "unterminated string"));
                    }
                    i = j + 2;
                }
                None => {
                    i = self.end;
                    if !self.fill()? {
                        return Err(self.error(at, "unterminated string"));
                    }
                }
            }
        }
    }

    /// The bytes read so far and not dropped.
    pub(super) fn window(&self) -> &[u8] {
        &self.buf[..self.end]
    }
}

/// A reader that hands out a few bytes (`.1`) at a time, so values cross every refill.
#[cfg(test)]
pub(super) struct Trickle<'a>(pub(super) &'a [u8], pub(super) usize);

#[cfg(test)]
impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(self.0.len()).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(doc: &str, step: usize) -> Vec<String> {
        let mut sc = Scanner::new(Trickle(doc.as_bytes(), step));
        sc.expect(b'[').unwrap();
        let mut out = Vec::new();
        loop {
            let r = sc.value().unwrap();
            out.push(String::from_utf8(sc.window()[r].to_vec()).unwrap());
            sc.compact();
            match sc.peek().unwrap() {
                Some(b',') => sc.expect(b',').unwrap(),
                Some(b']') => break,
                other => panic!("{other:?}"),
            }
        }
        out
    }

    #[test]
    fn values_are_found_by_brackets_and_strings_across_refills() {
        let doc = r#" [ {"a": "x]}\"{[", "b": [1, {"c": null}]} , "s\\", 12.5e3 ,true,
            null, [[], {}], "\u00e9 é" ] "#;
        let want = [
            r#"{"a": "x]}\"{[", "b": [1, {"c": null}]}"#,
            r#""s\\""#,
            "12.5e3",
            "true",
            "null",
            "[[], {}]",
            r#""\u00e9 é""#,
        ];
        for step in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(values(doc, step), want, "step {step}");
        }
    }

    #[test]
    fn an_unterminated_value_is_an_error_with_its_offset() {
        for doc in [r#"[{"a": 1"#, r#"["abc"#, r#"[{"a": "b\"#] {
            let mut sc = Scanner::new(Trickle(doc.as_bytes(), 2));
            sc.expect(b'[').unwrap();
            let e = sc.value().unwrap_err();
            assert!(
                e.0.contains("unterminated") && e.0.contains("byte 1"),
                "{}",
                e.0
            );
        }
    }
}
