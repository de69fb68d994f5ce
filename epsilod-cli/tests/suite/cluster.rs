//! Jobs across emulated nodes (scripts/cluster: network namespaces with
//! hostnames of their own, Open MPI over TCP between them): the bytes of
//! one process, device files placing devices by node, checkpoints moving
//! between node counts, and a node that dies, is cut off the network or
//! stops answering ending the job within seconds. Each test
//! brings up a cluster of its own and always brings it down; where
//! namespaces cannot be made (not root), it says so and passes.
#![cfg(feature = "mpi")]

use crate::common::{self, epsilod, json, one_cpu_each, path, same_bytes, succeeded, CPU1};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One job at a time (under `cargo test`; nextest runs the `mpi` group
/// one at a time): jobs side by side on 2 cores only slow each other.
static JOBS: Mutex<()> = Mutex::new(());

/// A job still running after this is a hang; the script's own limit is
/// shorter, so that it ends mpirun and its ranks first.
const LIMIT: Duration = Duration::from_secs(150);
const SCRIPT_LIMIT: &str = "120";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_epsilod")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/cluster")
}

/// An emulated cluster, down again when dropped.
struct Cluster {
    name: String,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// `nodes` nodes named `ct<pid>-<tag>-node<i>`, or None (printed why)
    /// where this machine cannot make them.
    fn up(tag: &str, nodes: usize) -> Option<Cluster> {
        let one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
        let name = format!("ct{}-{tag}", std::process::id());
        let o = Command::new(script())
            .args(["--name", &name, "up", &nodes.to_string()])
            .output()
            .expect("scripts/cluster runs");
        let err = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() && err.contains("cannot make the emulated cluster here") {
            eprintln!("skipped: {}", err.trim().trim_start_matches("error: "));
            return None;
        }
        let cluster = Cluster { name, _one: one };
        assert!(o.status.success(), "cluster up: {err}");
        Some(cluster)
    }

    fn node(&self, i: usize) -> String {
        format!("{}-node{i}", self.name)
    }

    /// `scripts/cluster run MPIRUN-ARGS -- CMD`, not yet waited for.
    fn command(&self, mpirun: &[&str], cmd: &[&str]) -> Command {
        let mut c = Command::new(script());
        c.args(["--name", &self.name, "run", "--timeout", SCRIPT_LIMIT])
            .args(mpirun)
            .arg("--")
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// The binary with `args` on `np` ranks, one a node in turn.
    fn epsilod(&self, np: usize, args: &[&str]) -> Output {
        let np = np.to_string();
        let mut cmd = vec![bin()];
        cmd.extend(args);
        wait_bounded(
            self.command(&["-np", &np, "--map-by", "node"], &cmd)
                .spawn()
                .expect("scripts/cluster runs"),
        )
    }

    /// What `cmd` prints on `np` nodes, one rank each: its lines, sorted.
    fn lines_of_each_node(&self, np: usize, cmd: &[&str]) -> Vec<String> {
        let np = np.to_string();
        let o = wait_bounded(
            self.command(&["-np", &np, "--map-by", "node"], cmd)
                .spawn()
                .expect("scripts/cluster runs"),
        );
        succeeded(&o, &format!("{cmd:?} on {np} nodes"));
        let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    }

    /// The ids of the processes in node `i`'s namespace.
    fn pids(&self, i: usize) -> Vec<u32> {
        let o = Command::new("ip")
            .args(["netns", "pids", &self.node(i)])
            .output()
            .expect("ip runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect()
    }
}

impl Cluster {
    /// `cmd` on 3 nodes, one rank each, once it has written a checkpoint
    /// into `ck`: its ranks are in their iteration loop.
    fn in_its_loop(&self, cmd: &[&str], ck: &str) -> Child {
        let mut job = self
            .command(&["-np", "3", "--map-by", "node"], cmd)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while checkpoints(ck).is_empty() {
            if start.elapsed() > LIMIT || job.try_wait().unwrap().is_some() {
                let _ = job.kill();
                panic!("no checkpoint: {:?}", job.wait_with_output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        job
    }

    /// The ids of the epsilod ranks on node `i`.
    fn ranks(&self, i: usize) -> Vec<u32> {
        let is_rank = |p: &u32| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|s| s.trim() == "epsilod")
        };
        self.pids(i).into_iter().filter(is_rank).collect()
    }
}

/// The iterations of the checkpoints in `ck`, oldest first.
fn checkpoints(ck: &str) -> Vec<u64> {
    let mut its: Vec<u64> = std::fs::read_dir(ck)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("ckpt-")?.parse().ok()
        })
        .collect();
    its.sort();
    its
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["--name", &self.name, "down"])
            .output();
    }
}

