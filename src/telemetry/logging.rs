//! Log set-up for the binary: `tracing` to stderr through a background writer.
//!
//! Formatting happens on the thread that logs; the write to stderr happens on a
//! dedicated thread, so a request never waits for a `write(2)` (the access log emits a
//! line for every request). The writer blocks rather than drops when its buffer is full:
//! no line is lost, and a saturated stderr slows logging threads down instead.

use parking_lot::Mutex;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};

/// The background writer's guard, which flushes it when dropped. The subscriber it
/// serves is process-wide (tracing's global default, installed once by [`init`]), so
/// its guard is too: [`flush`] drops it before `process::exit`, which runs no
/// destructors.
static GUARD: Mutex<Option<WorkerGuard>> = Mutex::new(None);

/// Installs the subscriber: `RECRUITD_LOG` filters (default `info`),
/// `RECRUITD_LOG_FORMAT=json` writes one JSON object per line.
pub fn init() {
    let directives = std::env::var("RECRUITD_LOG").unwrap_or_else(|_| "info".into());
    let filter = tracing_subscriber::EnvFilter::try_new(quiet_notices(&directives))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stderr());
    *GUARD.lock() = Some(guard);
    use std::io::IsTerminal;
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    if json_logs() {
        logs.json().flatten_event(true).init();
    } else {
        logs.init();
    }
}

/// Writes out every buffered line; call before `process::exit`, which skips destructors.
pub fn flush() {
    drop(GUARD.lock().take());
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
    use super::quiet_notices;

    #[test]
    fn postgres_notices_are_quiet_unless_asked_for() {
        assert_eq!(quiet_notices("info"), "info,sqlx::postgres::notice=warn");
        assert_eq!(quiet_notices("debug,sqlx=info"), "debug,sqlx=info");
    }
}
