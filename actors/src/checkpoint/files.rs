//! Where checkpoints live (`<data-dir>/checkpoints/<workspace id>.ckpt`) and how one is
//! replaced: written beside the old one under a temporary name, synced, then renamed over
//! it and the directory synced. A crash at any point leaves the old checkpoint or the new
//! one whole, never a mix; a leftover temporary file is never read, and the next write
//! replaces it.
//!
//! A checkpoint is written behind itself ([`WriteBehind`]): its pages go to the disk a
//! few at a time as they are written, rather than all at its final sync. A million
//! people's checkpoint is 1.4 GB; left to the final sync, its writeback filled the
//! disk's queue for seconds, and every commit's flush of a few kilobytes waited behind
//! it: with a checkpoint every 20 s, a job's PATCH had a p99 of 176–294 ms, and 9–14
//! ms written behind.

use super::{finish_unpositioned, restore, write, write_unpositioned, Refused, Unpositioned};
use crate::model::Workspace;
use crate::state::WorkspaceState;
use crate::store::CommitPosition;
use std::io;
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// Bytes a checkpoint's writeback is started for at once ([`WriteBehind`]).
const BEHIND_STEP: u64 = 1 << 20;

/// A file written from its start, whose pages are sent to the disk every
/// [`BEHIND_STEP`] bytes, and waited for a step later (Linux's `sync_file_range`): no
/// more than two steps of it are ever dirty or queued at the disk, so a commit's flush
/// of another file waits behind a megabyte or two of it, not behind all of it. (Where
/// that call is missing, it writes as a plain file does.)
pub(crate) struct WriteBehind<'f> {
    file: &'f std::fs::File,
    written: u64,
    /// Up to where writeback has been started.
    started: u64,
    /// Where the step whose writeback was started last begins (it ends at `started`):
    /// waited for at the next.
    previous: Option<u64>,
}

impl<'f> WriteBehind<'f> {
    pub(crate) fn new(file: &'f std::fs::File) -> Self {
        WriteBehind {
            file,
            written: 0,
            started: 0,
            previous: None,
        }
    }

    /// Starts writeback of the step just written, and waits for the one before it.
    fn behind(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.file.as_raw_fd();
            let range = |from: u64, to: u64| (from as libc::off64_t, (to - from) as libc::off64_t);
            // SAFETY: plain integers on a descriptor `self.file` keeps open. Failures
            // only lose the pacing: the final sync still makes the file durable.
            unsafe {
                let (from, len) = range(self.started, self.written);
                libc::sync_file_range(fd, from, len, libc::SYNC_FILE_RANGE_WRITE);
                if let Some((from, len)) = self.previous.map(|p| range(p, self.started)) {
                    libc::sync_file_range(
                        fd,
                        from,
                        len,
                        libc::SYNC_FILE_RANGE_WAIT_BEFORE
                            | libc::SYNC_FILE_RANGE_WRITE
                            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
                    );
                }
            }
        }
        self.previous = Some(self.started);
        self.started = self.written;
    }
}

impl io::Write for WriteBehind<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = io::Write::write(&mut self.file, buf)?;
        self.written += n as u64;
        if self.written - self.started >= BEHIND_STEP {
            self.behind();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::Write::flush(&mut self.file)
    }
}

/// The checkpoint directory of one data dir.
#[derive(Clone, Debug)]
pub struct CheckpointDir {
    dir: PathBuf,
}

/// A checkpoint written by [`CheckpointDir::begin`] but for its commit position: not
/// yet a checkpoint, and removed when dropped unfinished.
pub struct Unfinished {
    dir: CheckpointDir,
    file: std::fs::File,
    tmp: PathBuf,
    path: PathBuf,
    records: usize,
    /// `None` until written, and once finishing has begun.
    written: Option<Unpositioned>,
    /// Renamed into place: nothing to remove.
    finished: bool,
}