/// A directory every node sees at the same path, as a cluster's shared file
/// system: not under /tmp, which is each node's own.
fn shared_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn wait_bounded(child: Child) -> Output {
    common::wait_bounded(child, LIMIT, "a job on the emulated cluster")
}

/// `args` alone and on `np` nodes, one rank each: the same output bytes
/// and the same configuration in the report, devices on `np` hosts.
fn same_as_one_process(c: &Cluster, np: usize, args: &[&str], dir: &Path, tag: &str) {
    let on = format!("{np} nodes");
    common::same_as_one_process(args, dir, tag, &on, np, epsilod, |many| c.epsilod(np, many));
}

/// Stencils and gas-sim on 3 and 2 nodes, and a checkpoint written by 3
/// nodes resumed by 2: the bytes of one process, of the run never stopped.
#[test]
fn stencils_gas_sim_and_checkpoints_match_one_process_across_nodes() {
    let Some(c) = Cluster::up("same", 3) else {
        return;
    };
    // One rank on each node, each under its node's hostname.
    let hosts = c.lines_of_each_node(3, &["hostname"]);
    assert_eq!(hosts, [c.node(1), c.node(2), c.node(3)]);
    let dir = shared_dir();
    let mut args = vec!["run", "2d4", "--size", "66", "--iters", "10"];
    args.extend(["--init", "random", "--seed", "5"]);
    args.extend(["--devices", CPU1, "--devices", CPU1, "--devices", CPU1]);
    same_as_one_process(&c, 3, &args, dir.path(), "2d4");
    let mut args = vec!["run", "gas-sim", "--size", "14x12x10", "--iters", "6"];
    args.extend(["--devices", CPU1, "--devices", CPU1]);
    same_as_one_process(&c, 2, &args, dir.path(), "gas");
    // On this cluster too: one bring-up less than a test of its own.
    let dir = shared_dir();
    let on_nodes = |np: usize, args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(one_cpu_each(np));
        c.epsilod(np, &args)
    };
    common::restarts_end_as_the_run_never_stopped(
        dir.path(),
        "3 nodes",
        |args| on_nodes(3, args),
        &[("2 nodes", &|args| on_nodes(2, args))],
    );
}

/// Each node's /tmp is its own, as a real node's: a file written there on
/// node 1 is seen by node 1's rank, not by node 2's nor by the machine.
#[test]
fn each_node_has_its_own_tmp() {
    let Some(c) = Cluster::up("tmp", 2) else {
        return;
    };
    let mark = format!("/tmp/{}-mark", c.name);
    let o = Command::new(script())
        .args(["--name", &c.name, "exec", "1", "touch", &mark])
        .output()
        .expect("scripts/cluster runs");
    succeeded(&o, "touch on node 1");
    assert!(!Path::new(&mark).exists(), "{mark} is the machine's");
    let look = format!("echo $(hostname) $(test -e {mark} && echo sees || echo lacks) it");
    let seen = c.lines_of_each_node(2, &["sh", "-c", &look]);
    let want = [
        format!("{} sees it", c.node(1)),
        format!("{} lacks it", c.node(2)),
    ];
    assert_eq!(seen, want);
}

