//! `run --weights-from` costs each device at the run's own tiles, as
//! `predict` does: a device in host memory at the split's working set.

use crate::common;
use common::{json, ok};

/// Two devices with equal lines, the first in host memory, calibrated at
/// a 2 MB working set on a memory curve that falls 8x by 32 MB: at a
/// 2000x1000 interior the plain split's 8 MB of the first device's tiles
/// stream slower, so it starts with fewer rows than the second (the
/// powers alone split them 1000 and 1000).
#[test]
fn weights_from_cost_host_devices_at_the_runs_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("machine.json");
    std::fs::write(
        &model,
        r#"{"devices":[{"name":"cpu","seconds_per_cell":1e-9,"host_memory":true},
            {"name":"gpu","seconds_per_cell":1e-9}],
          "links":[{"name":"local","hockney":{"alpha":1e-6,"beta":1e-10},
            "loggp":{"l":1e-6,"o_s":0,"o_r":0,"g":0,"big_g":1e-10}}],
          "memory":{"rates":[[2e6,64e9],[32e6,8e9]]},
          "calibrated_at":{"bytes":2e6,"streams":1,"cell_bytes":4,"row_bytes":4000,"reach_rows":3}}"#,
    )
    .unwrap();
    let report = dir.path().join("r.json");
    ok(&[
        "run",
        "2d4",
        "--size",
        "2002x1002",
        "--iters",
        "1",
        "--partition",
        "w0",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--weights-from",
        model.to_str().unwrap(),
        "--quiet",
        "--report",
        report.to_str().unwrap(),
    ]);
    let r = json(&report);
    let rows: Vec<u64> = (0..2)
        .map(|d| r["iterations"][0]["devices"][d]["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows.iter().sum::<u64>(), 2000);
    // Seconds per cell 1.23 times the line's at 8 MB: 897 rows of 2000.
    assert!((880..920).contains(&rows[0]), "{rows:?}");
}
