use clap::Parser;

fn main() -> std::process::ExitCode {
    recruitd::server::logging::init();
    let code = match recruitd::cli::run(recruitd::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            recruitd::server::logging::tell(
                recruitd::server::logging::Severity::Error,
                format_args!("{e:#}"),
            );
            std::process::ExitCode::FAILURE
        }
    };
    recruitd::server::logging::flush();
    code
}
