//! Every parser of user input gives a value or an error, never a panic:
//! stencil spec files (weighted and expressions, whose kernels are also
//! built and their device code written), device files, `--devices`
//! entries, heuristics, partitions, checkpoint manifests, PGM images. Inputs are arbitrary text and valid
//! inputs with random edits. `FUZZ_CASES` raises the count per parser
//! (the default keeps CI quick).

use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

/// `valid` with up to eight random insertions, deletions, replacements
/// or truncations.
fn mutated(valid: &'static str) -> impl Strategy<Value = String> {
    let len = valid.chars().count();
    prop::collection::vec((0..=len, 0u8..4, any::<char>()), 0..8).prop_map(move |edits| {
        let mut s: Vec<char> = valid.chars().collect();
        for (at, kind, c) in edits {
            let at = at.min(s.len());
            match kind {
                0 => s.insert(at, c),
                1 if at < s.len() => {
                    s.remove(at);
                }
                2 if at < s.len() => s[at] = c,
                _ => s.truncate(at),
            }
        }
        s.into_iter().collect()
    })
}

/// `spec`'s kernel for cells `C`, on the CPU (one step over a small grid)
/// and as device code.
fn compiles<C: kernels::ExprCell>(spec: &kernels::ExprSpec) {
    let k = kernels::ExprKernel::<C>::new(spec);
    let _ = kernels::Kernel::device_kernel(&k);
    let dims: Vec<usize> = spec
        .low
        .iter()
        .zip(&spec.high)
        .map(|(l, h)| l + h + 2)
        .collect();
    let cells: usize = dims.iter().product();
    if cells <= 100_000 {
        let frame = kernels::Frame::row_major(&dims);
        let src = vec![C::zeroed(); cells];
        let mut dst = src.clone();
        let region: Vec<_> = (0..dims.len())
            .map(|d| spec.low[d]..dims[d] - spec.high[d])
            .collect();
        // Auxiliary fields, if any, computed over the grid by launch_serial.
        kernels::launch_serial(&k, &src, &mut dst, &frame, &region).unwrap();
    }
}

const WEIGHTED: &str =
    "name = \"x\"\nlow = [1, 1]\nhigh = [1, 1]\nweights = [0, 1, 0, 1, 0, 1, 0, 1, 0]\nfactor = 4\n";
const EXPRESSION: &str = "name = \"e\"\nlow = [1, 1]\nhigh = [1, 1]\nparams = { k = 0.5 }\nlet = [\"s = u[-1,0] + u[1,0]\", \"hot = s > k\"]\nupdate = \"select(hot && !(g[0] < n[1] - 2), sqrt(abs(s)) / 2, min(old2, u[0,1]) - 3 * (s + 1e-3))\"\n";
/// Auxiliary fields: `aux`, read at offsets.
const AUX: &str = "name = \"a\"\nlow = [1, 1]\nhigh = [1, 1]\nparams = { h = 2 }\naux = { k = \"select(g[0] < n[0] / 2, h, 1) + g[1]\", z2 = \"sqrt(abs(g[0] - g[1]))\" }\nupdate = \"u[0,0] + k[-1,0] * z2[0,1] - k[1,1]\"\n";
/// Cells of components: `cell`, `u[...][k]`, `old2[k]`, `inf`, a list of updates.
const COMPONENTS: &str = "name = \"c\"\ncell = 3\nlow = [1, 1]\nhigh = [1, 1]\nlet = [\"w = u[0,0][0] == inf\", \"m = u[-1,0][1] + u[1,0][2]\"]\nupdate = [\"select(w, u[0,0][0], m)\", \"old2[1] * 2\", \"u[0,1][2] - m / 3\"]\n";
const DEVICE_FILE: &str = "[[device]]\nkind = \"cpu\"\nthreads = 1\nweight = 2\nslowdown = \"3@300\"\nhost = \"*\"\n[[device]]\nkind = \"opencl\"\nplatform = 0\ndevice = 0\nlayout = \"cells\"\nrank = 1\n";

