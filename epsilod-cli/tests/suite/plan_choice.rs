//! `plan --json`'s ranked candidates and runner-up against the text it
//! prints, on an inventory written from a real calibration.

use crate::common;
use common::{json, ok, path};

use serde_json::Value;

/// What a candidate runs: devices, network, and for several devices
/// partition and weights.
fn run(c: &Value) -> Vec<String> {
    let mut keys = vec!["counts", "network"];
    if c["devices"].as_u64().unwrap() > 1 {
        keys.extend(["partition", "weights"]);
    }
    keys.iter().map(|k| c[k].to_string()).collect()
}

#[test]
fn the_ranking_is_the_texts_order_and_the_runner_up_its_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let machine = path(dir.path(), "machine.json");
    let calibrate = "calibrate 2d4 --size 66x34 --devices cpu:threads=1 \
                     --devices cpu:threads=1,slowdown=4 --partition w0 --no-links --out";
    let mut args: Vec<&str> = calibrate.split_whitespace().collect();
    args.push(&machine);
    ok(&args);
    // Each calibrated device a class of two on one host; ranks of a host
    // dearer to link than devices of a rank, so devices per rank count.
    let mut inv = String::from(
        "in_process = { alpha = 1e-5, beta = 1e-9 }\nshared_memory = { alpha = 1e-4, beta = 1e-8 }\n",
    );
    for (i, d) in json(&machine)["devices"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        inv += &format!(
            "[[device]]\nname = \"d{i}\"\nhost = \"h\"\nseconds_per_cell = {}\nfixed_seconds = {}\ncount = 2\n",
            d["seconds_per_cell"], d["fixed_seconds"]
        );
    }
    let inventory = path(dir.path(), "inventory.toml");
    std::fs::write(&inventory, inv).unwrap();
    let file = path(dir.path(), "plan.json");
    let text = ok(&[
        "plan",
        "--inventory",
        &inventory,
        "--size",
        "66x34",
        "--iters",
        "100",
        "--json",
        &file,
    ]);
    let doc = json(&file);
    let ranked = doc["ranked"]
        .as_array()
        .expect("plan --json ranks candidates");
    let seconds = |c: &Value| c["seconds"].as_f64().unwrap();
    assert!(ranked.windows(2).all(|w| seconds(&w[0]) <= seconds(&w[1])));
    // The best's layouts (the sweep) and the best of each other count.
    let sweep = doc["sweep"].as_array().unwrap();
    let best = (&doc["best"]["counts"], &doc["best"]["network"]);
    let of_best: Vec<&Value> = ranked
        .iter()
        .filter(|c| (&c["counts"], &c["network"]) == best)
        .collect();
    assert_eq!(of_best.len(), sweep.len(), "{ranked:#?}");
    assert_eq!(ranked.len(), sweep.len() + 3, "four devices: four counts");
    assert_eq!(ranked[0]["counts"], doc["best"]["counts"]);
    // In the text's order: its layout lines are the best's candidates in
    // the ranking, those of one time (at its precision) on one line.
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "layouts of the best, fastest first:")
        .skip(1)
        .collect();
    let mut want: Vec<String> = Vec::new();
    for c in &of_best {
        let layout = format!(
            "  {:.4} s  partition {}, weights {}, ",
            seconds(c),
            c["partition"].as_str().unwrap(),
            c["weights"].as_str().unwrap()
        );
        if !want.contains(&layout) {
            want.push(layout);
        }
    }
    assert_eq!(lines.len(), want.len(), "{text}\n{want:#?}");
    for (line, layout) in lines.iter().zip(&want) {
        assert!(
            line.starts_with(layout.as_str()),
            "{line:?} is not {layout:?}"
        );
    }
    // Each front's choice is a candidate of the same time.
    for f in doc["pareto"].as_array().unwrap() {
        assert!(
            ranked
                .iter()
                .any(|c| c["devices"] == f["devices"] && seconds(c) == seconds(f)),
            "{f} not ranked"
        );
    }
    // The runner-up: the first candidate that is another run than the
    // choice, not the same at another number of devices per rank (nor,
    // for one device, another layout).
    let second = ranked.iter().find(|c| run(c) != run(&ranked[0])).unwrap();
    assert_eq!(&doc["runner_up"], second);
}