#[test]
fn host_tables_place_devices_by_node() {
    let Some(c) = Cluster::up("hosts", 3) else {
        return;
    };
    let dir = shared_dir();
    // Every node one device; node 2 a second, heavier one.
    let file = path(dir.path(), "devices.toml");
    let tables = format!(
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\nthreads = 1\n\n\
         [[device]]\nhost = \"{}\"\nkind = \"cpu\"\nthreads = 1\nweight = 2\n",
        c.node(2)
    );
    std::fs::write(&file, tables).unwrap();
    // Numbered rank by rank: node 1's, node 2's two, node 3's.
    let w2 = "cpu:threads=1,weight=2";
    common::a_device_file_deals(
        dir.path(),
        &file,
        &|args| c.epsilod(3, args),
        &[CPU1, CPU1, w2, CPU1],
    );
    // Tables for nodes 1 and 2 only: node 3's rank has none, and the error
    // names it by its hostname.
    let file = path(dir.path(), "two.toml");
    let tables = [1, 2].map(|i| {
        format!(
            "[[device]]\nhost = \"{}\"\nkind = \"cpu\"\nthreads = 1\n",
            c.node(i)
        )
    });
    std::fs::write(&file, tables.join("\n")).unwrap();
    let o = c.epsilod(3, &["run", "2d4", "--size", "34", "--device-file", &file]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!(
        "error: rank 2 (host {0}) has no device: {file} has no [[device]] with host = \"{0}\", host = \"*\" or rank = 2",
        c.node(3)
    );
    assert_eq!(err.matches(&want).count(), 1, "{err}");
}

/// The ranks of node 2 killed mid-run: mpirun ends the job within seconds,
/// naming the rank and its node, and leaves no process on any node; the
/// job's checkpoints then finish the run on the 2 nodes left. Under MPI
/// `--on-failure recover` does not keep the job going (a lost rank takes
/// its blocks and its share of the messages with it).
#[test]
fn a_node_whose_ranks_die_ends_the_job_and_its_checkpoints_finish_on_2_nodes() {
    let Some(c) = Cluster::up("kill", 3) else {
        return;
    };
    let dir = shared_dir();
    let ck = path(dir.path(), "ck");
    let base = ["run", "2d4", "--size", "130", "--quiet", "--init", "random"];
    let mut args = vec![bin()];
    args.extend(base);
    args.extend(["--iters", "100000000", "--checkpoint-every", "20"]);
    args.extend(["--checkpoint-dir", &ck, "--on-failure", "recover"]);
    args.extend(["--devices", CPU1, "--devices", CPU1, "--devices", CPU1]);
    // Once a checkpoint is complete, kill node 2's rank.
    let job = c.in_its_loop(&args, &ck);
    let ranks = c.ranks(2);
    assert_eq!(ranks.len(), 1, "node 2's ranks: {ranks:?}");
    // mpirun names the rank by its id in the job's PID namespace.
    let job_pid = std::fs::read_to_string(format!("/proc/{}/status", ranks[0]))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|ids| ids.split_whitespace().last()?.parse::<u32>().ok())
        .expect("the rank's PID in its namespace");
    let killed = Command::new("kill")
        .args(["-9", &ranks[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let killed_at = Instant::now();
    let o = wait_bounded(job);
    let took = killed_at.elapsed();
    assert!(!o.status.success(), "{}", o.status);
    assert!(
        took < Duration::from_secs(30),
        "the job took {took:?} to end"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!(
        "mpirun noticed that process rank 1 with PID {job_pid} on node {} exited on signal 9 (Killed).",
        c.node(2)
    );
    assert_eq!(err.matches(&want).count(), 1, "{err}");
    for i in 1..=3 {
        assert_eq!(c.pids(i), Vec::<u32>::new(), "processes left on node {i}");
    }
    // The newest checkpoint, on the nodes left, to 20 iterations past it.
    let newest = *checkpoints(&ck).last().unwrap();
    let iters = (newest + 20).to_string();
    let (out, rep, one) = (
        path(dir.path(), "two.dat"),
        path(dir.path(), "two.json"),
        path(dir.path(), "one.dat"),
    );
    let mut args = base.to_vec();
    args.extend(["--iters", &iters, "--restart", &ck, "--output", &out]);
    args.extend(["--report", &rep, "--devices", CPU1, "--devices", CPU1]);
    succeeded(&c.epsilod(2, &args), "restart on 2 nodes");
    assert_eq!(json(&rep)["config"]["resumed_from"], newest);
    let mut args = base.to_vec();
    args.extend(["--iters", &iters, "--devices", CPU1, "--output", &one]);
    succeeded(&epsilod(&args), "uninterrupted");
    assert!(
        same_bytes(&out, &one),
        "the restart after the lost node differs from the uninterrupted run"
    );
}

/// Node 2's rank silenced by `silence` mid-run, every rank waiting at most
/// 2 s for a message: the job ends within `bound` of it, non-zero, each
/// line of the ranks that waited naming rank 1 and node 2, and nothing is
/// left running.
fn silenced_node_is_named(tag: &str, silence: impl FnOnce(&Cluster), bound: Duration) {
    let Some(c) = Cluster::up(tag, 3) else {
        return;
    };
    let dir = shared_dir();
    let ck = path(dir.path(), "ck");
    let mut args = vec![bin(), "run", "2d4", "--size", "130", "--quiet"];
    args.extend(["--iters", "100000000", "--peer-timeout", "2"]);
    args.extend(["--checkpoint-every", "20", "--checkpoint-dir", &ck]);
    args.extend(["--devices", CPU1, "--devices", CPU1, "--devices", CPU1]);
    let job = c.in_its_loop(&args, &ck);
    silence(&c);
    let silenced_at = Instant::now();
    let o = wait_bounded(job);
    let took = silenced_at.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{}: {err}", o.status);
    assert!(took < bound, "the job took {took:?} to end: {err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("stopped answering"))
        .collect();
    // Ranks 0 and 2 both wait for rank 1; the first abort may end the
    // other before it prints.
    assert!((1..=2).contains(&lines.len()), "{err}");
    // The silence finds the ranks in a halo exchange or, one period in
    // twenty, in a checkpoint's agreement: either is named.
    let named = format!(
        "error: rank 1 on {} stopped answering during the ",
        c.node(2)
    );
    for l in lines {
        let phase = l.strip_prefix(&named).unwrap_or("");
        assert!(
            (phase.starts_with("halo exchange of iteration ")
                || phase.starts_with("checkpoint after iteration "))
                && l.ends_with("had no message from it for 2 s)"),
            "{l}"
        );
    }
    for i in 1..=3 {
        assert_eq!(c.pids(i), Vec::<u32>::new(), "processes left on node {i}");
    }
}

/// A node cut off the network (its link down, nothing dies): the ranks
/// waiting for it name it, and mpirun gives up on its daemon.
#[test]
fn a_node_cut_off_the_network_is_named_and_the_job_ends() {
    silenced_node_is_named(
        "cut",
        |c| {
            let down = Command::new("ip")
                .args(["-n", &c.node(2), "link", "set", "eth0", "down"])
                .status()
                .unwrap();
            assert!(down.success());
        },
        Duration::from_secs(40),
    );
}

/// A rank that stops (SIGSTOP: alive, its node reachable, silent): the
/// ranks waiting for it name it and end the job.
#[test]
fn a_stopped_rank_is_named_and_the_job_ends() {
    silenced_node_is_named(
        "stop",
        |c| {
            let ranks = c.ranks(2);
            assert_eq!(ranks.len(), 1, "node 2's ranks: {ranks:?}");
            let stopped = Command::new("kill")
                .args(["-STOP", &ranks[0].to_string()])
                .status()
                .unwrap();
            assert!(stopped.success());
        },
        Duration::from_secs(30),
    );
}
