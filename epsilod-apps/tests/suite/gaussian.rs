//! The gaussian app: the same bits as an independent serial loop written
//! from gaussian_kernels.c (apps.md §1.4), on every layout, for odd and
//! even kernel widths, and for images with negative pixels (where
//! truncation meets -0).

use crate::common::{bits_on, layouts};
use epsilod::{Partition, Skeleton};
use epsilod_apps::gaussian;

/// EPSILOD's gaussian, serially: the image inside a border of kw/2 zeros;
/// each step, every image pixel becomes the truncated f64-accumulated sum
/// of its kw x kw neighbours times expf weights, over 2*M_PI*sigma*sigma.
fn serial(
    image: &[f32],
    rows: usize,
    cols: usize,
    kw: usize,
    sigma: f32,
    iters: usize,
) -> Vec<u32> {
    let off = kw / 2;
    let (n0, n1) = (rows + 2 * off, cols + 2 * off);
    let mut a = vec![0.0f32; n0 * n1];
    for i in 0..rows {
        for j in 0..cols {
            a[(i + off) * n1 + j + off] = image[i * cols + j];
        }
    }
    let mean = kw as f32 / 2.0;
    let norm = 2.0 * std::f64::consts::PI * f64::from(sigma) * f64::from(sigma);
    let mut b = a.clone();
    for _ in 0..iters {
        for x in off..off + rows {
            for y in off..off + cols {
                let mut sum = 0.0f32;
                for r in 0..kw {
                    for c in 0..kw {
                        let dr = (r as f32 - mean) / sigma;
                        let dc = (c as f32 - mean) / sigma;
                        let w = (-0.5f32 * (dr * dr + dc * dc)).exp();
                        let p = a[(x + r - off) * n1 + (y + c - off)] * w;
                        sum = (f64::from(sum) + f64::from(p) / norm) as f32;
                    }
                }
                b[x * n1 + y] = (sum as i32) as f32;
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    a.iter().map(|v| v.to_bits()).collect()
}

/// An image's rows and columns, the kernel width and sigma.
type Case = (usize, usize, usize, f32);

fn run(image: &[f32], case: Case, iters: u64, devices: &[&str], part: Partition) -> Vec<u32> {
    let (rows, cols, kw, sigma) = case;
    let s = Skeleton::new(
        &gaussian::global_size(rows, cols, kw),
        gaussian::stencil(kw, sigma),
    )
    .iterations(iters)
    .init(gaussian::init(image.to_vec(), rows, cols, kw));
    bits_on(s, devices, part)
}

/// Pixels 0..=255 and some far larger (where f32 steps in place of f64
/// ones would show above the truncation), with a few negative ones where
/// `negative`.
fn image(rows: usize, cols: usize, negative: bool) -> Vec<f32> {
    (0..rows * cols)
        .map(|k| {
            let v = ((k * 7919 + 13) % 256) as f32;
            match k % 5 {
                0 if negative => -v / 300.0,
                1 => v * 65537.0,
                _ => v,
            }
        })
        .collect()
}

#[test]
fn same_bits_as_the_serial_loop_on_every_layout() {
    let layouts = layouts();
    for (rows, cols, kw, sigma, negative) in [
        (23, 31, 5, 1.0, false),
        (20, 17, 4, 1.5, true),
        (16, 16, 3, 0.8, true),
    ] {
        let img = image(rows, cols, negative);
        let iters = 6;
        let want = serial(&img, rows, cols, kw, sigma, iters);
        assert_ne!(
            want,
            serial(&img, rows, cols, kw, sigma, 0),
            "the blur changes the image"
        );
        for (devs, part) in &layouts {
            assert_eq!(
                run(&img, (rows, cols, kw, sigma), iters as u64, devs, *part),
                want,
                "{rows}x{cols} kw {kw} sigma {sigma}: {devs:?} {part}"
            );
        }
    }
}

/// Sums in (-1, 0) truncate to +0 as `(float)(int)` gives, not -0.
#[test]
fn truncation_gives_positive_zero() {
    let img = vec![-0.5f32; 9];
    let got = run(
        &img,
        (3, 3, 3, 1.0),
        1,
        &["cpu:threads=1"],
        Partition::Multi,
    );
    let want = serial(&img, 3, 3, 3, 1.0, 1);
    assert_eq!(got, want);
    let image: Vec<u32> = (1..4)
        .flat_map(|i| (1..4).map(move |j| i * 5 + j))
        .map(|k| got[k])
        .collect();
    assert!(image.iter().all(|&b| b == 0), "{image:?}");
}

#[test]
fn images_load_from_pgm_and_npy() {
    let dir = tempfile::tempdir().unwrap();
    let pgm = dir.path().join("a.pgm");
    std::fs::write(&pgm, b"P2\n3 2\n255\n0 1 2\n3 4 255\n").unwrap();
    assert_eq!(
        gaussian::load(&pgm).unwrap(),
        (2, 3, vec![0.0, 1.0, 2.0, 3.0, 4.0, 255.0])
    );
    let npy = dir.path().join("a.npy");
    epsilod_testkit::write_npy(&npy, "<f8", &[2, 2], &[0.5f64, -1.0, 3.0, 1e10]);
    assert_eq!(
        gaussian::load(&npy).unwrap(),
        (2, 2, vec![0.5f32, -1.0, 3.0, 1e10])
    );
    epsilod_testkit::write_npy(&npy, "<f4", &[2], &[1.0f32, 2.0]);
    assert!(gaussian::load(&npy)
        .unwrap_err()
        .to_string()
        .contains("2-d"));
    epsilod_testkit::write_npy(&npy, "<i4", &[1, 1], &[7i32]);
    assert!(gaussian::load(&npy).is_err());
    assert!(gaussian::load(&dir.path().join("a.png"))
        .unwrap_err()
        .to_string()
        .contains(".pgm or .npy"));
}

#[test]
fn weights_follow_the_original_formula() {
    let w = gaussian::weights(5, 1.0);
    assert_eq!(w.len(), 25);
    // Row 2, column 2: dr = dc = -0.5, so exp(-0.25).
    assert_eq!(w[2 * 5 + 2], (-0.25f32).exp());
    // Half a pixel off centre: (2, 2) and (3, 3) weigh the same, (1, 1) not.
    assert_eq!(w[2 * 5 + 2], w[3 * 5 + 3]);
    assert_ne!(w[5 + 1], w[3 * 5 + 3]);
    assert_eq!(gaussian::norm(1.0), std::f64::consts::TAU);
}

#[test]
fn the_device_body_reads_its_footprint_in_double() {
    let k = gaussian::device_kernel(5, 1.0);
    assert!(k.needs_fp64());
    let src = k.source(epsilod::Dialect::OpenCl);
    assert!(src.contains("cl_khr_fp64"), "{src}");
    assert!(
        src.contains("sum = (float)((double)sum + (double)p / 6.283185307179586);"),
        "{src}"
    );
    assert!(src.contains("(index_t)(a - 2) * s2"), "{src}");
    assert_eq!(gaussian::offsets(4).first(), Some(&[-2, -2]));
    assert_eq!(gaussian::offsets(4).last(), Some(&[1, 1]));
}
