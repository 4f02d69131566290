//! Files and directories of the data dir, private to the service's user: the store, the
//! blobs and the checkpoints hold every workspace's data, so no other local user may
//! read them (directories 0700, files 0600). The binary also narrows its umask, so that
//! files made by libraries (SQLite's journals) are private too; these helpers make the
//! modes explicit where the process creates things itself, whatever the umask.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of the data dir and every directory in it.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file in the data dir.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents), then makes `dir` itself private. Parents above
/// it are left as they are: they are the operator's.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    restrict(dir, DIR_MODE)
}

/// Narrows an existing file or directory to `mode` (an older data dir's files may have
/// been made world-readable).
pub fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let current = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if current != mode {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

/// Options that create a file readable and writable by this user only.
pub fn options() -> OpenOptions {
    let mut opts = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(FILE_MODE);
    }
    opts
}

/// `File::create`, private: created (or truncated) for writing.
pub fn create(path: &Path) -> io::Result<File> {
    options().write(true).create(true).truncate(true).open(path)
}
