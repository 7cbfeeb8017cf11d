//! The `bench` binary: argument parsing and dispatch into the library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
