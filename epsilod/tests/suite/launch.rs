//! A program started by mpirun must join the job before it runs anything:
//! the launcher's environment is simulated, in a process of its own, and
//! the program tells the library what it reads there, as programs do.

use epsilod::{RunError, SetupError, Skeleton, Stencil};
use epsilod_testkit::process::in_own_process;
use kernels::{KernelChoice, Library};

#[test]
fn a_program_started_by_mpirun_that_never_joined_is_told_what_to_do() {
    in_own_process(
        "launch::a_program_started_by_mpirun_that_never_joined_is_told_what_to_do",
        &[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "0")],
        never_joined,
    );
}

fn never_joined() {
    epsilod::cluster::note_launch(epsilod::Launch::from_vars(|k| std::env::var(k).ok()));
    let e = Skeleton::new(
        &[10, 10],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .run()
    .err()
    .expect("a run outside the job");
    if cfg!(feature = "mpi") {
        assert!(
            matches!(e, RunError::Setup(SetupError::NotJoined { size: 2 })),
            "{e}"
        );
        assert!(e.to_string().contains("call epsilod::Cluster::join()"));
    } else {
        assert!(
            matches!(e, RunError::Setup(SetupError::NoMpi { size: 2 })),
            "{e}"
        );
        assert!(e.to_string().contains("--features mpi"));
    }
}

/// The library reads no environment: a launcher's variables alone, never
/// handed to it, leave a run alone (and complete), as in any process.
#[test]
fn the_launchers_variables_reach_the_library_only_through_the_program() {
    in_own_process(
        "launch::the_launchers_variables_reach_the_library_only_through_the_program",
        &[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "1")],
        || {
            let out = Skeleton::new(
                &[10, 10],
                Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
            )
            .iterations(2)
            .run()
            .expect("a run alone");
            assert!(out.is_root());
            assert_eq!(out.grid.shape(), &[10, 10]);
        },
    );
}
