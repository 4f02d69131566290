use clap::Parser;

fn main() -> std::process::ExitCode {
    recruitd::logging::init();
    let code = match recruitd::cli::run(recruitd::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            recruitd::logging::tell(recruitd::logging::Severity::Error, format_args!("{e:#}"));
            std::process::ExitCode::FAILURE
        }
    };
    recruitd::logging::flush();
    code
}
