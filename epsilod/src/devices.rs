//! Device specifications: `--devices cpu:threads=2,weight=3,slowdown=2@100`
//! and the TOML device file. Both fill one [`DeviceOptions`], checked in one
//! place.

use crate::error::{DeviceFileError, DeviceSpecError, SetupError};
use crate::job::{all_cores, rank_share, JobInfo};
use controllers::registry::{self, BackendOptions};
use controllers::{Controller, DeviceError, FailAt, Slowdown};
use hitmap::Partition;
use kernels::{Cell, CellLayout, TomlError};
use serde::Deserialize;
use std::fmt;
use std::path::Path;

pub use controllers::registry::{DeviceKind, GpuDevice, GpuOptions, MAX_THREADS};

/// An emulated slow device: every kernel takes `factor` times as long from
/// iteration `from_iter` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowdownSpec {
    /// At least 1.
    pub factor: f64,
    /// The first slow iteration.
    pub from_iter: u64,
}

/// One device (one virtual process) as the user asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    /// Which device.
    pub kind: DeviceKind,
    /// Static share of the rows under partition `w<d>`.
    pub weight: f64,
    /// Emulated slowness.
    pub slowdown: Option<SlowdownSpec>,
    /// Emulated failure: the device's first launch of this iteration fails.
    pub fail: Option<u64>,
    /// How an OpenCL or CUDA device lays out cells with components for
    /// kernels that can read them in planes (`layout=planes|cells`);
    /// `None`: `tuning`'s layout, else the device's own choice (planes on
    /// GPUs).
    pub layout: Option<CellLayout>,
    /// How a GPU device runs where its device string does not say: set by
    /// the program (the command line from its environment), never written
    /// in the device string.
    pub tuning: GpuOptions,
}

/// The options a device may be given, however they were written: the
/// `key=value` list of `--devices` or the fields of a device file's table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceOptions {
    /// CPU threads.
    pub threads: Option<usize>,
    /// OpenCL platform.
    pub platform: Option<usize>,
    /// OpenCL or CUDA device number.
    pub device: Option<usize>,
    /// Static share (> 0).
    pub weight: Option<f64>,
    /// Emulated slowness.
    pub slowdown: Option<SlowdownSpec>,
    /// Emulated failure at this iteration.
    pub fail: Option<u64>,
    /// Cells with components in planes or whole, on OpenCL and CUDA.
    pub layout: Option<CellLayout>,
}

/// The devices of a run given none: one CPU device per rank of `job`, each
/// with its rank's share of its host's cores (ranks on one host split them,
/// as [`share_cores`] would split them for a `cpu` device there), placed on
/// its rank. Alone, one device on every core. The threads are written out
/// rather than left to each rank, so that every rank agrees on the same run
/// and the report says what each rank got.
pub fn one_cpu_per_rank(job: &JobInfo) -> Placed {
    let devices = (0..job.size)
        .map(|r| {
            let cores = job.cores.get(r).copied().unwrap_or(1);
            DeviceSpec::cpu(rank_share(job, r, cores))
        })
        .collect();
    let placement = (job.size > 1).then(|| (0..job.size).collect());
    (devices, placement)
}

/// `devices` (those of one process) with every CPU device that was given no
/// threads given its share of `cores`: the cores left once the others take
/// theirs (a CPU device its threads, any other device one core for the
/// thread that drives it: NVIDIA's OpenCL polls while it waits for a
/// kernel), split evenly, the first ones getting one more where they do
/// not divide, and at least one thread each. So one `cpu` device alone
/// takes every core, and the threads of a process never exceed `cores`
/// unless explicit `threads=` already ask for more (on a 16-core node, two
/// 8-thread devices each taking all 16 cores ran 2-3x slower than one).
pub fn share_cores(devices: &[DeviceSpec], cores: usize) -> Vec<DeviceSpec> {
    let auto = |d: &DeviceSpec| matches!(d.kind, DeviceKind::Cpu { threads: None });
    let taken: usize = devices
        .iter()
        .map(|d| match d.kind {
            DeviceKind::Cpu { threads } => threads.unwrap_or(0),
            DeviceKind::Gpu(_) => 1,
        })
        .sum();
    let sharing = devices.iter().filter(|d| auto(d)).count();
    let left = cores.saturating_sub(taken);
    let mut nth = 0;
    devices
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if auto(&d) {
                let share = left / sharing + usize::from(nth < left % sharing);
                d.kind = DeviceKind::Cpu {
                    threads: Some(share.max(1)),
                };
                nth += 1;
            }
            d
        })
        .collect()
}

