//! Device strings and files parsed, refused and written back; cores
//! shared; unused options named.

use super::*;
use crate::job::JobInfo;
use hitmap::Partition;
use kernels::CellLayout;

/// A build without a backend refuses its devices with the way to add
/// it.
#[test]
#[cfg(not(all(feature = "opencl", feature = "cuda")))]
fn a_backend_left_out_of_the_build_says_how_to_rebuild() {
    for (kind, built) in [
        ("opencl", cfg!(feature = "opencl")),
        ("cuda", cfg!(feature = "cuda")),
    ] {
        if built {
            continue;
        }
        let spec = DeviceSpec::parse(kind).unwrap();
        match spec.build::<f32>() {
            Err(e @ controllers::DeviceError::NotBuilt { .. }) => assert_eq!(
                e.to_string(),
                format!("device kind '{kind}' is not available in this build: rebuild with --features {kind}")
            ),
            Err(e) => panic!("{kind}: {e}"),
            Ok(_) => panic!("{kind}: built"),
        }
    }
}

#[test]
fn a_run_given_no_devices_gets_one_cpu_device_per_rank_on_its_share() {
    let job = |hosts: &[&str], cores: &[usize]| JobInfo {
        rank: 0,
        size: hosts.len(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        cores: cores.to_vec(),
        threads_multiple: true,
    };
    let names = |(devices, placement): Placed| {
        let d: Vec<String> = devices.iter().map(ToString::to_string).collect();
        (d, placement)
    };
    // Alone: every core, no placement (as before MPI).
    assert_eq!(
        names(one_cpu_per_rank(&job(&["a"], &[6]))),
        (vec!["cpu:threads=6".to_string()], None)
    );
    // Three ranks on a 16-core host and one on an 8-core host.
    let (devices, placement) = names(one_cpu_per_rank(&job(
        &["a", "b", "a", "a"],
        &[16, 8, 16, 16],
    )));
    assert_eq!(
        devices,
        [
            "cpu:threads=6",
            "cpu:threads=8",
            "cpu:threads=5",
            "cpu:threads=5"
        ]
    );
    assert_eq!(placement, Some(vec![0, 1, 2, 3]));
    // More ranks than cores: one thread each, none left without.
    let (devices, _) = names(one_cpu_per_rank(&job(&["a"; 4], &[2; 4])));
    assert_eq!(devices, ["cpu:threads=1"; 4]);
}

#[test]
fn cpu_devices_without_threads_share_what_the_others_leave() {
    let threads = |specs: &[&str], cores: usize| -> Vec<String> {
        let specs: Vec<DeviceSpec> = specs
            .iter()
            .map(|s| DeviceSpec::parse(s).unwrap())
            .collect();
        share_cores(&specs, cores)
            .iter()
            .map(|d| d.to_string())
            .collect()
    };
    assert_eq!(threads(&["cpu"], 16), ["cpu:threads=16"]);
    assert_eq!(
        threads(&["cpu", "cpu"], 16),
        ["cpu:threads=8", "cpu:threads=8"]
    );
    assert_eq!(
        threads(&["cpu", "cpu", "cpu"], 16),
        ["cpu:threads=6", "cpu:threads=5", "cpu:threads=5"]
    );
    assert_eq!(
        threads(&["cpu:threads=4", "cpu", "opencl"], 16),
        [
            "cpu:threads=4",
            "cpu:threads=11",
            "opencl:platform=0,device=0"
        ]
    );
    // Nothing left: one thread each rather than none.
    assert_eq!(
        threads(&["cpu:threads=2", "cpu", "cpu"], 2),
        ["cpu:threads=2", "cpu:threads=1", "cpu:threads=1"]
    );
    assert_eq!(threads(&["cpu:threads=3"], 2), ["cpu:threads=3"]);
    // Whatever the split, the threads never exceed the cores while the
    // explicit ones fit.
    for cores in 1..=33 {
        for n in 1..=cores {
            let specs = vec![DeviceSpec::cpu_share(); n];
            let total: usize = share_cores(&specs, cores)
                .iter()
                .map(|d| match d.kind {
                    DeviceKind::Cpu { threads } => threads.unwrap(),
                    _ => unreachable!("only cpu devices here"),
                })
                .sum();
            assert_eq!(total, cores, "{n} devices on {cores} cores");
        }
    }
}

/// A `cpu` with no threads writes its options after a colon, so the
/// text parses back to the same device.
#[test]
fn a_spec_without_threads_writes_what_parses_back() {
    for text in ["cpu:weight=2", "cpu:weight=2,slowdown=3@0,fail@5", "cpu"] {
        let spec = DeviceSpec::parse(text).unwrap();
        assert_eq!(spec.to_string(), text);
        assert_eq!(DeviceSpec::parse(&spec.to_string()).unwrap(), spec);
    }
}

/// Only a weighted partition uses weights; the others name each device
/// whose weight they ignore.
#[test]
fn weights_outside_a_weighted_partition_are_named() {
    let devices: Vec<DeviceSpec> = ["cpu:threads=1", "cpu:threads=1,weight=2", "cpu:weight=0"]
        .iter()
        .map(|d| DeviceSpec::parse(d).unwrap())
        .collect();
    assert!(ignored_weights(&devices, Partition::Weighted(0)).is_empty());
    let ignored = ignored_weights(&devices, Partition::Multi);
    assert_eq!(ignored.iter().map(|i| i.device).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        ignored[0].to_string(),
        "--partition m ignores device 1's weight=2 (cpu:threads=1,weight=2): only w<d> partitions split rows by weight (e.g. --partition w0)"
    );
    assert_eq!(
        ignored_weights(&devices, Partition::Single(1))[1]
            .partition
            .to_string(),
        "s1"
    );
}

/// An emulated slowdown or failure at or past the run's last iteration
/// is named, one before it is not, a slowdown by 1 (none) never is,
/// and a run of no iterations names none.
#[test]
fn unreached_options_are_those_at_or_past_the_last_iteration() {
    let devices: Vec<DeviceSpec> = [
        "cpu:slowdown=2@10,fail@9",
        "cpu:fail@10",
        "cpu:slowdown=1@50",
        "cpu:slowdown=3@11",
    ]
    .iter()
    .map(|t| DeviceSpec::parse(t).unwrap())
    .collect();
    let named: Vec<(usize, String, u64)> = unreached(&devices, 10)
        .into_iter()
        .map(|u| (u.device, u.option, u.at))
        .collect();
    assert_eq!(
        named,
        [
            (0, "slowdown=2@10".to_string(), 10),
            (1, "fail@10".to_string(), 10),
            (3, "slowdown=3@11".to_string(), 11),
        ]
    );
    assert!(unreached(&devices, 0).is_empty());
    assert!(unreached(&devices, 12).is_empty());
    assert_eq!(
        unreached(&devices[1..2], 10)[0].to_string(),
        "device 0's fail@10 is at iteration 10, beyond --iters 10: the device never fails (give an iteration below 10)"
    );
}

#[test]
fn parses_specs() {
    assert_eq!(
        DeviceSpec::parse("cpu:threads=2").unwrap(),
        DeviceSpec::cpu(2)
    );
    let s = DeviceSpec::parse("cpu:threads=1,weight=3,slowdown=2.5@100").unwrap();
    assert_eq!(s.weight, 3.0);
    assert_eq!(
        s.slowdown,
        Some(SlowdownSpec {
            factor: 2.5,
            from_iter: 100
        })
    );
    assert_eq!(s.to_string(), "cpu:threads=1,weight=3,slowdown=2.5@100");
    // A device that starts with no rows (ALB may give it some).
    let z = DeviceSpec::parse("cpu:threads=1,weight=0").unwrap();
    assert_eq!(z.weight, 0.0);
    assert_eq!(z.to_string(), "cpu:threads=1,weight=0");
    let f = DeviceSpec::parse("cpu:threads=1,fail@40").unwrap();
    assert_eq!(f.fail, Some(40));
    assert_eq!(f.to_string(), "cpu:threads=1,fail@40");
    assert_eq!(DeviceSpec::parse("opencl:fail=3").unwrap().fail, Some(3));
    assert_eq!(
        DeviceSpec::parse("opencl:platform=1,device=2")
            .unwrap()
            .kind,
        DeviceKind::Gpu(GpuDevice {
            backend: "opencl",
            platform: Some(1),
            device: 2
        })
    );
    assert_eq!(
        DeviceSpec::parse("cuda").unwrap().kind,
        DeviceKind::Gpu(GpuDevice {
            backend: "cuda",
            platform: None,
            device: 0
        })
    );
    for (text, layout) in [
        (
            "opencl:platform=0,device=0,layout=planes",
            CellLayout::Planes,
        ),
        ("cuda:device=1,layout=cells", CellLayout::Cells),
    ] {
        let d = DeviceSpec::parse(text).unwrap();
        assert_eq!(d.layout, Some(layout));
        assert_eq!(d.to_string(), text, "written back as read");
    }
    assert_eq!(DeviceSpec::parse("opencl").unwrap().layout, None);
}

/// The program's tuning reaches the build, not the device string (the
/// report's device names).
#[test]
fn tuning_is_not_written_in_the_device_string() {
    let d = DeviceSpec::parse("cuda:device=1")
        .unwrap()
        .tuned(GpuOptions {
            layout: Some(CellLayout::Cells),
            log_fused: true,
            ..GpuOptions::default()
        });
    assert_eq!(d.to_string(), "cuda:device=1");
    assert_eq!(d.layout, None);
    assert!(d.tuning.log_fused);
}

#[test]
fn rejects_bad_specs_with_reasons() {
    for (spec, want) in [
        ("gpu", "unknown device kind 'gpu'"),
        (
            "opencl,weight=0",
            "unknown device kind 'opencl,weight=0' (use cpu, opencl or cuda; options follow a colon: opencl:weight=0)",
        ),
        ("cpu:threads=0", "at least one thread"),
        ("cpu:threads=1025", "at most 1024 threads"),
        ("cpu:threads=-1", "whole number"),
        ("cpu:threads=x", "whole number"),
        ("cpu:weight=inf", "weight=inf: expected a number >= 0"),
        ("cpu:weight=-2", "weight=-2"),
        ("cpu:slowdown=-2", "factor must be a number from 1 to 1000"),
        ("cpu:threads=1,threads=2", "option 'threads' is given twice"),
        ("cpu:fail@1,fail@2", "option 'fail' is given twice"),
        ("cpu:slowdown=0.5", "factor must be a number from 1 to 1000"),
        ("cpu:slowdown=1e300", "slowdown=1e300: the factor must be a number from 1"),
        ("cpu:slowdown=1001", "factor must be a number from 1 to 1000"),
        ("cpu:slowdown=2@x", "after '@'"),
        ("cpu:fail@x", "fail@x: expected the iteration"),
        ("cpu:fail@-1", "fail@-1"),
        ("cpu:speed=2", "unknown option 'speed'"),
        ("cpu:threads", "not key=value"),
        ("cpu:device=1", "not platform="),
        ("cuda:threads=2", "device= only"),
        ("opencl:layout=soa", "layout=soa: expected planes"),
        ("cpu:layout=planes", "cpu devices keep cells whole"),
    ] {
        let e = DeviceSpec::parse(spec).unwrap_err().to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
}

#[test]
fn device_files() {
    let d = parse_device_file(
        "[[device]]\nkind = \"cpu\"\nthreads = 1\n[[device]]\nkind = \"cpu\"\nthreads = 1\nweight = 2\nslowdown = \"3@300\"\n",
        "d.toml",
    )
    .unwrap();
    let (d, owners) = d.place(&["h".into()]).unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(owners, None);
    assert_eq!(
        d[1].slowdown,
        Some(SlowdownSpec {
            factor: 3.0,
            from_iter: 300
        })
    );
    let gpu = parse_device_file(
        "[[device]]\nkind = \"cuda\"\nlayout = \"cells\"\n",
        "d.toml",
    )
    .unwrap()
    .place(&["h".into()])
    .unwrap()
    .0;
    assert_eq!(gpu[0].to_string(), "cuda:device=0,layout=cells");
    for (text, want) in [
        (
            "[[device]]\nkind = \"cpu\"\nthreads = 0\n",
            "at least one thread",
        ),
        ("[[device]]\nkind = \"fpga\"\n", "unknown device kind"),
        ("[[device]]\nkind = \"cpu\"\ncolour = 1\n", "unknown field"),
        (
            "[[device]]\nkind = \"cpu\"\nweight = -1\n",
            "expected a number >= 0",
        ),
        (
            "[[device]]\nkind = \"cpu\"\nslowdown = 0.5\n",
            "factor must be a number from 1 to 1000",
        ),
        (
            "[[device]]\nkind = \"cpu\"\nslowdown = \"2@x\"\n",
            "after '@'",
        ),
        ("[[device]]\nkind = \"cpu\"\nslowdown = true\n", "d.toml"),
        (
            "[[device]]\nkind = \"opencl\"\nlayout = \"aos\"\n",
            "layout=aos: expected planes",
        ),
        ("device = []\n", "no [[device]]"),
        ("not toml at all", "d.toml"),
        // TOML mistakes say where, on one line.
        (
            "[[device]]\nkind = \"cpu\"\n[[device]\n",
            "line 3, column 10: unclosed array table, expected `]`",
        ),
    ] {
        let e = parse_device_file(text, "d.toml").unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("d.toml"), "{text}: {e}");
    }
}

#[test]
fn device_files_place_devices_by_host_and_rank() {
    let f = parse_device_file(
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\nthreads = 1\n\
         [[device]]\nhost = \"gpu01\"\nkind = \"opencl\"\n\
         [[device]]\nrank = 0\nkind = \"cpu\"\nthreads = 2\nweight = 3\n",
        "d.toml",
    )
    .unwrap();
    let hosts: Vec<String> = ["n1", "gpu01", "gpu01"].map(String::from).to_vec();
    let (specs, owners) = f.place(&hosts).unwrap();
    let names: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names,
        [
            "cpu:threads=1",
            "cpu:threads=2,weight=3",
            "cpu:threads=1",
            "opencl:platform=0,device=0",
            "cpu:threads=1",
            "opencl:platform=0,device=0"
        ]
    );
    assert_eq!(owners, Some(vec![0, 0, 1, 1, 2, 2]));
    // A rank no table reaches is named, with its host.
    let only_gpu =
        parse_device_file("[[device]]\nhost = \"gpu01\"\nkind = \"cpu\"\n", "d.toml").unwrap();
    let e = only_gpu.place(&hosts).unwrap_err().to_string();
    assert!(e.contains("rank 0 (host n1) has no device"), "{e}");
    // Tables must all place, or none.
    let mixed = parse_device_file(
        "[[device]]\nrank = 0\nkind = \"cpu\"\n[[device]]\nkind = \"cpu\"\n",
        "d.toml",
    )
    .unwrap();
    let e = mixed.place(&hosts).unwrap_err().to_string();
    assert!(
        e.contains("some [[device]] tables name a host or rank"),
        "{e}"
    );
    let far = parse_device_file(
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\n[[device]]\nrank = 5\nkind = \"cpu\"\n",
        "d.toml",
    )
    .unwrap();
    let e = far.place(&hosts).unwrap_err().to_string();
    assert!(e.contains("rank 5, but the job has 3"), "{e}");
}