impl Unfinished {
    /// Completes the checkpoint with the commit `position` its state reflects, and makes
    /// it the workspace's (atomically, as [`CheckpointDir::save`] does).
    pub fn finish(mut self, position: CommitPosition) -> io::Result<Saved> {
        let written = self.written.take().expect("begun");
        let bytes = finish_unpositioned(&self.file, written, position)?;
        self.dir.replace(&self.file, &self.tmp, &self.path)?;
        self.finished = true;
        Ok(Saved {
            bytes,
            records: self.records,
        })
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        // Never finished: the commit failed, or writing or finishing did.
        if !self.finished {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// What a successful [`CheckpointDir::save`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    pub bytes: u64,
    pub records: usize,
}

impl CheckpointDir {
    /// The checkpoints under `data_dir` (the directory is made on the first save).
    pub fn new(data_dir: &Path) -> Self {
        CheckpointDir {
            dir: data_dir.join("checkpoints"),
        }
    }

    pub fn path(&self, workspace: Uuid) -> PathBuf {
        self.dir.join(format!("{workspace}.ckpt"))
    }

    /// Writes `state` as of `position`, replacing the workspace's checkpoint atomically.
    /// Blocking, and seconds long for millions of records: call it on a thread of its own.
    pub fn save(&self, state: &WorkspaceState, position: CommitPosition) -> io::Result<Saved> {
        crate::private_files::create_dir(&self.dir)?;
        let path = self.path(state.id());
        let tmp = path.with_extension("ckpt.tmp");
        let file = crate::private_files::create(&tmp)?;
        let result = (|| {
            let mut out = io::BufWriter::with_capacity(1 << 20, WriteBehind::new(&file));
            let bytes = write(state, position, &mut out)?;
            drop(out);
            self.replace(&file, &tmp, &path)?;
            Ok(Saved {
                bytes,
                records: state.stored_records(),
            })
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Writes `state` while the commit that makes it is under way, when the position it
    /// will have is not known yet: everything but that position goes to a temporary file,
    /// which [`Unfinished::finish`] completes once the commit is done, and which is
    /// removed if it never is. Blocking, like [`save`](Self::save).
    pub fn begin(&self, state: &WorkspaceState) -> io::Result<Unfinished> {
        crate::private_files::create_dir(&self.dir)?;
        let path = self.path(state.id());
        let tmp = path.with_extension("ckpt.tmp");
        let file = crate::private_files::create(&tmp)?;
        let mut unfinished = Unfinished {
            dir: self.clone(),
            file,
            tmp,
            path,
            records: state.stored_records(),
            written: None,
            finished: false,
        };
        let mut out = io::BufWriter::with_capacity(1 << 20, WriteBehind::new(&unfinished.file));
        let written = write_unpositioned(state, &mut out)?;
        out.into_inner().map_err(io::IntoInnerError::into_error)?;
        unfinished.written = Some(written);
        Ok(unfinished)
    }

    /// Makes `file`, written at `tmp`, the checkpoint at `path`: synced, renamed over
    /// the old one, the rename made durable.
    fn replace(&self, file: &std::fs::File, tmp: &Path, path: &Path) -> io::Result<()> {
        file.sync_all()?;
        std::fs::rename(tmp, path)?;
        // The rename is durable once the directory is.
        std::fs::File::open(&self.dir)?.sync_all()
    }

    /// The workspace's state from its checkpoint, if there is one and it holds at the
    /// store's `position` (see [`restore`]); `Ok(None)` when there is none.
    pub fn load(
        &self,
        workspace: &Workspace,
        position: CommitPosition,
    ) -> Result<Option<WorkspaceState>, Refused> {
        let path = self.path(workspace.id);
        let unreadable =
            |e: io::Error| Refused::Damaged(format!("reading {}: {e}", path.display()));
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unreadable(e)),
        };
        // Mapped rather than read into memory: the file's pages are the kernel's clean
        // page cache, which it can drop under pressure while the state is built beside
        // them (a buffer of the whole file would add its size to the start's peak).
        // The file is never changed in place (a new checkpoint is renamed over it), so
        // the mapping stays whole while it is read.
        // SAFETY: see above; this process maps it read-only and writes it only through
        // a temporary file and a rename.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(unreadable)?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        restore(&map, workspace.clone(), position).map(Some)
    }

    /// Removes the workspace's checkpoint (one that can never be used again).
    pub fn remove(&self, workspace: Uuid) {
        let path = self.path(workspace);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(%workspace, error = %e, "could not remove a checkpoint");
            }
        }
    }
}
