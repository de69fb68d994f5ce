//! Slow spells: a device whose kernel time per row stayed above its peers'
//! for a long stretch of the run, found in the report's per-iteration
//! records (a slow node, a throttled GPU, a noisy neighbour).

use heuristics::median;
use serde::{Deserialize, Serialize};

/// A device at least this many times its peers' time per row is slow.
pub const SLOW_FACTOR: f64 = 1.5;

/// A spell lasts at least this share of the recorded iterations ...
pub const SPELL_FRACTION: f64 = 0.1;

/// ... and at least this many of them.
pub const SPELL_RECORDS: usize = 5;

/// The records are judged in about this many blocks, each by its median, so
/// that one iteration's hiccup neither starts nor breaks a spell.
const BLOCKS: usize = 100;

/// Blocks on each side whose medians a block's verdict takes the median
/// with: a dip of up to this many blocks does not break a spell, and a
/// spell's edges stay where they were.
const REACH: usize = 2;

/// One recorded iteration as spells read it (the report's
/// `IterationRecord`).
pub trait Timed {
    /// Its number.
    fn iter(&self) -> u64;
    /// Each device's kernel seconds and rows, in device order.
    fn kernels(&self) -> impl Iterator<Item = (f64, usize)>;
}

/// A device that stayed slower than its peers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowSpell {
    /// The device's index in `config.devices`.
    pub device: usize,
    /// The device, as `config.devices` writes it.
    pub name: String,
    /// The host it ran on, where the report names hosts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The first recorded iteration of the spell.
    pub from_iter: u64,
    /// The last.
    pub to_iter: u64,
    /// Its kernel seconds per row over the median of its peers', the
    /// median over the spell's iterations.
    pub factor: f64,
}

impl SlowSpell {
    /// The spell as the run's summary and `compare` print it.
    pub fn line(&self) -> String {
        let host = if self.host.is_empty() {
            String::new()
        } else {
            format!(" on {}", self.host)
        };
        format!(
            "slow spell: device {} ({}){host}, iterations {}-{}, {:.2}x its peers' kernel time per row",
            self.device, self.name, self.from_iter, self.to_iter, self.factor
        )
    }
}

/// The spells in `iterations` of devices `names` that ran on `hosts` (one
/// per device, or none): each a run of blocks whose median ratio of a
/// device's kernel seconds per row to its peers' median, the median with
/// the blocks near, is at least [`SLOW_FACTOR`], over at least
/// [`SPELL_FRACTION`] of the records and [`SPELL_RECORDS`] of them.
/// Devices without rows in an iteration sit it out.
pub fn slow_spells(
    iterations: &[impl Timed],
    names: &[String],
    hosts: &[String],
) -> Vec<SlowSpell> {
    let devices = iterations.first().map_or(0, |i| i.kernels().count());
    if devices < 2 {
        return Vec::new();
    }
    let ratios: Vec<Vec<Option<f64>>> = iterations.iter().map(ratios_to_peers).collect();
    let n = iterations.len();
    let block = n.div_ceil(BLOCKS);
    let shortest = ((n as f64 * SPELL_FRACTION).ceil() as usize).max(SPELL_RECORDS);
    let mut spells = Vec::new();
    for d in 0..devices {
        let of = |range: std::ops::Range<usize>| -> Vec<f64> {
            ratios[range]
                .iter()
                .filter_map(|r| r.get(d).copied().flatten())
                .collect()
        };
        let blocks = n.div_ceil(block);
        let medians: Vec<Option<f64>> = (0..blocks)
            .map(|b| {
                let r = of(b * block..((b + 1) * block).min(n));
                (!r.is_empty()).then(|| median(&r))
            })
            .collect();
        let slow = |b: usize| {
            let near: Vec<f64> = medians[b.saturating_sub(REACH)..(b + REACH + 1).min(blocks)]
                .iter()
                .flatten()
                .copied()
                .collect();
            medians[b].is_some() && median(&near) >= SLOW_FACTOR
        };
        let mut b = 0;
        while b < blocks {
            if !slow(b) {
                b += 1;
                continue;
            }
            let start = b;
            while b < blocks && slow(b) {
                b += 1;
            }
            let (mut first, mut last) = (start * block, (b * block).min(n) - 1);
            // Smoothing can join scattered spikes into a stretch whose own
            // median is near 1: that is noise, not a slow device.
            let mut factor = median(&of(first..last + 1));
            if factor < SLOW_FACTOR {
                continue;
            }
            // Smoothing also joins a milder stretch beside a spell (a busy
            // core before a device slowed down): a spell's edge is a record
            // at half its factor or more, among records that mostly are.
            let half = factor / 2.0;
            let strong = |i: usize, near: std::ops::Range<usize>| {
                let v = of(near);
                ratios[i]
                    .get(d)
                    .copied()
                    .flatten()
                    .is_some_and(|r| r >= half)
                    && !v.is_empty()
                    && median(&v) >= half
            };
            while first < last && !strong(first, first..(first + SPELL_RECORDS).min(last + 1)) {
                first += 1;
            }
            while last > first
                && !strong(
                    last,
                    (last + 1).saturating_sub(SPELL_RECORDS).max(first)..last + 1,
                )
            {
                last -= 1;
            }
            factor = median(&of(first..last + 1));
            if last + 1 - first >= shortest && factor >= SLOW_FACTOR {
                spells.push(SlowSpell {
                    device: d,
                    name: names.get(d).cloned().unwrap_or_default(),
                    host: hosts.get(d).cloned().unwrap_or_default(),
                    from_iter: iterations[first].iter(),
                    to_iter: iterations[last].iter(),
                    factor,
                });
            }
        }
    }
    spells.sort_by_key(|s| (s.from_iter, s.device));
    spells
}

