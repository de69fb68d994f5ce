//! A `.npy` header other than NumPy writes, given to a command that reads
//! arrays, is one line naming the file and what is wrong with its header.

use crate::common::{epsilod, path};

/// A version 1.0 file of `header` and a 2x3 f32 array of zeros.
fn npy(file: &str, header: &str) {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((h.len() as u16).to_le_bytes());
    bytes.extend(h.as_bytes());
    bytes.extend([0u8; 24]);
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn a_header_numpy_does_not_write_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let png = path(dir.path(), "v.png");
    for (header, why) in [
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (3, 2), }",
            "its header gives 'shape' twice",
        ),
        (
            "{'descr': '<f4', 'fortran_order': Truex, 'shape': (2, 3), }",
            "its header's 'fortran_order' is Truex, not True or False",
        ),
    ] {
        let file = path(dir.path(), "a.npy");
        npy(&file, header);
        for (args, want) in [
            (
                vec!["view", &file, "-o", &png],
                format!("error: cannot plot: {file}: not a readable .npy array ({why})\n"),
            ),
            (
                vec!["run", "gaussian", "--input", &file, "--iters", "1"],
                format!("error: cannot read {file}: not a readable .npy array ({why})\n"),
            ),
        ] {
            let o = epsilod(&args);
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{args:?}");
        }
    }
}
