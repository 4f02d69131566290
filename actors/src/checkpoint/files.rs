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
//!
//! The checkpoint it replaces is released behind itself too ([`CheckpointDir::release`]):
//! held open across the rename, its blocks are then freed a step at a time. Freed at
//! once, by the rename or an unlink, a 1.4 GB file's extents went to the file system's
//! journal in one piece: the unlink took 264 ms, and flushes of other files meanwhile
//! took up to 53 ms (2.3 ms freed 32 MiB at a time).

use super::{finish_unpositioned, restore, write, write_unpositioned, Refused, Unpositioned};
use crate::model::Workspace;
use crate::state::WorkspaceState;
use crate::store::CommitPosition;
use std::io;
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// Bytes a checkpoint's writeback is started for at once ([`WriteBehind`]).
const BEHIND_STEP: u64 = 1 << 20;

/// Bytes of a replaced checkpoint freed at once ([`CheckpointDir::release`]).
const RELEASE_STEP: u64 = 32 << 20;

/// The pause between two of those steps: other files' flushes go between them.
const RELEASE_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

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
    /// Held (shared) by each load while it reads a checkpoint, and taken once (alone)
    /// before a replaced one is released: a load that opened the old file before the
    /// rename has finished with it by then, and any later one opens the new file.
    reading: std::sync::Arc<parking_lot::RwLock<()>>,
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
            reading: Default::default(),
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
        // Opened before the rename, so that its blocks outlive its name and are freed
        // behind it (`release`); none the first time.
        let old = std::fs::OpenOptions::new().write(true).open(path).ok();
        std::fs::rename(tmp, path)?;
        // The rename is durable once the directory is.
        let synced = std::fs::File::open(&self.dir).and_then(|d| d.sync_all());
        if let Some(old) = old {
            self.release(old);
        }
        synced
    }

    /// Frees the blocks of a checkpoint whose name is gone, [`RELEASE_STEP`] at a time
    /// (see the module's docs), once no load still reads it (`reading`). A file that
    /// still has a name (a hard link made by someone else) is left whole: its blocks are
    /// not this directory's to free. A copy another process is reading as it is replaced
    /// ends short and fails its check; a checkpoint can always be written again.
    fn release(&self, old: std::fs::File) {
        drop(self.reading.write());
        let Ok(meta) = old.metadata() else {
            return;
        };
        #[cfg(unix)]
        if std::os::unix::fs::MetadataExt::nlink(&meta) > 0 {
            return;
        }
        let mut len = meta.len();
        while len > 0 {
            len = len.saturating_sub(RELEASE_STEP);
            if old.set_len(len).is_err() {
                // Closing frees the rest at once, as an unlink would.
                return;
            }
            if len > 0 {
                std::thread::sleep(RELEASE_PAUSE);
            }
        }
    }

    /// The workspace's state from its checkpoint, if there is one and it holds at the
    /// store's `position` (see [`restore`]); `Ok(None)` when there is none.
    pub fn load(
        &self,
        workspace: &Workspace,
        position: CommitPosition,
    ) -> Result<Option<WorkspaceState>, Refused> {
        let path = self.path(workspace.id);
        let _reading = self.reading.read();
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

    /// Holds off the release of a replaced checkpoint as a load reading it does.
    #[cfg(test)]
    pub(super) fn reading(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.reading.read()
    }

    /// Removes the workspace's checkpoint (one that can never be used again). Its
    /// blocks are freed behind it, as a replaced one's are.
    pub fn remove(&self, workspace: Uuid) {
        let path = self.path(workspace);
        let old = std::fs::OpenOptions::new().write(true).open(&path).ok();
        match std::fs::remove_file(&path) {
            Ok(()) => {
                if let Some(old) = old {
                    self.release(old);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(%workspace, error = %e, "could not remove a checkpoint"),
        }
    }
}
