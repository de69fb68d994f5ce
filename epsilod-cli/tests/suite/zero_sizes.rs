//! A zero extent in `--size`, wherever it stands (first, last, between),
//! is refused where the size is read, in the same line, by every command
//! that takes a size.

use crate::common::{epsilod, path, INVENTORY};
use crate::hostile::MACHINE;

#[test]
fn a_zero_extent_first_or_last_is_one_line_from_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let machine = path(dir.path(), "machine.json");
    std::fs::write(&machine, MACHINE).unwrap();
    let out = path(dir.path(), "out.json");
    let commands: [&[&str]; 7] = [
        &["run", "2d4", "--iters", "1"],
        &["compare", "2d4", "--iters", "1"],
        &["calibrate", "2d4", "--out", &out, "--no-links"],
        &["signature", "2d4", "--iters", "20", "--out", &out],
        &[
            "simulate",
            "2d4",
            "--iters",
            "1",
            "--devices-count",
            "2",
            "--model",
            &machine,
        ],
        &["predict", "--model", &machine, "--iters", "1"],
        &["plan", "--inventory", INVENTORY, "--iters", "1"],
    ];
    let refused = |args: &[&str], size: &str| {
        let o = epsilod(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!("error: bad size '{size}': sizes must be at least 1\n"),
            "{args:?}"
        );
    };
    for command in commands {
        for size in ["0x100", "100x0", "0x0"] {
            refused(&[command, &["--size", size]].concat(), size);
        }
    }
    for size in ["0x100x100", "100x0x100", "100x100x0"] {
        refused(&["run", "3d6", "--iters", "1", "--size", size], size);
    }
}
