//! A restart reads a checkpoint's manifest and blocks within a bound: a
//! file replaced by a huge one is refused in one line naming it, before
//! anything is read into memory.

use crate::common::{fails_with, ok};
use std::path::{Path, PathBuf};

/// A checkpoint at iteration 5 of a 2d4 run on two devices, in `ck`.
fn checkpointed(ck: &Path) -> PathBuf {
    let ck_arg = ck.display().to_string();
    ok(&[
        "run",
        "2d4",
        "--size",
        "34",
        "--iters",
        "10",
        "--quiet",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--partition",
        "w0",
        "--checkpoint-every",
        "5",
        "--checkpoint-dir",
        &ck_arg,
    ]);
    ck.join("ckpt-000000000005")
}

/// A restart from a checkpoint whose `file` was made a 1 TiB sparse file
/// fails with the line `want` gives for the file's path.
fn refused_when_huge(file: &str, want: impl Fn(&Path) -> String) {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let file = checkpointed(&ck).join(file);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let ck = ck.display().to_string();
    let run = ["run", "2d4", "--size", "34", "--iters", "20", "--quiet"];
    fails_with(&[&run[..], &["--restart", &ck]].concat(), &want(&file));
}

/// A block is read no further than the bytes its manifest gives it: one of
/// a terabyte is refused by its length.
#[test]
fn a_huge_block_is_refused_by_its_length() {
    refused_when_huge("block-1.bin", |block| {
        format!(
            "checkpoint block {} is truncated or overwritten: 1099511627776 bytes, the manifest says 2048",
            block.display()
        )
    });
}

/// A manifest is read within 64 MiB, a hundred thousand devices' worth.
#[test]
fn a_huge_manifest_is_refused_at_its_bound() {
    refused_when_huge("manifest.json", |manifest| {
        format!(
            "checkpoint path {}: it holds more than 64 MiB, the most this input may",
            manifest.display()
        )
    });
}
