//! `--json [FILE]`: a command's figures as one JSON document (docs/json.md),
//! written to FILE beside the text for people, or to stdout in its place
//! (`-`, or `--json` with no FILE).

use crate::error::CliError;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What `--json` names as stdout; clap gives it to a bare `--json`.
pub const STDOUT: &str = "-";

/// Where a command's JSON document goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonOut<'a> {
    /// No `--json`: the text only.
    None,
    /// `--json -`: the document on stdout, no text.
    Stdout,
    /// `--json FILE`: the document in FILE, the text on stdout.
    File(&'a Path),
}

impl<'a> JsonOut<'a> {
    /// The destination of a `--json` option's value.
    pub fn of(arg: Option<&'a PathBuf>) -> JsonOut<'a> {
        match arg {
            None => JsonOut::None,
            Some(p) if p.as_os_str() == STDOUT => JsonOut::Stdout,
            Some(p) => JsonOut::File(p),
        }
    }

    /// Errors unless the file can be written: checked before the work, so
    /// a typo costs no measurement.
    pub fn check(self) -> Result<(), CliError> {
        match self {
            JsonOut::File(p) => epsilod::output::check_creatable(p).map_err(|e| report(p, e)),
            _ => Ok(()),
        }
    }

    /// The file `--json` names, if any.
    pub fn file(self) -> Option<&'a Path> {
        match self {
            JsonOut::File(p) => Some(p),
            _ => None,
        }
    }

    /// Whether the text for people goes to stdout.
    pub fn prints_text(self) -> bool {
        self != JsonOut::Stdout
    }

    /// Writes `doc` where `--json` said: the file, or stdout.
    pub fn write<T: Serialize>(self, doc: &T) -> Result<(), CliError> {
        let text = || serde_json::to_string_pretty(doc).expect("figures serialise");
        match self {
            JsonOut::None => Ok(()),
            JsonOut::Stdout => {
                println!("{}", text());
                Ok(())
            }
            JsonOut::File(p) => {
                epsilod::output::write_whole(p, |w| std::fs::write(w, text() + "\n"))
                    .map_err(|e| report(p, e))
            }
        }
    }
}

fn report(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::Write {
        what: "JSON",
        path: path.display().to_string(),
        why: e.to_string(),
    }
}
