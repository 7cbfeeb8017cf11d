//! Running the external CLIs the real backends drive (`kind`, `talosctl`,
//! and `docker` for what [`super::docker::Docker`] does not cover), through
//! `duct`, each call bounded in time.
//!
//! One runner for all of them, so "the tool is not installed" always reads
//! the same, names what to install, and maps to exit 3: the nightly job
//! must tell a broken runner from a regressed platform.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use drillbench_model::exit::Exit;

/// How long one call may take unless the caller says otherwise. Creating a
/// cluster takes minutes; those calls pass a bound of their own.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

/// The executables the real backends call; bare names are looked up on
/// `PATH`, so tests put stand-ins first on a child's `PATH` or name them
/// here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tools {
    /// `kind`.
    pub kind: PathBuf,
    /// `talosctl`.
    pub talosctl: PathBuf,
    /// `docker`.
    pub docker: PathBuf,
    /// The bound of an ordinary call.
    pub timeout: Duration,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            kind: PathBuf::from("kind"),
            talosctl: PathBuf::from("talosctl"),
            docker: PathBuf::from("docker"),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl Tools {
    /// The [`super::docker::Docker`] for these tools.
    pub fn docker(&self) -> super::docker::Docker {
        super::docker::Docker::new()
            .with_program(&self.docker)
            .with_timeout(self.timeout)
    }
}

/// Why a CLI call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The executable could not be started.
    #[error("cannot run {program}; {hint}")]
    Missing {
        /// The executable.
        program: String,
        /// What to install.
        hint: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It ran and failed.
    #[error("`{program} {command}` failed ({status}): {stderr}")]
    Failed {
        /// The executable.
        program: String,
        /// The arguments, joined by spaces.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr, trimmed (its last lines).
        stderr: String,
    },
    /// It did not finish in time and was killed.
    #[error("`{program} {command}` did not finish within {seconds} s")]
    Timeout {
        /// The executable.
        program: String,
        /// The arguments, joined by spaces.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// It runs, but is a version the bench does not drive.
    #[error("{program} is {found}, but the bench drives {supported}; {hint}")]
    UnsupportedVersion {
        /// The executable.
        program: String,
        /// The version it reported (or what it printed).
        found: String,
        /// The versions the bench supports.
        supported: &'static str,
        /// What to install.
        hint: &'static str,
    },
}

impl ToolError {
    /// Every CLI failure is the runner's, not the platform's: exit 3.
    pub fn exit(&self) -> Exit {
        Exit::Infrastructure
    }
}

/// One CLI, with what to install when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    program: PathBuf,
    hint: &'static str,
    timeout: Duration,
}

impl Tool {
    /// `program`, with the installation hint printed when it is missing.
    pub fn new(program: impl Into<PathBuf>, hint: &'static str, timeout: Duration) -> Self {
        Self {
            program: program.into(),
            hint,
            timeout,
        }
    }

    /// The installation hint.
    pub fn hint(&self) -> &'static str {
        self.hint
    }

    /// The executable as given.
    pub fn program(&self) -> String {
        self.program.display().to_string()
    }

    /// Runs one call within the tool's bound; stdout on success.
    pub fn run<I, A>(&self, args: I) -> Result<String, ToolError>
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.run_within(self.timeout, args)
    }

    /// Runs one call within `timeout`; stdout on success.
    pub fn run_within<I, A>(&self, timeout: Duration, args: I) -> Result<String, ToolError>
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let command = args
            .iter()
            .map(|arg| arg.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let program = self.program();
        let missing = |source| ToolError::Missing {
            program: program.clone(),
            hint: self.hint,
            source,
        };
        // As an OsStr, not a Path: duct runs a bare relative Path as
        // `./kind`, which would skip the PATH lookup.
        let handle = duct::cmd(self.program.as_os_str(), &args)
            .stdout_capture()
            .stderr_capture()
            .stdin_null()
            .unchecked()
            .start()
            .map_err(missing)?;
        if handle.wait_timeout(timeout).map_err(missing)?.is_none() {
            // Best effort: the timeout is what the caller must hear about.
            let _ = handle.kill();
            return Err(ToolError::Timeout {
                program,
                command,
                seconds: timeout.as_secs(),
            });
        }
        let output = handle.into_output().map_err(missing)?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        Err(ToolError::Failed {
            program,
            command,
            status: output.status.to_string(),
            stderr: last_lines(&String::from_utf8_lossy(&output.stderr), 20),
        })
    }
}

/// The last `n` non-empty lines: kind and talosctl print progress before
/// the error, and the error is what the operator needs.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `major.minor.patch` from the first `vX.Y.Z` word of `text`.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    text.split_whitespace().find_map(|word| {
        let word = word.strip_prefix('v')?;
        let core = word.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
        let version = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_what_the_tools_print() {
        assert_eq!(
            parse_version("kind v0.27.0 go1.23.6 linux/amd64"),
            Some((0, 27, 0))
        );
        assert_eq!(parse_version("Tag:         v1.11.5"), Some((1, 11, 5)));
        assert_eq!(
            parse_version("kind v0.30.0-alpha+abc go1.24 linux/amd64"),
            Some((0, 30, 0))
        );
        assert_eq!(parse_version("kind version unknown"), None);
    }

    #[test]
    fn a_missing_tool_names_what_to_install_and_is_infrastructure() {
        let tool = Tool::new(
            "/nonexistent/kind",
            "install kind v0.27.0",
            Duration::from_secs(5),
        );
        let error = tool.run(["version"]).unwrap_err();
        assert!(matches!(error, ToolError::Missing { .. }), "{error:?}");
        assert!(
            error.to_string().contains("install kind v0.27.0"),
            "{error}"
        );
        assert_eq!(error.exit(), Exit::Infrastructure);
    }

    #[test]
    fn a_failure_keeps_the_last_lines_of_stderr() {
        let tool = Tool::new("sh", "", Duration::from_secs(30));
        let error = tool
            .run([
                "-c",
                "for i in $(seq 1 30); do echo line$i >&2; done; exit 4",
            ])
            .unwrap_err();
        match error {
            ToolError::Failed { stderr, status, .. } => {
                assert!(stderr.starts_with("line11\n"), "{stderr}");
                assert!(stderr.ends_with("line30"), "{stderr}");
                assert!(status.contains('4'), "{status}");
            }
            other => panic!("{other:?}"),
        }
    }
}