/// Each device's kernel seconds per row over the median of the others'
/// that held rows (`None`: it held none, or no other did). The others'
/// values are everyone's sorted once, less the device's own: sorting them
/// for each device would be quadratic in the devices, at every record.
fn ratios_to_peers(it: &impl Timed) -> Vec<Option<f64>> {
    let per_row: Vec<Option<f64>> = it
        .kernels()
        .map(|(seconds, rows)| (rows > 0 && seconds > 0.0).then(|| seconds / rows as f64))
        .collect();
    let mut sorted: Vec<f64> = per_row.iter().flatten().copied().collect();
    sorted.sort_by(f64::total_cmp);
    per_row
        .iter()
        .map(|mine| {
            let mine = (*mine)?;
            let own = sorted
                .binary_search_by(|x| x.total_cmp(&mine))
                .expect("every value is among the sorted");
            median_without(&sorted, own).map(|m| mine / m)
        })
        .collect()
}

/// `heuristics::stats::median` of sorted `s` less its element `skip`, to
/// the bit; `None` when nothing is left.
fn median_without(s: &[f64], skip: usize) -> Option<f64> {
    let n = s.len().checked_sub(1).filter(|&n| n > 0)?;
    let at = |i: usize| if i < skip { s[i] } else { s[i + 1] };
    Some(if n % 2 == 1 {
        at(n / 2)
    } else {
        (at(n / 2 - 1) + at(n / 2)) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An iteration: its number and each device's kernel seconds and rows.
    struct It(u64, Vec<(f64, usize)>);

    impl Timed for It {
        fn iter(&self) -> u64 {
            self.0
        }
        fn kernels(&self) -> impl Iterator<Item = (f64, usize)> {
            self.1.iter().copied()
        }
    }

    /// `n` iterations of devices with kernel seconds per row `per_row(iter, device)`.
    fn run(n: u64, devices: usize, per_row: impl Fn(u64, usize) -> f64) -> Vec<It> {
        (0..n)
            .map(|iter| {
                It(
                    iter,
                    (0..devices)
                        .map(|d| (per_row(iter, d) * 10.0, 10))
                        .collect(),
                )
            })
            .collect()
    }

    use proptest::prelude::*;

    proptest! {
        /// The ratios are those of taking each device's peers' median
        /// apart, to the bit: ties, devices without rows or time, one
        /// device alone.
        #[test]
        fn ratios_are_each_over_its_peers_median(kernels in prop::collection::vec(
            (prop_oneof![Just(0.0), Just(1.5), 0.01f64..9.0], 0usize..4), 0..40)) {
            let it = It(0, kernels);
            let per_row: Vec<Option<f64>> = it
                .kernels()
                .map(|(s, rows)| (rows > 0 && s > 0.0).then(|| s / rows as f64))
                .collect();
            let want: Vec<Option<f64>> = (0..per_row.len())
                .map(|d| {
                    let peers: Vec<f64> = (0..per_row.len())
                        .filter(|&e| e != d)
                        .filter_map(|e| per_row[e])
                        .collect();
                    let mine = per_row[d]?;
                    (!peers.is_empty()).then(|| mine / median(&peers))
                })
                .collect();
            let bits = |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
            prop_assert_eq!(bits(&ratios_to_peers(&it)), bits(&want));
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|d| format!("cpu{d}")).collect()
    }

    #[test]
    fn a_device_slowed_from_an_iteration_is_named_from_there() {
        let its = run(400, 3, |i, d| if d == 2 && i >= 120 { 4.0 } else { 1.0 });
        let hosts = vec!["a".to_string(), "a".into(), "b".into()];
        let spells = slow_spells(&its, &names(3), &hosts);
        assert_eq!(
            spells,
            [SlowSpell {
                device: 2,
                name: "cpu2".into(),
                host: "b".into(),
                from_iter: 120,
                to_iter: 399,
                factor: 4.0,
            }]
        );
        assert_eq!(
            spells[0].line(),
            "slow spell: device 2 (cpu2) on b, iterations 120-399, 4.00x its peers' kernel time per row"
        );
    }

    /// A milder stretch just before a spell, joined to it by smoothing,
    /// does not move its start: the edges are where it runs at half its
    /// factor or more.
    #[test]
    fn a_milder_stretch_beside_a_spell_is_not_its_start() {
        let its = run(200, 2, |i, d| match (d, i) {
            (1, 50..=59) => 1.6,
            (1, 60..) => 8.0,
            _ => 1.0,
        });
        let spells = slow_spells(&its, &names(2), &[]);
        assert_eq!(
            spells
                .iter()
                .map(|s| (s.device, s.from_iter, s.to_iter, s.factor))
                .collect::<Vec<_>>(),
            [(1, 60, 199, 8.0)]
        );
    }

    /// Two blocks of peers as slow in a long spell do not break it.
    #[test]
    fn a_short_dip_does_not_break_a_spell() {
        let its = run(400, 2, |i, d| match (d, i) {
            (1, 200..=207) => 1.0,
            (1, 100..) => 4.0,
            _ => 1.0,
        });
        let spells = slow_spells(&its, &names(2), &[]);
        assert_eq!(
            spells
                .iter()
                .map(|s| (s.device, s.from_iter, s.to_iter))
                .collect::<Vec<_>>(),
            [(1, 100, 399)]
        );
    }

    #[test]
    fn short_hiccups_and_equal_devices_are_no_spell() {
        // Slow for 5% of the run, and a lone slow iteration every 10th.
        let its = run(1000, 2, |i, d| match (d, i) {
            (0, 500..=549) => 3.0,
            (1, i) if i % 10 == 0 => 9.0,
            _ => 1.0,
        });
        assert_eq!(slow_spells(&its, &names(2), &[]), []);
        assert_eq!(slow_spells(&run(50, 1, |_, _| 1.0), &names(1), &[]), []);
    }

    /// Spikes in 3 of every 10 iterations make every smoothed block look
    /// slow, but the device's own median is its peers': no spell.
    #[test]
    fn scattered_spikes_joined_by_smoothing_are_no_spell() {
        let its = run(200, 2, |i, d| {
            if d == 0 && i % 10 < 6 && i % 2 == 0 {
                20.0
            } else {
                1.0
            }
        });
        assert_eq!(slow_spells(&its, &names(2), &[]), []);
    }
}