impl DeviceSpec {
    /// A CPU device of `threads` threads.
    pub fn cpu(threads: usize) -> DeviceSpec {
        DeviceSpec::of(DeviceKind::Cpu {
            threads: Some(threads),
        })
    }

    /// A CPU device taking its share of the cores the run's other devices
    /// leave (`cpu` with no `threads=`; see [`share_cores`]).
    pub fn cpu_share() -> DeviceSpec {
        DeviceSpec::of(DeviceKind::Cpu { threads: None })
    }

    /// Device `kind` with every other option at its default.
    fn of(kind: DeviceKind) -> DeviceSpec {
        DeviceSpec {
            kind,
            weight: 1.0,
            slowdown: None,
            fail: None,
            layout: None,
            tuning: GpuOptions::default(),
        }
    }

    /// This device, run as `tuning` says where it is a GPU device (see
    /// [`DeviceSpec::tuning`]).
    pub fn tuned(self, tuning: GpuOptions) -> DeviceSpec {
        DeviceSpec { tuning, ..self }
    }

    /// Parses `kind[:key=value,...]`.
    pub fn parse(text: &str) -> Result<DeviceSpec, SetupError> {
        Self::parse_options(text).map_err(|why| SetupError::Device {
            spec: text.to_string(),
            why,
        })
    }

    fn parse_options(text: &str) -> Result<DeviceSpec, DeviceSpecError> {
        let (kind, opts) = text.split_once(':').unwrap_or((text, ""));
        let mut o = DeviceOptions::default();
        let mut seen: Vec<String> = Vec::new();
        for opt in opts.split(',').filter(|o| !o.is_empty()) {
            // `fail@ITER`, as `slowdown=F@ITER` reads.
            let opt = match opt.strip_prefix("fail@") {
                Some(at) => format!("fail={at}"),
                None => opt.to_string(),
            };
            let (k, v) = opt
                .split_once('=')
                .ok_or_else(|| DeviceSpecError::NotKeyValue(opt.clone()))?;
            if seen.iter().any(|s| s == k) {
                return Err(DeviceSpecError::Twice(k.to_string()));
            }
            seen.push(k.to_string());
            let int = |v: &str| {
                v.parse::<usize>().map_err(|_| DeviceSpecError::NotWhole {
                    key: k.to_string(),
                    value: v.to_string(),
                })
            };
            match k {
                "threads" => o.threads = Some(int(v)?),
                "platform" => o.platform = Some(int(v)?),
                "device" => o.device = Some(int(v)?),
                "weight" => o.weight = Some(parse_weight(v)?),
                "slowdown" => o.slowdown = Some(parse_slowdown(v)?),
                "layout" => o.layout = Some(registry::parse_layout(v)?),
                "fail" => {
                    o.fail = Some(
                        v.parse::<u64>()
                            .map_err(|_| DeviceSpecError::FailAt(v.to_string()))?,
                    )
                }
                _ => return Err(DeviceSpecError::UnknownOption(k.to_string())),
            }
        }
        DeviceSpec::from_options(kind, &o)
    }

    /// A device of backend `kind` (`cpu`, `opencl`, `cuda`: see
    /// [`controllers::registry`]) with options `o`, checked: each backend
    /// takes only its own options.
    pub fn from_options(kind: &str, o: &DeviceOptions) -> Result<DeviceSpec, DeviceSpecError> {
        let kind = registry::device_kind(
            kind,
            &BackendOptions {
                threads: o.threads,
                platform: o.platform,
                device: o.device,
                layout: o.layout,
            },
        )?;
        if let Some(w) = o.weight {
            check_weight(w, &w.to_string())?;
        }
        Ok(DeviceSpec {
            weight: o.weight.unwrap_or(1.0),
            slowdown: o.slowdown,
            fail: o.fail,
            layout: o.layout,
            ..DeviceSpec::of(kind)
        })
    }

