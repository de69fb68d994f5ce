//! Slow spells: a device slowed from an iteration on is named, from about
//! there, with the host it ran on (devices alike, and noise, are the
//! unit tests' synthetic runs: real ones depend on the machine's load).

use epsilod::{DeviceSpec, Skeleton, Stencil};
use kernels::{KernelChoice, Library};

fn run(second: &str) -> epsilod::Report {
    Skeleton::new(
        &[1026, 1026],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(200)
    .devices(vec![DeviceSpec::cpu(1), DeviceSpec::parse(second).unwrap()])
    .run()
    .unwrap()
    .report
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn a_device_slowed_from_an_iteration_is_named_from_there() {
    // Eight times slower: other tests' load on the cores cannot hide it.
    let r = run("cpu:threads=1,slowdown=8@60");
    // The spell to the end is the slowdown's; a busy core may make a
    // device slow for a while before it, a spell of its own.
    let spells = &r.summary.slow_spells;
    let s = spells
        .iter()
        .find(|s| s.to_iter == 199)
        .unwrap_or_else(|| panic!("no spell to the end: {spells:?}"));
    assert_eq!(
        (s.device, s.name.as_str()),
        (1, "cpu:threads=1,slowdown=8@60")
    );
    assert!((56..=66).contains(&s.from_iter), "{s:?}");
    assert_eq!(s.to_iter, 199);
    assert!(s.factor > 4.0, "{s:?}");
    assert_eq!(r.config.hosts.len(), 2);
    assert_eq!(s.host, r.config.hosts[1]);
    if cfg!(target_os = "linux") {
        assert_eq!(r.config.hosts, [this_host(), this_host()]);
    }
}
