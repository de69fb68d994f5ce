//! A `.npy` header other than NumPy writes, given to a command that reads
//! arrays, is one line naming the file and what is wrong with its header.

use crate::common::{epsilod, path};

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
        epsilod_testkit::write_npy_header(&file, header, &[0; 24]);
        for (args, want) in [
            (
                vec!["view", &file, "-o", &png],
                format!("error: cannot view {file}: not a readable .npy array ({why})\n"),
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