    /// The device's controller, slowed down if asked. A CPU device given no
    /// threads is built as if alone (every core): runs give it its share
    /// first, with [`share_cores`].
    pub fn build<T: Cell>(&self) -> Result<Box<dyn Controller<T>>, DeviceError> {
        self.build_pinned(&[])
    }

    /// [`build`](Self::build), a CPU device's pool pinned to `cores` (see
    /// [`controllers::CpuController::pinned`]; nothing pinned where empty).
    pub fn build_pinned<T: Cell>(
        &self,
        cores: &[usize],
    ) -> Result<Box<dyn Controller<T>>, DeviceError> {
        let base = match &self.kind {
            DeviceKind::Cpu { threads } => {
                registry::open_cpu(threads.unwrap_or_else(all_cores), cores)?
            }
            DeviceKind::Gpu(device) => registry::open_gpu(
                device,
                &GpuOptions {
                    layout: self.layout.or(self.tuning.layout),
                    ..self.tuning
                },
            )?,
        };
        let slowed: Box<dyn Controller<T>> = match self.slowdown {
            None => base,
            Some(s) => Box::new(Slowdown::new(base, s.factor, s.from_iter)?),
        };
        Ok(match self.fail {
            None => slowed,
            Some(at) => Box::new(FailAt::new(slowed, at)),
        })
    }
}

fn parse_weight(v: &str) -> Result<f64, DeviceSpecError> {
    check_weight(v.parse::<f64>().unwrap_or(f64::NAN), v)
}

fn check_weight(w: f64, text: &str) -> Result<f64, DeviceSpecError> {
    if w.is_finite() && w >= 0.0 {
        Ok(w)
    } else {
        Err(DeviceSpecError::Weight(text.to_string()))
    }
}

/// `text` as given, or its first characters where it is long (a 300-digit
/// number in an error line helps nobody).
pub(crate) fn short(text: &str) -> String {
    const MOST: usize = 24;
    match text.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// `F` or `F@ITER`.
fn parse_slowdown(v: &str) -> Result<SlowdownSpec, DeviceSpecError> {
    let (f, from) = v.split_once('@').unwrap_or((v, "0"));
    let max = controllers::slowdown::MAX_FACTOR;
    let factor = match f.parse::<f64>() {
        Ok(x) if (1.0..=max).contains(&x) => x,
        _ => return Err(DeviceSpecError::SlowdownFactor(short(v))),
    };
    let from_iter = from
        .parse::<u64>()
        .map_err(|_| DeviceSpecError::SlowdownFrom(v.to_string()))?;
    Ok(SlowdownSpec { factor, from_iter })
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            DeviceKind::Cpu { threads: None } => "cpu".to_string(),
            DeviceKind::Cpu {
                threads: Some(threads),
            } => format!("cpu:threads={threads}"),
            DeviceKind::Gpu(device) => device.to_string(),
        };
        // Options follow a colon, then commas: `cpu:weight=2` parses back,
        // `cpu,weight=2` would not.
        let mut sep = if kind.contains(':') { ',' } else { ':' };
        let mut options = Vec::new();
        if self.weight != 1.0 {
            options.push(format!("weight={}", self.weight));
        }
        if let Some(s) = self.slowdown {
            options.push(format!("slowdown={}@{}", s.factor, s.from_iter));
        }
        if let Some(at) = self.fail {
            options.push(format!("fail@{at}"));
        }
        match self.layout {
            Some(CellLayout::Planes) => options.push("layout=planes".into()),
            Some(CellLayout::Cells) => options.push("layout=cells".into()),
            None => {}
        }
        write!(f, "{kind}")?;
        for o in options {
            write!(f, "{sep}{o}")?;
            sep = ',';
        }
        Ok(())
    }
}

