//! The job a process belongs to: alone, or one of several MPI ranks.
//!
//! A program joins the job once, at the start of `main`, and holds the
//! [`Cluster`] until it ends (dropping it shuts MPI down). Every
//! [`Skeleton::run`](crate::Skeleton::run) in between then spreads its virtual
//! processes over the ranks. Without `mpirun` (or without the `mpi`
//! feature) the job is this one process.
//!
//! ```no_run
//! fn main() -> Result<(), epsilod::ConfigError> {
//!     let cluster = epsilod::Cluster::join()?;
//!     // ... Skeleton::new(...).run()? on every rank ...
//!     if cluster.is_root() {
//!         // only rank 0 holds the gathered grid
//!     }
//!     Ok(())
//! }
//! ```

use crate::error::ConfigError;
use std::sync::Mutex;

/// What a run needs to know about the job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobInfo {
    pub rank: usize,
    pub size: usize,
    /// Host name of every rank.
    pub hosts: Vec<String>,
    /// Whether several threads of a rank may call MPI at once (so that a
    /// rank can host several virtual processes).
    pub threads_multiple: bool,
}

static ACTIVE: Mutex<Option<JobInfo>> = Mutex::new(None);

/// Membership of the job; MPI stays up while it lives. Print what must be
/// printed before dropping it: dropping waits for every rank.
pub struct Cluster {
    info: JobInfo,
    // Dropped after `info` is unregistered: finalises MPI.
    #[cfg(feature = "mpi")]
    _universe: Option<mpi::environment::Universe>,
}

/// `(rank, size)` when a launcher (OpenMPI's mpirun, a PMI-2 launcher such as
/// `srun --mpi=pmi2` or MPICH's mpiexec) started
/// this process as one of several, read from its environment, so it is
/// known before (and without) MPI.
pub fn launched() -> Option<(usize, usize)> {
    launched_from(|k| std::env::var(k).ok())
}

fn launched_from(var: impl Fn(&str) -> Option<String>) -> Option<(usize, usize)> {
    for (rank, size) in [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
    ] {
        if let Some(n) = var(size).and_then(|s| s.parse::<usize>().ok()) {
            let r = var(rank).and_then(|s| s.parse().ok()).unwrap_or(0);
            return Some((r, n));
        }
    }
    None
}

/// Whether this process should print what every rank would print alike:
/// rank 0 only, even before MPI is up.
pub fn speaks() -> bool {
    launched().is_none_or(|(r, _)| r == 0)
}

/// Prints `error: <message>` on stderr in one write: under mpirun, stderr
/// is a pipe shared with mpirun's own messages, and a line written in
/// pieces (as `eprintln!` writes a formatted error) can be split by them.
pub fn print_error(message: &str) {
    use std::io::Write;
    let line = format!("error: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

impl Cluster {
    /// Joins the job: starts MPI when a launcher started several ranks, and
    /// learns every rank's host.
    pub fn join() -> Result<Cluster, ConfigError> {
        let launch = launched().filter(|&(_, size)| size > 1);
        #[cfg(not(feature = "mpi"))]
        if let Some((_, size)) = launch {
            return Err(ConfigError::NoMpi { size });
        }
        #[cfg(feature = "mpi")]
        if launch.is_some() {
            return Cluster::join_mpi();
        }
        let info = JobInfo {
            rank: 0,
            size: 1,
            hosts: vec![local_host()],
            threads_multiple: true,
        };
        register(&info)?;
        Ok(Cluster {
            info,
            #[cfg(feature = "mpi")]
            _universe: None,
        })
    }

    #[cfg(feature = "mpi")]
    fn join_mpi() -> Result<Cluster, ConfigError> {
        use mpi::traits::*;
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| {
                ConfigError::Mpi("MPI was already initialised: join the cluster once".into())
            })?;
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| local_host());
        let hosts = crate::distributed::all_gather_bytes(host.as_bytes())
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        let info = JobInfo {
            rank: world.rank() as usize,
            size: world.size() as usize,
            hosts,
            threads_multiple: threading == mpi::Threading::Multiple,
        };
        register(&info)?;
        Ok(Cluster {
            info,
            _universe: Some(universe),
        })
    }

    pub fn rank(&self) -> usize {
        self.info.rank
    }

    pub fn size(&self) -> usize {
        self.info.size
    }

    /// Rank 0: the one that gathers results and writes files.
    pub fn is_root(&self) -> bool {
        self.info.rank == 0
    }
}

