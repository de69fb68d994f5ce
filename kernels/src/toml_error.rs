//! TOML mistakes of spec files, device files and inventories, told alike.

use thiserror::Error;

/// A TOML error of a file's text on one line, with where it is: `line 3,
/// column 7: invalid table header; expected ...`. The toml crate's own
/// error is kept whole ([`TomlError::toml`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", self.describe())]
pub struct TomlError {
    /// 1-based line and column of the mistake, where toml gives its span.
    at: Option<(usize, usize)>,
    /// Boxed: toml's error is large, and every spec result carries this.
    error: Box<toml::de::Error>,
}

impl TomlError {
    /// `error`, met parsing `text`.
    pub fn new(text: &str, error: toml::de::Error) -> TomlError {
        let at = error.span().map(|span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
            (line, column)
        });
        TomlError {
            at,
            error: Box::new(error),
        }
    }

    /// The line and column (1-based) of the mistake, where known.
    pub fn line_column(&self) -> Option<(usize, usize)> {
        self.at
    }

    /// The toml crate's error.
    pub fn toml(&self) -> &toml::de::Error {
        &self.error
    }

    fn describe(&self) -> String {
        // toml's message spans lines; messages here are one line.
        let what = self
            .error
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        match self.at {
            Some((line, column)) => format!("line {line}, column {column}: {what}"),
            None => what,
        }
    }
}
