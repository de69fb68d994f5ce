//! Reliability in the reports and inputs: an image too large for memory
//! refused from its header, and slow spells named in the run's summary,
//! its report and by `plot`, with the hosts devices ran on.

use crate::common::{fails_with, ok};

/// gaussian read a whole `--input` image to learn its size, before the
/// memory check: a header claiming a huge image failed on the pixels (or
/// would have allocated them), not on the memory the run needs.
#[test]
fn a_huge_image_is_refused_by_the_memory_check_from_its_header() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.pgm");
    // 10^12 pixels, none of them in the file.
    std::fs::write(&path, b"P5\n# huge\n1000000 1000000\n255\n").unwrap();
    let args = [
        "run",
        "gaussian",
        "--input",
        path.to_str().unwrap(),
        "--iters",
        "1",
    ];
    fails_with(&args, "error: the run needs ");
    fails_with(&args, " GB of memory on host ");
}

#[test]
fn a_slow_device_is_named_in_the_summary_the_report_and_by_plot() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let slow = "cpu:threads=1,slowdown=8@60";
    let out = ok(&[
        "run",
        "2d4",
        "--size",
        "1026",
        "--iters",
        "200",
        "--devices",
        "cpu:threads=1",
        "--devices",
        slow,
        "--report",
        report.to_str().unwrap(),
    ]);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let hosts = r["config"]["hosts"]
        .as_array()
        .expect("hosts, one a device");
    assert_eq!(hosts.len(), 2);
    // The spell that runs to the end is the slowdown's. Real kernels are
    // timed: a busy core may make either device slow for a while before
    // it, a spell of its own.
    let spells = r["summary"]["slow_spells"].as_array().unwrap();
    let s = spells
        .iter()
        .find(|s| s["to_iter"] == 199)
        .unwrap_or_else(|| panic!("no spell to the end: {spells:?}"));
    assert_eq!((&s["device"], &s["name"]), (&1.into(), &slow.into()));
    assert_eq!(&s["host"], &hosts[1]);
    let from = s["from_iter"].as_u64().unwrap();
    assert!((56..=66).contains(&from), "{s}");
    assert!(s["factor"].as_f64().unwrap() >= 4.0, "{s}");
    // docs/report.md names every key of a spell.
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/report.md")).unwrap();
    let table = doc.split("\n### `summary.slow_spells`\n").nth(1).unwrap();
    let documented: std::collections::BTreeSet<&str> = table
        .lines()
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|r| r.split('`').next().unwrap())
        .collect();
    let keys: std::collections::BTreeSet<&str> =
        s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(documented, keys);
    let line = format!(
        "slow spell: device 1 ({slow}) on {}, iterations {from}-199, ",
        hosts[1].as_str().unwrap()
    );
    // One line per spell, in the run's summary and by plot.
    let printed: Vec<&str> = out.lines().filter(|l| l.contains("slow spell")).collect();
    assert_eq!(printed.len(), spells.len(), "{out}");
    assert!(printed.iter().any(|l| l.starts_with(&line)), "{out}");
    let fig = dir.path().join("f.svg");
    let plotted = ok(&[
        "plot",
        report.to_str().unwrap(),
        "-o",
        fig.to_str().unwrap(),
    ]);
    let named: Vec<String> = printed.iter().map(|l| format!("none: {l}")).collect();
    assert_eq!(plotted.trim().lines().collect::<Vec<_>>(), named);
}
