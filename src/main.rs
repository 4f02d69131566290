use clap::Parser;

fn main() -> std::process::ExitCode {
    // Whatever this process creates (the store and its journals, blobs, checkpoints,
    // generated snapshots holding key secrets) is readable by its own user only.
    #[cfg(unix)]
    // SAFETY: `umask` only sets the process's file-creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    recruitd::telemetry::logging::init();
    let code = match recruitd::cli::run(recruitd::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            recruitd::telemetry::logging::tell(
                recruitd::telemetry::logging::Severity::Error,
                format_args!("{e:#}"),
            );
            std::process::ExitCode::FAILURE
        }
    };
    recruitd::telemetry::logging::flush();
    code
}