/// A checkpoint written by a real run, its directory and manifest text:
/// the valid input the manifest fuzzing mutates.
fn checkpoint() -> &'static (tempfile::TempDir, std::path::PathBuf, &'static str) {
    static ONE: std::sync::OnceLock<(tempfile::TempDir, std::path::PathBuf, &'static str)> =
        std::sync::OnceLock::new();
    ONE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let lib = kernels::Library::S2d4;
        epsilod::Skeleton::new(
            &[9, 8],
            epsilod::Stencil::<f32>::library(lib, kernels::KernelChoice::Specialized),
        )
        .iterations(3)
        .devices(vec![epsilod::DeviceSpec::cpu(1); 2])
        .checkpoint(2, dir.path())
        .run()
        .unwrap();
        let ckpt = dir.path().join(format!("ckpt-{:012}", 2));
        let text = std::fs::read_to_string(ckpt.join("manifest.json")).unwrap();
        (dir, ckpt, Box::leak(text.into_boxed_str()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn checkpoint_manifests(text in prop_oneof![".*", mutated(checkpoint().2)]) {
        let (_, ckpt, _) = checkpoint();
        // A copy of the checkpoint with this manifest.
        let dir = tempfile::tempdir().unwrap();
        for f in ["block-0.bin", "block-1.bin"] {
            std::fs::copy(ckpt.join(f), dir.path().join(f)).unwrap();
        }
        std::fs::write(dir.path().join("manifest.json"), &text).unwrap();
        let interior = hitmap::Shape::from_ranges(&[(1, 8), (1, 7)]);
        let expect = epsilod::checkpoint::Expect {
            stencil: "2d4",
            cell: "f32",
            cell_size: 4,
            size: &[9, 8],
            levels: 1,
            interior: &interior,
        };
        let opened = epsilod::checkpoint::Restart::open(dir.path(), &expect);
        if text == checkpoint().2 {
            prop_assert!(opened.is_ok(), "{:?}", opened.err().map(|e| e.to_string()));
        }
        if let Ok(r) = opened {
            // What opens also reads.
            let _ = r.parts::<f32>(0, &interior);
        }
    }

    #[test]
    fn stencil_specs(text in prop_oneof![".*", mutated(WEIGHTED), mutated(EXPRESSION), mutated(COMPONENTS), mutated(AUX)]) {
        let parsed = kernels::AnySpec::from_toml(&text, "f.toml");
        if [WEIGHTED, EXPRESSION, COMPONENTS, AUX].contains(&text.as_str()) {
            prop_assert!(parsed.is_ok(), "{:?}", parsed.err().map(|e| e.to_string()));
        }
        if let Ok(kernels::AnySpec::Expr(e)) = parsed {
            // What parses also compiles (once bound to a domain, as a run
            // binds it), for the CPU and for devices.
            let e = e.for_domain(&vec![10; e.ndims()]).unwrap();
            match e.components {
                None => compiles::<f32>(&e),
                Some(1) => compiles::<[f32; 1]>(&e),
                Some(2) => compiles::<[f32; 2]>(&e),
                Some(3) => compiles::<[f32; 3]>(&e),
                Some(n) => {
                    // Cell types are compile-time: the row operations at
                    // least, over components of n.
                    let lets: Vec<_> = e.lets.iter().map(|l| l.1.clone()).collect();
                    let _ = kernels::expr::Program::<f32>::new(&lets, &e.update, Some(n));
                }
            }
        }
    }

    #[test]
    fn device_files(text in prop_oneof![".*", mutated(DEVICE_FILE)]) {
        let _ = epsilod::devices::parse_device_file(&text, "devices.toml");
    }

    #[test]
    fn device_entries(text in prop_oneof![".*", mutated("cpu:threads=2,weight=3,slowdown=2.5@100"), mutated("opencl:platform=0,device=1,layout=planes")]) {
        let _ = epsilod::DeviceSpec::parse(&text);
    }

    #[test]
    fn pgm_images(
        text in prop_oneof![".*", mutated("P2\n# c\n3 2\n255\n0 1 2\n3 4 255\n")],
        binary in prop::collection::vec(any::<u8>(), 0..40),
        wide in any::<bool>(),
    ) {
        let _ = epsilod::pgm::parse(text.as_bytes());
        // Binary images: a valid header, then any bytes (too few, too many).
        let mut p5 = if wide { b"P5 2 3\n1000\n".to_vec() } else { b"P5\n2 3 255\n".to_vec() };
        p5.extend(&binary);
        if let Ok(img) = epsilod::pgm::parse(&p5) {
            prop_assert_eq!(img.pixels.len(), 6);
        }
    }

    #[test]
    fn heuristics_and_partitions(text in prop_oneof![".*", mutated("cost-aware:min-gain=0.05"), mutated("const-iters:every=100"), mutated("w0"), mutated("m2")]) {
        let _ = epsilod::Alb::parse(&text);
        let _ = text.parse::<hitmap::Partition>();
    }
}