/// A device's `weight=` that its run's partition does not use: only a
/// weighted partition (`w<d>`) splits rows by weight, so under `m`, `m<n>`
/// or `s<d>` the run goes on as if it were not given.
#[derive(Clone, Debug, PartialEq)]
pub struct IgnoredWeight {
    /// The device's place in the run's device list, from 0.
    pub device: usize,
    /// The device as given.
    pub spec: DeviceSpec,
    /// The partition that ignores it.
    pub partition: Partition,
}

impl fmt::Display for IgnoredWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--partition {} ignores device {}'s weight={} ({}): only w<d> partitions split rows by weight (e.g. --partition w0)",
            self.partition, self.device, self.spec.weight, self.spec
        )
    }
}

/// The weights among `devices` that `partition` ignores (every weight but
/// the default 1, unless the partition is weighted), in device order.
pub fn ignored_weights(devices: &[DeviceSpec], partition: Partition) -> Vec<IgnoredWeight> {
    if matches!(partition, Partition::Weighted(_)) {
        return Vec::new();
    }
    devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.weight != 1.0)
        .map(|(device, d)| IgnoredWeight {
            device,
            spec: d.clone(),
            partition,
        })
        .collect()
}

/// A device's emulated slowdown or failure (`slowdown=F@ITER`, `fail@ITER`)
/// at an iteration its run never reaches: the run goes on as if it were
/// not given.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreached {
    /// The device's place in the run's device list, from 0.
    pub device: usize,
    /// The option, as the device's description writes it: `slowdown=3@500`
    /// or `fail@500`.
    pub option: String,
    /// Its iteration.
    pub at: u64,
    /// The run's iterations.
    pub iters: u64,
}

impl fmt::Display for Unreached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let never = if self.option.starts_with("fail") {
            "fails"
        } else {
            "slows down"
        };
        write!(
            f,
            "device {}'s {} is at iteration {}, beyond --iters {}: the device never {never} (give an iteration below {})",
            self.device, self.option, self.at, self.iters, self.iters
        )
    }
}

/// The emulated slowdowns and failures among `devices` that a run of
/// `iters` iterations never reaches (iterations count from 0: one at
/// `iters` or later), in device order. A run of 0 iterations only writes
/// its initial state: none is said.
pub fn unreached(devices: &[DeviceSpec], iters: u64) -> Vec<Unreached> {
    let mut out = Vec::new();
    if iters == 0 {
        return out;
    }
    for (device, d) in devices.iter().enumerate() {
        let slow = d.slowdown.filter(|s| s.factor > 1.0).map(|s| {
            (
                format!("slowdown={}@{}", s.factor, s.from_iter),
                s.from_iter,
            )
        });
        let fail = d.fail.map(|at| (format!("fail@{at}"), at));
        for (option, at) in slow.into_iter().chain(fail) {
            if at >= iters {
                out.push(Unreached {
                    device,
                    option,
                    at,
                    iters,
                });
            }
        }
    }
    out
}

/// One `[[device]]` table of a device file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDevice {
    kind: String,
    threads: Option<usize>,
    platform: Option<usize>,
    device: Option<usize>,
    weight: Option<f64>,
    /// `3` or `"3@300"`.
    slowdown: Option<FileSlowdown>,
    /// Emulated failure at this iteration.
    fail: Option<u64>,
    /// `"planes"` or `"cells"`.
    layout: Option<String>,
    /// Under MPI: every rank on this host (`"*"`: on any host) gets the device.
    host: Option<String>,
    /// Under MPI: this rank gets the device.
    rank: Option<usize>,
}

/// A slowdown as a device file may write it.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileSlowdown {
    Factor(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceFileToml {
    device: Vec<FileDevice>,
}

/// A device file: devices in order, each maybe tied to hosts or a rank.
///
/// ```toml
/// [[device]]
/// kind = "cpu"
/// threads = 1
///
/// [[device]]
/// kind = "cpu"
/// threads = 1
/// weight = 2
/// slowdown = "3@300"
/// ```
///
/// Under MPI, a file whose tables name no `host` or `rank` deals its devices
/// out like `--devices`: device `i` to rank `i mod ranks`. Otherwise every
/// table names a `host` (a host name, or `"*"` for any) or a `rank`, and
/// each rank gets, in file order, every table naming its rank or its host: a
/// `host` table gives a device to every rank on that host. Devices are then
/// numbered rank by rank. A single process is rank 0 on its own host.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceFile {
    /// Where it was read from (for messages).
    pub path: String,
    entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    spec: DeviceSpec,
    host: Option<String>,
    rank: Option<usize>,
}

