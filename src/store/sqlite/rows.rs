//! Record upserts (and attachment bytes) through SQLite's C interface, on the writer's connection while sqlx
//! lends it out (`SqliteConnection::lock_handle`), inside the transaction the caller
//! opened through sqlx.
//!
//! Through sqlx, every row cost a copy of each value into an argument list, a trip to
//! the connection's worker thread, and SQLite's own copy of each bound text (sqlx binds
//! texts as `SQLITE_TRANSIENT`); at the millions of rows of a large import that was a
//! large share of the store's time. Here one prepared single-row statement is bound to the
//! rows' own bytes (`SQLITE_STATIC`: they outlive the step) and stepped once per row.

use super::super::Upsert;
use actors::store::StoreError;
use libsqlite3_sys as ffi;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::NonNull;

/// The upsert of one row: the same statement as a multi-row upsert, one row at a time
/// (within a statement SQLite applied the rows in order anyway).
const UPSERT_ROW: &CStr = c"INSERT INTO records (workspace_id, kind, id, body) \
     VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (workspace_id, kind, id) DO UPDATE SET body = excluded.body \
     WHERE records.body <> excluded.body";

/// The upsert of one object's bytes.
const PUT_BLOB: &CStr = c"INSERT INTO blobs (workspace_id, name, bytes) VALUES (?1, ?2, ?3) \
     ON CONFLICT (workspace_id, name) DO UPDATE SET bytes = excluded.bytes";

/// A failed SQLite call: its extended result code and message.
#[derive(Debug)]
pub(super) struct RowsError {
    pub code: c_int,
    pub message: String,
}

impl RowsError {
    /// As the store reports it: `Unavailable` unless the code judges the statement (the
    /// same split as `sqlite::transient`).
    pub fn into_store_error(self, context: &str) -> StoreError {
        let message = format!("{context}: {} (code {})", self.message, self.code);
        if judges_the_statement(self.code as i64) {
            StoreError::Other(message)
        } else {
            StoreError::Unavailable(message)
        }
    }
}

/// A prepared statement, finalized when dropped.
struct Statement(NonNull<ffi::sqlite3_stmt>);

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared on a connection that outlives it (the
        // caller's borrow of the handle) and is finalized exactly once, here.
        unsafe {
            ffi::sqlite3_finalize(self.0.as_ptr());
        }
    }
}

/// The connection's last error.
///
/// # Safety
/// `db` is an open connection that no other thread uses meanwhile.
unsafe fn last_error(db: *mut ffi::sqlite3, code: c_int) -> RowsError {
    let message = ffi::sqlite3_errmsg(db);
    let message = if message.is_null() {
        String::from("unknown error")
    } else {
        CStr::from_ptr(message).to_string_lossy().into_owned()
    };
    RowsError {
        code: ffi::sqlite3_extended_errcode(db).max(code),
        message,
    }
}

/// Binds `text` to parameter `index` without copying it.
///
/// # Safety
/// `stmt` is prepared on a connection no other thread uses meanwhile, and `text` stays
/// alive and unchanged until the statement is next reset or finalized.
unsafe fn bind_static(
    db: *mut ffi::sqlite3,
    stmt: &Statement,
    index: c_int,
    text: &str,
) -> Result<(), RowsError> {
    let rc = ffi::sqlite3_bind_text64(
        stmt.0.as_ptr(),
        index,
        text.as_ptr().cast(),
        text.len() as u64,
        ffi::SQLITE_STATIC(),
        ffi::SQLITE_UTF8 as u8,
    );
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(last_error(db, rc))
    }
}

/// Binds `bytes` to parameter `index` without copying them (the safety contract of
/// [`bind_static`]).
unsafe fn bind_blob_static(
    db: *mut ffi::sqlite3,
    stmt: &Statement,
    index: c_int,
    bytes: &[u8],
) -> Result<(), RowsError> {
    let rc = ffi::sqlite3_bind_blob64(
        stmt.0.as_ptr(),
        index,
        bytes.as_ptr().cast(),
        bytes.len() as u64,
        ffi::SQLITE_STATIC(),
    );
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(last_error(db, rc))
    }
}

/// Prepares `sql` on `db`.
///
/// # Safety
/// As [`upsert`].
unsafe fn prepare(db: *mut ffi::sqlite3, sql: &CStr) -> Result<Statement, RowsError> {
    let mut stmt = std::ptr::null_mut();
    let rc = ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut());
    match NonNull::new(stmt) {
        Some(stmt) if rc == ffi::SQLITE_OK => Ok(Statement(stmt)),
        _ => Err(last_error(db, rc)),
    }
}

/// Stores objects' bytes (name, bytes) in `workspace`, replacing what a name held.
///
/// # Safety
/// As [`upsert`].
pub(super) unsafe fn put_blobs(
    db: NonNull<ffi::sqlite3>,
    workspace: &str,
    items: &[(String, &[u8])],
) -> Result<(), RowsError> {
    let db = db.as_ptr();
    let stmt = prepare(db, PUT_BLOB)?;
    bind_static(db, &stmt, 1, workspace)?;
    for (name, bytes) in items {
        bind_static(db, &stmt, 2, name)?;
        bind_blob_static(db, &stmt, 3, bytes)?;
        let rc = ffi::sqlite3_step(stmt.0.as_ptr());
        ffi::sqlite3_reset(stmt.0.as_ptr());
        if rc != ffi::SQLITE_DONE {
            return Err(last_error(db, rc));
        }
    }
    Ok(())
}

/// Upserts `rows` (already in key order) into `workspace`.
///
/// # Safety
/// `db` is the writer's connection, lent by sqlx (`lock_handle`) for the whole call, so
/// no other thread uses it meanwhile; a transaction is open on it.
pub(super) unsafe fn upsert(
    db: NonNull<ffi::sqlite3>,
    workspace: &str,
    rows: &[Upsert<'_>],
) -> Result<(), RowsError> {
    if rows.is_empty() {
        return Ok(());
    }
    let db = db.as_ptr();
    let stmt = prepare(db, UPSERT_ROW)?;
    // Bindings survive a reset: the workspace is bound once.
    bind_static(db, &stmt, 1, workspace)?;
    for row in rows {
        let record = row.record;
        let id = record.id_string();
        let body = row.body();
        bind_static(db, &stmt, 2, record.kind().as_str())?;
        bind_static(db, &stmt, 3, &id)?;
        bind_static(db, &stmt, 4, &body)?;
        let rc = ffi::sqlite3_step(stmt.0.as_ptr());
        // Reset before `id` and `body` go: the statement must not hold their bytes.
        ffi::sqlite3_reset(stmt.0.as_ptr());
        if rc != ffi::SQLITE_DONE {
            return Err(last_error(db, rc));
        }
    }
    Ok(())
}

/// Whether an (extended) SQLite result code is one of those that judge the statement or
/// its data, a bug here since the domain validates every input first, rather than the
/// store's state (busy, locked, full, …: try again later). Both the sqlx path and this
/// one classify their errors by it.
pub(super) fn judges_the_statement(code: i64) -> bool {
    matches!(code & 0xff, 1 | 2 | 18 | 19 | 20 | 21 | 25)
}