/// Every rank offers its own view of a run (or why it could not build
/// one); all get the same verdict: the first rank's error, or a mismatch
/// error naming the first rank that differs. A single process agrees with
/// itself.
pub(crate) fn agree(info: &JobInfo, mine: Result<String, String>) -> Result<(), ConfigError> {
    if info.size == 1 {
        return mine.map(|_| ()).map_err(ConfigError::Agreed);
    }
    #[cfg(feature = "mpi")]
    {
        let text = match &mine {
            Ok(s) => format!("ok:{s}"),
            Err(e) => format!("err:{e}"),
        };
        let all = crate::distributed::all_gather_bytes(text.as_bytes());
        let all: Vec<String> = all
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        verdict(&all)
    }
    #[cfg(not(feature = "mpi"))]
    unreachable!("a job of several ranks needs the mpi feature")
}

/// The common verdict on every rank's `ok:`/`err:` view.
#[cfg(any(feature = "mpi", test))]
fn verdict(all: &[String]) -> Result<(), ConfigError> {
    for (r, v) in all.iter().enumerate() {
        if let Some(e) = v.strip_prefix("err:") {
            return Err(if r == 0 {
                ConfigError::Agreed(e.to_string())
            } else {
                ConfigError::OnRank {
                    rank: r,
                    why: e.to_string(),
                }
            });
        }
    }
    if let Some(r) = all.iter().position(|v| *v != all[0]) {
        return Err(ConfigError::Mismatch {
            rank: r,
            mine: all[r].trim_start_matches("ok:").to_string(),
            root: all[0].trim_start_matches("ok:").to_string(),
        });
    }
    Ok(())
}

fn register(info: &JobInfo) -> Result<(), ConfigError> {
    let mut a = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    if a.is_some() {
        return Err(ConfigError::Mpi(
            "the cluster was joined twice: call Cluster::join once".into(),
        ));
    }
    *a = Some(info.clone());
    Ok(())
}

impl Drop for Cluster {
    fn drop(&mut self) {
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = None;
        #[cfg(feature = "mpi")]
        if let Some(u) = &self._universe {
            use mpi::traits::*;
            if std::thread::panicking() {
                // The others may be waiting for this rank: end them all.
                u.world().abort(1);
            }
            // No rank leaves before all are done: mpirun kills the job as
            // soon as one rank exits non-zero, which could cut off rank 0
            // before it prints the error every rank met (seen in tests).
            u.world().barrier();
        }
    }
}

/// The job joined by this process, if any.
pub(crate) fn active() -> Option<JobInfo> {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// This machine's name, without MPI.
fn local_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn launchers_are_read_from_the_environment() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            launched_from(move |k| m.get(k).cloned())
        };
        assert_eq!(env(&[]), None);
        assert_eq!(
            env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")]),
            Some((2, 4))
        );
        assert_eq!(env(&[("PMI_SIZE", "3"), ("PMI_RANK", "1")]), Some((1, 3)));
        assert_eq!(env(&[("PMI_SIZE", "x")]), None);
    }

    #[test]
    fn a_build_without_mpi_says_how_to_rebuild() {
        let e = ConfigError::NoMpi { size: 4 }.to_string();
        assert!(e.contains("4 ranks") && e.contains("--features mpi"), "{e}");
    }

    #[test]
    fn verdicts_name_the_rank() {
        let v = |xs: &[&str]| {
            verdict(&xs.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        assert!(v(&["ok:a", "ok:a", "ok:a"]).is_ok());
        let e = v(&["ok:a", "ok:a", "ok:b"]).unwrap_err();
        assert!(
            e.contains("rank 2") && e.contains("b") && e.contains("a"),
            "{e}"
        );
        let e = v(&["ok:a", "err:no file", "ok:a"]).unwrap_err();
        assert!(e.starts_with("rank 1: no file"), "{e}");
        assert_eq!(
            v(&["err:bad size", "err:bad size"]).unwrap_err(),
            "bad size"
        );
    }
}
