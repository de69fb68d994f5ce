//! A run's settings that are not its stencil, size or init: what a driver
//! (the command line, an app) sets the same way for any cell type. The
//! builder holds one [`RunOptions`] and the validated plan keeps it, so
//! each setting and its default is written once.

use crate::alb::Alb;
use crate::checkpoint::{Checkpointing, RunIdentity};
use crate::devices::DeviceSpec;
use crate::output::Snapshots;
use hitmap::Partition;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long, by default, a virtual process under MPI waits for a peer that
/// sends nothing before it ends the job: well past any iteration, start-up
/// or checkpoint write a peer may be busy with.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(300);

/// Told the number of iterations every local virtual process has finished,
/// from the thread that started the run, every few milliseconds while it
/// changes (a progress bar, a watchdog).
pub type Observer = Arc<dyn Fn(u64) + Send + Sync>;

/// Everything about a run that is not its stencil, size or init.
#[derive(Clone)]
pub struct RunOptions {
    /// Iterations.
    pub iters: u64,
    /// The devices, one virtual process each.
    pub devices: Vec<DeviceSpec>,
    /// How the interior is cut.
    pub partition: Partition,
    /// Load balancing, if any.
    pub alb: Option<Alb>,
    /// Under MPI, the rank of each device.
    pub placement: Option<Vec<usize>>,
    /// Told of progress.
    pub observer: Option<Observer>,
    /// Pin each device's threads to cores of its own (see
    /// [`Skeleton::pin`](crate::Skeleton::pin)).
    pub pin: bool,
    /// Write checkpoints (see [`Skeleton::checkpoint`](crate::Skeleton::checkpoint)).
    pub checkpoint: Option<Checkpointing>,
    /// Resume from the newest valid checkpoint in this directory (see
    /// [`Skeleton::restart`](crate::Skeleton::restart)).
    pub restart: Option<PathBuf>,
    /// What decides the result beyond the stencil's name, kernel kind,
    /// cell type and size, recorded in checkpoints and checked by a
    /// restart (see [`Skeleton::identity`](crate::Skeleton::identity)).
    pub identity: RunIdentity,
    /// Snapshot files; applied by
    /// [`Skeleton::snapshot_files`](crate::Skeleton::snapshot_files), which
    /// needs a cell type the output formats can write.
    pub snapshots: Option<Snapshots>,
    /// What to do when a device fails (see
    /// [`Skeleton::on_failure`](crate::Skeleton::on_failure)).
    pub on_failure: OnFailure,
    /// Iterations between halo exchanges (see
    /// [`Skeleton::halo_depth`](crate::Skeleton::halo_depth)).
    pub halo_depth: HaloDepth,
    /// Measure CPU devices' kernel thread CPU time (see
    /// [`Skeleton::cpu_time`](crate::Skeleton::cpu_time)).
    pub cpu_time: bool,
    /// The most iterations recorded one by one (see
    /// [`Skeleton::iteration_records`](crate::Skeleton::iteration_records));
    /// `None`: as many as the default budget gives each device.
    pub iteration_records: Option<u64>,
    /// Send every halo through the host, even between devices that share
    /// memory (see [`Skeleton::host_halos`](crate::Skeleton::host_halos)).
    pub host_halos: bool,
    /// Under MPI, how long a virtual process waits for a peer that sends
    /// nothing before the job ends with an error naming it; `None`: for
    /// ever (see [`Skeleton::peer_timeout`](crate::Skeleton::peer_timeout)).
    pub peer_timeout: Option<Duration>,
}

impl Default for RunOptions {
    /// The skeleton's defaults: 1 iteration, one CPU device on every core,
    /// partition `m`, no load balancing.
    fn default() -> RunOptions {
        RunOptions {
            iters: 1,
            devices: vec![DeviceSpec::cpu(crate::job::all_cores())],
            partition: Partition::Multi,
            alb: None,
            placement: None,
            observer: None,
            pin: false,
            checkpoint: None,
            restart: None,
            identity: RunIdentity::default(),
            snapshots: None,
            on_failure: OnFailure::Stop,
            halo_depth: HaloDepth::Cache,
            cpu_time: false,
            iteration_records: None,
            host_halos: false,
            peer_timeout: Some(PEER_TIMEOUT),
        }
    }
}

/// How deep the ghost cells go, in iterations between exchanges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HaloDepth {
    /// Exchange every `n` iterations (1: every iteration).
    Depth(usize),
    /// Measured: depths 1, 2, 4 and 8 take turns over the first 42
    /// iterations, then the run goes on at the depth a cost model of those
    /// times chooses (`heuristics::depth`). Runs under 126 iterations stay
    /// at 1.
    Auto,
    /// The default: decided before the first iteration, without trials.
    /// [`CACHE_DEPTH`](crate::depth_choice::CACHE_DEPTH) for a 1-d or 2-d
    /// grid in one process whose devices are all CPU devices, each tile
    /// more than [`BEYOND_L2`](crate::depth_choice::BEYOND_L2) times its
    /// cores' second-level cache (fused steps then save memory traffic), else 1;
    /// the report's `halo_depth_reason` says which rule decided.
    #[default]
    Cache,
}

/// A halo depth that is neither `auto`, `cache` nor a whole number from 1
/// to 64.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not auto, cache or a whole number from 1 to 64")]
pub struct BadHaloDepth(pub String);

impl std::str::FromStr for HaloDepth {
    type Err = BadHaloDepth;
    fn from_str(s: &str) -> Result<HaloDepth, BadHaloDepth> {
        match s {
            "auto" => Ok(HaloDepth::Auto),
            "cache" => Ok(HaloDepth::Cache),
            _ => match s.parse::<usize>() {
                Ok(n) if (1..=64).contains(&n) => Ok(HaloDepth::Depth(n)),
                _ => Err(BadHaloDepth(s.to_string())),
            },
        }
    }
}

/// What a run does when a device fails mid-run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// End the run with the error.
    #[default]
    Stop,
    /// In one process: drop the device and go on over the others from the
    /// last checkpoint (or the start), bit-identical to a run without the
    /// failure.
    Recover,
}

/// A failure policy that is neither `stop` nor `recover`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not stop or recover")]
pub struct BadOnFailure(pub String);

impl std::str::FromStr for OnFailure {
    type Err = BadOnFailure;
    fn from_str(s: &str) -> Result<OnFailure, BadOnFailure> {
        match s {
            "stop" => Ok(OnFailure::Stop),
            "recover" => Ok(OnFailure::Recover),
            _ => Err(BadOnFailure(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_say_what_is_accepted() {
        let e = "0".parse::<HaloDepth>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "'0' is not auto, cache or a whole number from 1 to 64"
        );
        assert_eq!("auto".parse::<HaloDepth>(), Ok(HaloDepth::Auto));
        assert_eq!("cache".parse::<HaloDepth>(), Ok(HaloDepth::Cache));
        assert_eq!("64".parse::<HaloDepth>(), Ok(HaloDepth::Depth(64)));
        let e = "retry".parse::<OnFailure>().unwrap_err();
        assert_eq!(e.to_string(), "'retry' is not stop or recover");
        assert_eq!("recover".parse::<OnFailure>(), Ok(OnFailure::Recover));
    }
}
