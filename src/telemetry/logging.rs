//! Log set-up for the binary: `tracing` to stderr through a background writer.
//!
//! Formatting happens on the thread that logs; the write to stderr happens on a
//! dedicated thread, so a request never waits for a `write(2)` (the access log emits a
//! line for every request). The writer blocks rather than drops when its buffer is full:
//! no line is lost, and a saturated stderr slows logging threads down instead.

use parking_lot::RwLock;
use std::io::Write;
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};

/// The background writer and its guard (which flushes it when dropped), until [`flush`]
/// ends them; then events go to stderr directly. The subscriber they serve is
/// process-wide (tracing's global default, installed once by [`init`]), so they are
/// too: [`flush`] drops the guard before `process::exit`, which runs no destructors. A
/// thread still running at exit may log after the flush: its line is written as it
/// stands rather than refused, which would make tracing print a notice of its own in
/// its place (not JSON, and the event lost).
static BACKGROUND: RwLock<Option<(NonBlocking, WorkerGuard)>> = RwLock::new(None);

/// Each event's writer: the background one, or stderr once it has ended (see
/// [`BACKGROUND`]); the read hold keeps [`flush`] from ending it mid-line.
struct EventWriter;

impl Write for EventWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &*BACKGROUND.read() {
            Some((background, _)) => background.clone().write(buf),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the subscriber: `RECRUITD_LOG` filters (default `info`),
/// `RECRUITD_LOG_FORMAT=json` writes one JSON object per line.
pub fn init() {
    let directives = std::env::var("RECRUITD_LOG").unwrap_or_else(|_| "info".into());
    let filter = tracing_subscriber::EnvFilter::try_new(quiet_notices(&directives))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stderr());
    *BACKGROUND.write() = Some((writer, guard));
    use std::io::IsTerminal;
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(|| EventWriter);
    if json_logs() {
        logs.json().flatten_event(true).init();
    } else {
        logs.init();
    }
}

/// Writes out every buffered line; call before `process::exit`, which skips destructors.
/// Events logged meanwhile wait, and later ones go to stderr directly, after every
/// buffered line.
pub fn flush() {
    // The guard is dropped under the write hold: its drop writes out the buffer.
    drop(BACKGROUND.write().take());
}

/// Whether logs are written as JSON lines (`RECRUITD_LOG_FORMAT=json`).
pub fn json_logs() -> bool {
    std::env::var("RECRUITD_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"))
}

/// How bad a message to the operator is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// A message to the operator on stderr: `recruitd: …` as plain text, or, with
/// `RECRUITD_LOG_FORMAT=json`, a log event like any other, so that every line of stderr
/// is JSON (log collectors parse every line).
pub fn tell(severity: Severity, message: impl std::fmt::Display) {
    if json_logs() {
        match severity {
            Severity::Info => tracing::info!(target: "recruitd", "{message}"),
            Severity::Warning => tracing::warn!(target: "recruitd", "{message}"),
            Severity::Error => tracing::error!(target: "recruitd", "{message}"),
        }
    } else {
        let prefix = match severity {
            Severity::Info => "",
            Severity::Warning => "warning: ",
            Severity::Error => "error: ",
        };
        eprintln!("recruitd: {prefix}{message}");
    }
}

/// PostgreSQL's NOTICE messages reach the log through sqlx at `info`: every start would
/// log that `_sqlx_migrations` already exists. They are kept to warnings, unless the
/// filter names sqlx itself.
fn quiet_notices(directives: &str) -> String {
    if directives.contains("sqlx") {
        directives.to_owned()
    } else {
        format!("{directives},sqlx::postgres::notice=warn")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer shared with the background writer's thread.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Lines logged before the flush are written out by it; a line logged after it is
    /// written too, where the ended background writer alone refuses it.
    #[test]
    fn a_line_logged_after_the_flush_is_written_not_refused() {
        let out = Shared::default();
        let (writer, guard) = NonBlockingBuilder::default()
            .lossy(false)
            .finish(out.clone());
        *BACKGROUND.write() = Some((writer.clone(), guard));
        EventWriter.write_all(b"before\n").unwrap();
        flush();
        assert_eq!(&*out.0.lock(), b"before\n");
        assert!(
            writer.clone().write_all(b"late\n").is_err(),
            "the background writer ended"
        );
        EventWriter.write_all(b"{\"late\":true}\n").unwrap();
    }

    #[test]
    fn postgres_notices_are_quiet_unless_asked_for() {
        assert_eq!(quiet_notices("info"), "info,sqlx::postgres::notice=warn");
        assert_eq!(quiet_notices("debug,sqlx=info"), "debug,sqlx=info");
    }
}
