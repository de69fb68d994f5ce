//! Refusing one file named for two of a command's inputs and outputs.

use crate::args::RunArgs;
use crate::error::CliError;
use std::path::{Path, PathBuf};

/// Errors where two of a command's files are one (`--output r.npy
/// --report r.npy`, `--json` onto its own `--model`): the one written last
/// would silently replace the other, or the input read. `files` pairs each
/// option with its file, where given; devices (`/dev/null`) may repeat.
pub(super) fn distinct_files(files: &[(&str, Option<&Path>)]) -> Result<(), CliError> {
    let given: Vec<(&str, &Path, PathBuf)> = files
        .iter()
        .filter_map(|&(option, path)| Some((option, path?, file_identity(path?)?)))
        .collect();
    for (i, (a, path, id)) in given.iter().enumerate() {
        if let Some((b, ..)) = given[i + 1..].iter().find(|(.., other)| other == id) {
            return Err(CliError::Usage(format!(
                "{a} and {b} both name {}: give each its own file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Which file `path` names: its canonical path where it exists, else its
/// directory's with its name; `None` for what is not a plain file.
fn file_identity(path: &Path) -> Option<PathBuf> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::canonicalize(path).ok(),
        Ok(_) => None,
        Err(_) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = std::fs::canonicalize(dir.unwrap_or(Path::new("."))).ok()?;
            Some(dir.join(path.file_name()?))
        }
    }
}

/// Errors where one of `files` is a snapshot the run writes (`pattern`
/// after iterations `every`, `2 * every`, ... up to `iters`): `--report
/// out/f_2.npy --snapshot 'out/f_{iter}.npy'` replaced the snapshot with
/// the report. Candidates for the iteration are the numbers in the file's
/// path, so a huge `--iters` costs nothing.
pub(super) fn apart_from_snapshots(
    pattern: &str,
    every: u64,
    iters: u64,
    files: &[(&str, Option<&Path>)],
) -> Result<(), CliError> {
    for &(option, path) in files {
        let Some((path, id)) = path.and_then(|p| Some((p, file_identity(p)?))) else {
            continue;
        };
        let text = id.to_string_lossy().into_owned();
        let snapshot = numbers_in(&text).find(|&n| {
            n > 0
                && n <= iters
                && n % every == 0
                && file_identity(Path::new(&pattern.replace("{iter}", &n.to_string()))).as_ref()
                    == Some(&id)
        });
        if let Some(n) = snapshot {
            return Err(CliError::Usage(format!(
                "{option} and --snapshot both name {} (the snapshot after iteration {n}): give each its own file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Every number written in `text`: each run of digits and each run within
/// one (`{iter}` may follow a digit of the pattern's own).
fn numbers_in(text: &str) -> impl Iterator<Item = u64> + '_ {
    let digit = |i: usize| text.as_bytes()[i].is_ascii_digit();
    (0..text.len())
        .filter(move |&i| digit(i))
        .flat_map(move |start| {
            (start + 1..=text.len())
                .take_while(move |&end| digit(end - 1))
                .filter_map(move |end| text[start..end].parse().ok())
        })
}

/// The files a run reads, each with its option (`--input`,
/// `--weights-from`, `--device-file`, `--aux NAME`): the commands that
/// run one (`run`, `compare`, `calibrate`, `signature`) write none of them.
pub(super) fn run_inputs(args: &RunArgs) -> Vec<(String, &Path)> {
    let mut files: Vec<(String, &Path)> = [
        ("--input", &args.input),
        ("--weights-from", &args.weights_from),
        ("--device-file", &args.device_file),
    ]
    .into_iter()
    .filter_map(|(option, path)| Some((option.to_string(), path.as_deref()?)))
    .collect();
    let aux = args.aux.iter().filter_map(|a| a.split_once('='));
    files.extend(aux.map(|(name, file)| (format!("--aux {name}"), Path::new(file))));
    files
}

/// [`outputs_apart`] from the files `args`' run reads.
pub(super) fn apart_from_run(
    outputs: &[(&str, Option<&Path>)],
    args: &RunArgs,
) -> Result<(), CliError> {
    let inputs = run_inputs(args);
    let inputs: Vec<(&str, Option<&Path>)> = (inputs.iter())
        .map(|(option, path)| (option.as_str(), Some(*path)))
        .collect();
    outputs_apart(outputs, &inputs)
}

/// Errors where one of `outputs` is another or one of `inputs`; inputs
/// may repeat (`fit-comm t.csv --test t.csv` scores the training data).
pub(super) fn outputs_apart(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, Option<&Path>)],
) -> Result<(), CliError> {
    distinct_files(outputs)?;
    for &output in outputs.iter().filter(|(_, path)| path.is_some()) {
        for &input in inputs {
            distinct_files(&[output, input])?;
        }
    }
    Ok(())
}
