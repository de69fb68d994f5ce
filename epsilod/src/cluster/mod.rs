//! The job a process belongs to: alone, or one of several MPI ranks.
//!
//! A program joins the job once, at the start of `main`, and holds the
//! [`Cluster`] until it ends (dropping it shuts MPI down). Every
//! [`Skeleton::run`](crate::Skeleton::run) in between then spreads its virtual
//! processes over the ranks. Without `mpirun` (or without the `mpi`
//! feature) the job is this one process.
//!
//! ```no_run
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let launch = epsilod::cluster::Launch::from_vars(|k| std::env::var(k).ok());
//!     let cluster = epsilod::Cluster::join(launch)?;
//!     // ... Skeleton::new(...).run_in(&cluster)? on every rank ...
//!     if cluster.is_root() {
//!         // only rank 0 holds the gathered grid
//!     }
//!     Ok(())
//! }
//! ```

#[cfg(feature = "mpi")]
use crate::error::ControlError;
use crate::error::{ClusterError, RunError, SetupError};
use crate::job::JobInfo;
pub use crate::job::Readiness;
use std::sync::Mutex;

#[cfg(feature = "mpi")]
pub(crate) mod mpi;

/// The job joined by this process, for [`Skeleton::run`](crate::Skeleton::run),
/// which takes no cluster. `run_in` is told explicitly.
static ACTIVE: Mutex<Option<JobInfo>> = Mutex::new(None);

/// Membership of the job; MPI stays up while it lives. Print what must be
/// printed before dropping it: dropping waits for every rank.
pub struct Cluster {
    info: JobInfo,
    // Dropped after `info` is unregistered: finalises MPI.
    #[cfg(feature = "mpi")]
    _universe: Option<::mpi::environment::Universe>,
}

/// How this process was started: alone, or by a launcher (OpenMPI's
/// mpirun, a PMI-2 launcher such as `srun --mpi=pmi2` or MPICH's mpiexec,
/// Slurm's `srun --mpi=pmix`) as one rank of several. The program reads it from the launcher's
/// variables ([`Launch::from_vars`]) and hands it to [`Cluster::join`]:
/// the library itself never reads the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    rank: usize,
    size: usize,
}

impl Launch {
    /// A process no launcher started: rank 0 of 1.
    pub const ALONE: Launch = Launch { rank: 0, size: 1 };

    /// The variables a launcher sets, `(rank, size)`, in the order they are
    /// looked up: OpenMPI's, then PMI's.
    pub const VARIABLES: [(&'static str, &'static str); 2] = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
    ];

    /// Slurm's direct launch over PMIx (`srun --mpi=pmix`), `(rank, size)`:
    /// PMIx sets no size, so the step's is Slurm's. Looked up after
    /// [`VARIABLES`](Self::VARIABLES) and only as a pair, since Slurm sets
    /// the size for steps that no MPI plugin launched too.
    pub const SLURM_PMIX_VARIABLES: (&'static str, &'static str) =
        ("PMIX_RANK", "SLURM_STEP_NUM_TASKS");

    /// The launch that the launcher's variables, looked up by `var`, tell
    /// (a program passes its environment's lookup); [`ALONE`](Self::ALONE)
    /// where no launcher set them.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Launch {
        for (rank, size) in Launch::VARIABLES {
            if let Some(n) = var(size).and_then(|s| s.parse::<usize>().ok()) {
                let r = var(rank).and_then(|s| s.parse().ok()).unwrap_or(0);
                return Launch { rank: r, size: n };
            }
        }
        let (rank, size) = Launch::SLURM_PMIX_VARIABLES;
        let number = |k| var(k).and_then(|s| s.parse::<usize>().ok());
        match (number(rank), number(size)) {
            (Some(rank), Some(size)) => Launch { rank, size },
            _ => Launch::ALONE,
        }
    }

    /// This process's rank.
    pub fn rank(self) -> usize {
        self.rank
    }

    /// Ranks the launcher started.
    pub fn size(self) -> usize {
        self.size
    }

    /// Whether this process prints what every rank would print alike (an
    /// error all meet, help): rank 0 only, even before MPI is up.
    pub fn prints_for_all_ranks(self) -> bool {
        self.rank == 0
    }

    /// One of several ranks, as `(rank, size)`; `None` alone.
    fn of_several(self) -> Option<(usize, usize)> {
        (self.size > 1).then_some((self.rank, self.size))
    }
}

/// How a launcher started this process, as the program last said
/// ([`note_launch`], [`Cluster::join`]): what a run outside a joined
/// cluster checks.
static LAUNCH: Mutex<Launch> = Mutex::new(Launch::ALONE);

/// Tells the library how this process was started, where the program runs
/// without joining: a [`Skeleton::run`](crate::Skeleton::run) in one of
/// several ranks then refuses to run alone. [`Cluster::join`] tells it too.
pub fn note_launch(launch: Launch) {
    *LAUNCH.lock().unwrap_or_else(|p| p.into_inner()) = launch;
}

