//! docs/cli.md and docs/report.md against the binary: every subcommand and
//! long option its `--help` lists is documented with its default, nothing
//! documented is missing from it, and every key of a real report is named.

use crate::common::{epsilod, ok};
use std::collections::{BTreeMap, BTreeSet};

fn doc(name: &str) -> String {
    let path = format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The subcommands `epsilod --help` lists (without clap's `help`).
fn subcommands() -> Vec<String> {
    let help = ok(&["--help"]);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// A subcommand's long options (without `--help`), each with its default
/// where `--help` shows one.
fn options(command: &str) -> BTreeMap<String, Option<String>> {
    let help = ok(&[command, "--help"]);
    let mut options: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let t = line.trim_start();
        // An option's first line (`--name` or `-x, --name`), indented less
        // than the lines of its description.
        let long = match line.len() - t.len() {
            0..=6 => t
                .strip_prefix("--")
                .or_else(|| t.split_once(", --").map(|(_, r)| r)),
            _ => None,
        };
        let name = long.and_then(|r| r.split([' ', ',']).next());
        if let Some(name) = name {
            current = (name != "help").then(|| name.to_string());
            if let Some(c) = &current {
                options.insert(c.clone(), None);
            }
        }
        if let (Some(c), Some(at)) = (&current, line.find("[default: ")) {
            let rest = &line[at + "[default: ".len()..];
            let value = rest[..rest.find(']').expect("a closed default")].to_string();
            options.insert(c.clone(), Some(value));
        }
    }
    options
}

/// One documented subcommand: its options' rows (name to default cell),
/// and whether it takes every option of `epsilod run`.
struct Section {
    rows: BTreeMap<String, String>,
    takes_run: bool,
}

/// docs/cli.md's sections `## \`epsilod NAME\``, each with the long
/// options of its tables' first column.
fn documented() -> BTreeMap<String, Section> {
    let text = doc("cli.md");
    let mut sections = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = h
                .strip_prefix("`epsilod ")
                .and_then(|r| r.strip_suffix('`'))
                .map(String::from);
            if let Some(c) = &current {
                sections.insert(
                    c.clone(),
                    Section {
                        rows: BTreeMap::new(),
                        takes_run: false,
                    },
                );
            }
            continue;
        }
        let Some(section) = current.as_ref().and_then(|c| sections.get_mut(c)) else {
            continue;
        };
        if let Some(row) = line.strip_prefix("| `--") {
            let name = row.split('`').next().unwrap().to_string();
            let default = line.split(" | ").nth(2).unwrap_or("").to_string();
            section.rows.insert(name, default);
        }
    }
    // "takes every option of `epsilod run`", wherever its lines break.
    for (name, body) in text.split("\n## ").filter_map(|s| {
        s.strip_prefix("`epsilod ")
            .and_then(|r| r.split_once('`'))
            .map(|(n, b)| (n.to_string(), b.to_string()))
    }) {
        if body
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("every option of `epsilod run`")
        {
            sections.get_mut(&name).unwrap().takes_run = true;
        }
    }
    sections
}