/// The devices of a run and, when the file places them, their ranks.
pub type Placed = (Vec<DeviceSpec>, Option<Vec<usize>>);

impl DeviceFile {
    /// Every device with its rank, for ranks on `hosts` (one per rank).
    pub fn place(&self, hosts: &[String]) -> Result<Placed, SetupError> {
        let selected = self
            .entries
            .iter()
            .filter(|e| e.host.is_some() || e.rank.is_some())
            .count();
        if selected == 0 {
            return Ok((self.entries.iter().map(|e| e.spec.clone()).collect(), None));
        }
        if selected < self.entries.len() {
            return Err(SetupError::DeviceFile {
                path: self.path.clone(),
                why: DeviceFileError::MixedPlacement,
            });
        }
        let mut specs = Vec::new();
        let mut owners = Vec::new();
        for (r, host) in hosts.iter().enumerate() {
            let before = specs.len();
            for e in &self.entries {
                let by_rank = e.rank == Some(r);
                let by_host =
                    e.rank.is_none() && e.host.as_deref().is_some_and(|h| h == "*" || h == host);
                if by_rank || by_host {
                    specs.push(e.spec.clone());
                    owners.push(r);
                }
            }
            if specs.len() == before {
                return Err(SetupError::RankWithoutTable {
                    rank: r,
                    host: host.clone(),
                    path: self.path.clone(),
                });
            }
        }
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.rank.is_some_and(|r| r >= hosts.len()))
        {
            return Err(SetupError::DeviceFile {
                path: self.path.clone(),
                why: DeviceFileError::RankOutsideJob {
                    rank: e.rank.unwrap_or(0),
                    ranks: hosts.len(),
                },
            });
        }
        Ok((specs, Some(owners)))
    }
}

/// Reads a device file (see [`DeviceFile`]).
pub fn load_device_file(path: &Path) -> Result<DeviceFile, SetupError> {
    let name = path.display().to_string();
    let text = kernels::input_file::read_text(path).map_err(|e| SetupError::DeviceFile {
        path: name.clone(),
        why: DeviceFileError::Read(e),
    })?;
    parse_device_file(&text, &name)
}

/// Parses a device file's text (`name` is for messages).
pub fn parse_device_file(text: &str, name: &str) -> Result<DeviceFile, SetupError> {
    let err = |why: DeviceFileError| SetupError::DeviceFile {
        path: name.to_string(),
        why,
    };
    let bad = |why: DeviceSpecError| SetupError::DeviceTable {
        path: name.to_string(),
        why,
    };
    let file: DeviceFileToml =
        toml::from_str(text).map_err(|e| err(TomlError::new(text, e).into()))?;
    if file.device.is_empty() {
        return Err(err(DeviceFileError::NoTables));
    }
    let entries = file
        .device
        .iter()
        .map(|d| {
            let slowdown = match &d.slowdown {
                None => None,
                Some(FileSlowdown::Factor(x)) => Some(parse_slowdown(&x.to_string()).map_err(bad)?),
                Some(FileSlowdown::Text(t)) => Some(parse_slowdown(t).map_err(bad)?),
            };
            let options = DeviceOptions {
                threads: d.threads,
                platform: d.platform,
                device: d.device,
                weight: d.weight,
                slowdown,
                fail: d.fail,
                layout: d
                    .layout
                    .as_deref()
                    .map(registry::parse_layout)
                    .transpose()
                    .map_err(|e| bad(e.into()))?,
            };
            if d.host.as_deref() == Some("") {
                return Err(err(DeviceFileError::EmptyHost));
            }
            Ok(Entry {
                spec: DeviceSpec::from_options(&d.kind, &options).map_err(bad)?,
                host: d.host.clone(),
                rank: d.rank,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DeviceFile {
        path: name.to_string(),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
                Err(e @ DeviceError::NotBuilt { .. }) => assert_eq!(
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
}
