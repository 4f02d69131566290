use clap::Parser;

fn main() -> std::process::ExitCode {
    // `RECRUITD_LOG` filters (default `info`; the access log is the target
    // `recruitd::access`); `RECRUITD_LOG_FORMAT=json` writes one JSON object per line.
    let filter = tracing_subscriber::EnvFilter::try_from_env("RECRUITD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if recruitd::cli::json_logs() {
        logs.json().flatten_event(true).init();
    } else {
        logs.init();
    }
    match recruitd::cli::run(recruitd::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("recruitd: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