/// Prints `error: <message>` on stderr in one write: under mpirun, stderr
/// is a pipe shared with mpirun's own messages, and a line written in
/// pieces (as `eprintln!` writes a formatted error) can be split by them.
pub fn print_error(message: &str) {
    use std::io::Write;
    let line = format!("error: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A command-line parser's message (clap's: the error, then a usage and a
/// hint over several lines) as one line for [`print_error`]: its first
/// paragraph joined, without the leading `error: `, then `(see '<program>
/// --help')`. Every program of the project refuses bad arguments this way.
pub fn usage_error_line(rendered: &str, program: &str) -> String {
    let first = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let first = match first.trim_start_matches("error: ") {
        "" => "bad arguments",
        f => f,
    };
    format!("{first} (see '{program} --help')")
}

impl Cluster {
    /// Joins the job of a process started as `launch`: starts MPI when a
    /// launcher started several ranks, and learns every rank's host.
    pub fn join(launch: Launch) -> Result<Cluster, ClusterError> {
        let cluster = Cluster::join_launched(launch)?;
        note_launch(launch);
        Ok(cluster)
    }

    /// [`join`](Self::join), the launch not noted (tests of a refused
    /// join share their process with other tests' runs).
    fn join_launched(launch: Launch) -> Result<Cluster, ClusterError> {
        let launch = launch.of_several();
        #[cfg(not(feature = "mpi"))]
        if let Some((_, size)) = launch {
            return Err(SetupError::NoMpi { size }.into());
        }
        #[cfg(feature = "mpi")]
        if launch.is_some() {
            return Cluster::join_mpi();
        }
        let info = JobInfo::alone();
        register(&info)?;
        Ok(Cluster {
            info,
            #[cfg(feature = "mpi")]
            _universe: None,
        })
    }

    #[cfg(feature = "mpi")]
    fn join_mpi() -> Result<Cluster, ClusterError> {
        use ::mpi::traits::*;
        let (universe, threading) = ::mpi::initialize_with_threading(::mpi::Threading::Multiple)
            .ok_or(ClusterError::MpiStarted)?;
        let world = universe.world();
        let host =
            ::mpi::environment::processor_name().unwrap_or_else(|_| crate::job::local_host());
        let hosts = mpi::all_gather_bytes(host.as_bytes())
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        let mine = (crate::job::all_cores() as u64).to_le_bytes();
        let cores = mpi::all_gather_bytes(&mine)
            .into_iter()
            .map(|b| b.try_into().map_or(1, |b| u64::from_le_bytes(b) as usize))
            .collect();
        let info = JobInfo {
            rank: world.rank() as usize,
            size: world.size() as usize,
            hosts,
            cores,
            threads_multiple: threading == ::mpi::Threading::Multiple,
        };
        register(&info)?;
        Ok(Cluster {
            info,
            _universe: Some(universe),
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.info.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.info.size
    }

    /// The job as a run sees it.
    pub fn info(&self) -> &JobInfo {
        &self.info
    }

    /// Every rank offers its readiness (or why it has none); all get the
    /// same verdict: the first failing rank's message, or a mismatch naming
    /// the first rank whose fingerprint differs from rank 0's. Alone, a
    /// process agrees with itself.
    pub fn agree(&self, mine: Readiness) -> Result<(), RunError> {
        agree(&self.info, mine)
    }

    /// Rank 0: the one that gathers results and writes files.
    pub fn is_root(&self) -> bool {
        self.info.rank == 0
    }
}

pub(crate) fn agree(info: &JobInfo, mine: Readiness) -> Result<(), RunError> {
    if info.size == 1 {
        return verdict(&[mine]);
    }
    #[cfg(feature = "mpi")]
    {
        let bytes = serde_json::to_vec(&mine).expect("readiness serialises");
        let all = mpi::all_gather_bytes(&bytes)
            .iter()
            .map(|b| serde_json::from_slice(b).map_err(|e| RunError::Mpi(ControlError::View(e))))
            .collect::<Result<Vec<Readiness>, _>>()?;
        verdict(&all)
    }
    #[cfg(not(feature = "mpi"))]
    Err(SetupError::NoMpi { size: info.size }.into())
}

/// The common verdict on every rank's readiness, in rank order.
pub(crate) fn verdict(all: &[Readiness]) -> Result<(), RunError> {
    for (r, v) in all.iter().enumerate() {
        if let Readiness::Failed(e) = v {
            return Err(if r == 0 {
                RunError::Agreed(e.clone())
            } else {
                RunError::OnRank {
                    rank: r,
                    why: e.clone(),
                }
            });
        }
    }
    let text = |v: &Readiness| match v {
        Readiness::Ready(s) | Readiness::Failed(s) => s.clone(),
    };
    if let Some(r) = all.iter().position(|v| *v != all[0]) {
        return Err(RunError::Mismatch {
            rank: r,
            mine: text(&all[r]),
            root: text(&all[0]),
        });
    }
    Ok(())
}

fn register(info: &JobInfo) -> Result<(), ClusterError> {
    let mut a = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    if a.is_some() {
        return Err(ClusterError::JoinedTwice);
    }
    *a = Some(info.clone());
    Ok(())
}

impl Drop for Cluster {
    fn drop(&mut self) {
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = None;
        #[cfg(feature = "mpi")]
        if let Some(u) = &self._universe {
            use ::mpi::traits::*;
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

/// The job joined by this process; alone when none was joined, and an
/// error when a launcher started this process as one of several ranks that
/// never joined.
pub(crate) fn current() -> Result<JobInfo, SetupError> {
    if let Some(job) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return Ok(job);
    }
    unjoined(*LAUNCH.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The job of a process that joined none, a launcher having started it as
/// `launch`.
fn unjoined(launch: Launch) -> Result<JobInfo, SetupError> {
    match launch.of_several() {
        Some((_, size)) if cfg!(feature = "mpi") => Err(SetupError::NotJoined { size }),
        Some((_, size)) => Err(SetupError::NoMpi { size }),
        None => Ok(JobInfo::alone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn launchers_are_read_from_their_variables() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Launch::from_vars(move |k| m.get(k).cloned())
        };
        assert_eq!(env(&[]), Launch::ALONE);
        assert_eq!(
            env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")]),
            Launch { rank: 2, size: 4 }
        );
        assert_eq!(
            env(&[("PMI_SIZE", "3"), ("PMI_RANK", "1")]),
            Launch { rank: 1, size: 3 }
        );
        assert_eq!(env(&[("PMI_SIZE", "x")]), Launch::ALONE);
        assert_eq!(
            env(&[("PMIX_RANK", "3"), ("SLURM_STEP_NUM_TASKS", "4")]),
            Launch { rank: 3, size: 4 }
        );
        // Slurm's size alone (a step without PMIx), or PMIx's rank alone.
        assert_eq!(env(&[("SLURM_STEP_NUM_TASKS", "4")]), Launch::ALONE);
        assert_eq!(env(&[("PMIX_RANK", "1")]), Launch::ALONE);
        // Open MPI's mpirun sets PMIx's rank too: its own variables win.
        assert_eq!(
            env(&[
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("PMIX_RANK", "1"),
                ("SLURM_STEP_NUM_TASKS", "4")
            ]),
            Launch { rank: 1, size: 2 }
        );
        assert!(env(&[("PMI_SIZE", "3")]).prints_for_all_ranks());
        assert!(!env(&[("PMI_SIZE", "3"), ("PMI_RANK", "1")]).prints_for_all_ranks());
    }

    #[test]
    fn a_build_without_mpi_says_how_to_rebuild() {
        let e = SetupError::NoMpi { size: 4 }.to_string();
        assert!(e.contains("4 ranks") && e.contains("--features mpi"), "{e}");
    }

    /// A process a launcher started as one of several ranks that never
    /// joined is told to join, or, in a build without MPI, to rebuild.
    #[test]
    fn a_rank_that_never_joined_is_told_what_to_do() {
        let e = unjoined(Launch { rank: 0, size: 2 }).expect_err("one of two ranks");
        if cfg!(feature = "mpi") {
            assert!(matches!(e, SetupError::NotJoined { size: 2 }), "{e}");
        } else {
            assert!(matches!(e, SetupError::NoMpi { size: 2 }), "{e}");
        }
        assert_eq!(
            unjoined(Launch { rank: 0, size: 1 }).unwrap(),
            JobInfo::alone()
        );
        assert_eq!(unjoined(Launch::ALONE).unwrap(), JobInfo::alone());
    }

    /// Without MPI, a process a launcher started as one of several ranks
    /// refuses to join or to agree rather than run as if alone.
    #[test]
    #[cfg(not(feature = "mpi"))]
    fn a_build_without_mpi_refuses_a_job_of_several_ranks() {
        let e = Cluster::join_launched(Launch { rank: 1, size: 3 })
            .err()
            .expect("no MPI");
        assert!(
            matches!(e, ClusterError::Setup(SetupError::NoMpi { size: 3 })),
            "{e}"
        );
        let job = JobInfo::first_of_two();
        let e = agree(&job, Readiness::Ready("ready".into())).expect_err("no MPI");
        assert!(
            matches!(e, RunError::Setup(SetupError::NoMpi { size: 2 })),
            "{e}"
        );
    }

    #[test]
    fn verdicts_name_the_rank() {
        let v = |xs: &[&str]| {
            let views: Vec<Readiness> = xs
                .iter()
                .map(|s| match s.strip_prefix("err:") {
                    Some(e) => Readiness::Failed(e.to_string()),
                    None => Readiness::Ready(s.to_string()),
                })
                .collect();
            verdict(&views).map_err(|e| e.to_string())
        };
        assert!(v(&["a", "a", "a"]).is_ok());
        let e = v(&["a", "a", "b"]).unwrap_err();
        assert!(
            e.starts_with("rank 2 was given another run than rank 0 (rank 2: b; rank 0: a)"),
            "{e}"
        );
        let e = v(&["a", "err:no file", "a"]).unwrap_err();
        assert_eq!(e, "rank 1: no file");
        assert_eq!(
            v(&["err:bad size", "err:bad size"]).unwrap_err(),
            "bad size"
        );
        // A rank that failed with the text another rank offers as its run
        // still fails: the kind is part of the view.
        assert!(v(&["x", "err:x"]).is_err());
    }
}