#[test]
fn the_cli_reference_names_every_subcommand_and_option_with_its_default() {
    let docs = documented();
    let commands = subcommands();
    assert!(commands.len() >= 14, "{commands:?}");
    let listed: BTreeSet<&str> = commands.iter().map(String::as_str).collect();
    let sections: BTreeSet<&str> = docs.keys().map(String::as_str).collect();
    assert_eq!(
        sections, listed,
        "docs/cli.md's `## \\`epsilod NAME\\`` sections against `epsilod --help`"
    );
    let mut problems = Vec::new();
    for command in &commands {
        let section = &docs[command];
        let real = options(command);
        let mut rows: BTreeMap<String, String> = section.rows.clone();
        if section.takes_run {
            for (name, cell) in &docs["run"].rows {
                rows.entry(name.clone()).or_insert_with(|| cell.clone());
            }
        }
        for (name, default) in &real {
            match (rows.get(name), default) {
                (None, _) => problems.push(format!("{command} --{name}: not in docs/cli.md")),
                (Some(cell), Some(d)) if !cell.contains(&format!("`{d}`")) => problems.push(
                    format!("{command} --{name}: the default is {d}, docs/cli.md says {cell}"),
                ),
                _ => {}
            }
        }
        for name in rows.keys() {
            if !real.contains_key(name) {
                problems.push(format!(
                    "{command} --{name}: in docs/cli.md, not in the binary"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// README.md's map of the code names every workspace crate and every
/// subcommand: a newcomer reads it first, and it must not drift.
#[test]
fn the_readme_map_names_every_crate_and_subcommand() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let map = readme
        .split("## Layout of the code")
        .nth(1)
        .and_then(|r| r.split("\n## ").next())
        .expect("README.md has a section 'Layout of the code'");
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = ["))
        .expect("the workspace's members line");
    let crates = members
        .split(',')
        .map(|m| m.trim().trim_matches(['"', ']']));
    let mut missing: Vec<String> = crates
        .filter(|c| !map.contains(&format!("`{c}`")))
        .map(|c| format!("crate `{c}`"))
        .collect();
    // The binary's own list: "run plan" and the models' list elsewhere in
    // the map would otherwise stand for plan, predict and the rest.
    let binary = map
        .split("the `epsilod` binary:")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("README.md's map lists the `epsilod` binary's subcommands");
    let words: BTreeSet<&str> = binary
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    missing.extend(
        subcommands()
            .into_iter()
            .filter(|c| !words.contains(c.as_str()))
            .map(|c| format!("subcommand {c}")),
    );
    assert!(missing.is_empty(), "README.md's map lacks {missing:?}");
}

/// The parser above finds what it should: a subcommand's options and
/// defaults, short forms and flags included.
#[test]
fn help_is_read_with_its_defaults() {
    let run = options("run");
    assert_eq!(run["iters"].as_deref(), Some("100"));
    assert_eq!(run["partition"].as_deref(), Some("m"));
    assert_eq!(run["peer-timeout"].as_deref(), Some("300"));
    assert_eq!(run["quiet"], None);
    assert!(!run.contains_key("help"));
    let plot = options("plot");
    assert_eq!(plot.keys().collect::<Vec<_>>(), ["output"]);
    // A default on a line of its own (clap's long help).
    assert_eq!(options("scale")["compute"].as_deref(), Some("wall"));
}

/// The keys of an object in docs/report.md's section `heading`.
fn report_keys(heading: &str) -> BTreeSet<String> {
    let text = doc("report.md");
    let body = text
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/report.md has no {heading}"));
    body.lines()
        .take_while(|l| !l.starts_with("## ") && !l.starts_with("### "))
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|r| r.split('`').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_report_reference_names_every_key_of_a_real_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let out = epsilod(&[
        "run",
        "2d4",
        "--size",
        "34",
        "--iters",
        "130",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1,slowdown=2",
        "--partition",
        "w0",
        "--alb",
        "const-iters",
        "--halo-depth",
        "auto",
        "--cpu-time",
        "--checkpoint-every",
        "100",
        "--checkpoint-dir",
        dir.path().join("ck").to_str().unwrap(),
        "--quiet",
        "--report",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let keys = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let first = |k: &str| r[k].as_array().and_then(|a| a.first()).cloned();
    let mut objects = vec![
        ("## Top level", keys(&r)),
        ("## `config`", keys(&r["config"])),
        ("## `summary`", keys(&r["summary"])),
    ];
    for (heading, key) in [
        ("## `iterations`", "iterations"),
        ("## `redistributions`", "redistributions"),
        ("## `checkpoints`", "checkpoints"),
        ("## `depth_trials`", "depth_trials"),
    ] {
        let item = first(key).unwrap_or_else(|| panic!("the run wrote no {key}"));
        objects.push((heading, keys(&item)));
    }
    let device = first("iterations").unwrap()["devices"][0].clone();
    objects.push(("### `iterations[].devices`", keys(&device)));
    let decision = first("heuristic").expect("the run checked its heuristic");
    let mut decision = keys(&decision);
    // Beside iter and decision, the heuristic's own values, by any name.
    decision.retain(|k| k == "iter" || k == "decision");
    objects.push(("## `heuristic`", decision));
    for (heading, real) in objects {
        let documented = report_keys(heading);
        let missing: Vec<_> = real.difference(&documented).collect();
        assert!(
            missing.is_empty(),
            "docs/report.md {heading} lacks {missing:?}"
        );
    }
    // The summary and config hold every documented key (resumed_from only
    // in a restarted run).
    let mut config = report_keys("## `config`");
    config.remove("resumed_from");
    assert_eq!(config, keys(&r["config"]));
    assert_eq!(report_keys("## `summary`"), keys(&r["summary"]));
}
