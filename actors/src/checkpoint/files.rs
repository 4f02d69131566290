//! Where checkpoints live (`<data-dir>/checkpoints/<workspace id>.ckpt`) and how one is
//! replaced: written beside the old one under a temporary name, synced, then renamed over
//! it and the directory synced. A crash at any point leaves the old checkpoint or the new
//! one whole, never a mix; a leftover temporary file is never read, and the next write
//! replaces it.

use super::{finish_unpositioned, restore, write, write_unpositioned, Refused, Unpositioned};
use crate::model::Workspace;
use crate::state::WorkspaceState;
use crate::store::CommitPosition;
use std::io;
use std::path::{Path, PathBuf};
use uuid::Uuid;

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
            let mut out = io::BufWriter::with_capacity(1 << 20, &file);
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
        let mut out = io::BufWriter::with_capacity(1 << 20, &unfinished.file);
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
