//! Output plumbing: compact JSON written piece by piece (the document skeleton by
//! hand, each record with serde_json), the passes over the people, and progress.

use super::*;

/// Compact JSON written piece by piece: the document skeleton by hand, each record with
/// serde_json, so no more than one record is ever held.
pub(super) struct JsonOut<W: Write> {
    pub(super) w: BufWriter<W>,
    pub(super) first: bool,
}

impl<W: Write> JsonOut<W> {
    pub(super) fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.w.write_all(b)
    }

    pub(super) fn value<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        serde_json::to_writer(&mut self.w, v).map_err(io::Error::from)
    }

    pub(super) fn begin(&mut self, array: &str) -> io::Result<()> {
        self.first = true;
        write!(self.w, ",\"{array}\":[")
    }

    pub(super) fn item<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",")?;
        }
        self.first = false;
        self.value(v)
    }

    pub(super) fn end(&mut self) -> io::Result<()> {
        self.w.write_all(b"]")
    }
}

#[derive(Clone, Copy)]
pub(super) enum Pass {
    Candidates,
    Notes,
    Tasks,
    Attachments,
}

impl Pass {
    /// (start, width) of the pass in per-mille of the whole run, roughly its share of
    /// the bytes written, so the bar moves at an even pace.
    pub(super) fn span(self) -> (u64, u64) {
        match self {
            Pass::Candidates => (0, 560),
            Pass::Notes => (560, 220),
            Pass::Tasks => (780, 60),
            Pass::Attachments => (840, 160),
        }
    }
}

pub(super) struct Progress<'a> {
    pub(super) total: usize,
    pub(super) report: &'a mut dyn FnMut(usize, usize),
}

impl<'a> Progress<'a> {
    pub(super) fn new(total: usize, report: &'a mut dyn FnMut(usize, usize)) -> Self {
        report(0, total);
        Progress { total, report }
    }

    pub(super) fn step(&mut self, pass: Pass, i: usize) {
        if i % 4096 != 4095 {
            return;
        }
        let (start, width) = pass.span();
        let permille = start as u128 * self.total as u128 + width as u128 * (i as u128 + 1);
        let done = (permille / 1000) as usize;
        (self.report)(done.min(self.total), self.total);
    }

    pub(super) fn finish(&mut self) {
        (self.report)(self.total, self.total);
    }
}
