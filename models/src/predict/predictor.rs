//! The prediction itself: each device's compute and exchange per iteration
//! by the chosen method over the row chain, with host staging, and the loop
//! time as a distribution.

use super::device::Device;
use super::exchange::{loggp_exchange, rivera_p2p, Op};
use super::hclogp;
use super::machine::Machine;
use super::method::{ExchangeTime, Method};
use super::run::{DeviceTime, Prediction, Run};
use crate::interval::{loop_interval, IterationShape, LoopInterval};
use crate::{check_finite, ModelError};

impl Machine {
    /// Each device's seconds per iteration spent moving halos of `m` bytes
    /// between device and host memory, per neighbour outside its peer
    /// group, each transfer timed by a host link's Hockney fit: a device
    /// with memory of its own reads its border out and writes the halo in
    /// (the neighbour's read, if it has one, runs meanwhile); a device
    /// without a host link (in host memory, or a machine that does not say)
    /// waits for a neighbour with one to read its border out before the
    /// halo can leave.
    fn staging(&self, m: f64, chain: &[Vec<usize>]) -> Result<Vec<f64>, ModelError> {
        let p = self.devices.len();
        let once = |dev: &Device| -> Result<Option<f64>, ModelError> {
            dev.host_link
                .as_ref()
                .map(|name| Ok(self.link(name)?.hockney.time(m)))
                .transpose()
        };
        let mut staging = Vec::with_capacity(p);
        for (d, dev) in self.devices.iter().enumerate() {
            let mine = once(dev)?;
            let mut t = 0.0;
            for &e in chain[d]
                .iter()
                .filter(|&&e| !dev.shares_memory_with(&self.devices[e]))
            {
                t += match (mine, once(&self.devices[e])?) {
                    (Some(own), _) => 2.0 * own,
                    (None, Some(theirs)) => theirs,
                    (None, None) => 0.0,
                };
            }
            staging.push(t);
        }
        Ok(staging)
    }

    /// Predicts `run` by `method`, exchanges timed by the machine's links.
    pub fn predict(&self, run: &Run, method: Method) -> Result<Prediction, ModelError> {
        self.predict_with(run, method, ExchangeTime::Links)
    }

    /// Predicts `run` by `method`, exchanges timed by `exchange`, on the
    /// machine at the run's working set ([`Machine::at_working_set`]).
    pub fn predict_with(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<Prediction, ModelError> {
        Ok(self.at_working_set(run).shapes(run, method, exchange)?.0)
    }

    /// The loop time of [`Machine::predict_with`]'s prediction as a
    /// distribution: its median and 90% interval under each device's
    /// per-iteration noise (`cv`) and slow spells (`spell`), drawn with a
    /// fixed seed ([`loop_interval`]).
    pub fn interval(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<LoopInterval, ModelError> {
        let (_, shapes) = self.at_working_set(run).shapes(run, method, exchange)?;
        Ok(loop_interval(&shapes, run.iterations))
    }

    /// The prediction, and each device's iteration as its noise moves it.
    fn shapes(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<(Prediction, Vec<IterationShape>), ModelError> {
        let p = self.devices.len();
        if run.rows.len() != p {
            return Err(ModelError::DeviceCount {
                run: run.rows.len(),
                machine: p,
            });
        }
        check_finite("halo bytes per row", run.halo_bytes_per_row)?;
        if let ExchangeTime::Phase(t) = exchange {
            check_finite("exchange phase seconds", t)?;
        }
        let link = self.link(&run.link)?;
        let cells = run.cells_per_row as f64;
        let total_cells = run.rows.iter().sum::<u64>() as f64 * cells;
        let m = run.halo_rows as f64 * run.halo_bytes_per_row;
        let chain = chain(&run.rows);
        let neighbours = |d: usize| chain[d].len() as f64;
        let kernel = self.kernel_times(
            &run.rows
                .iter()
                .map(|&r| r as f64 * cells)
                .collect::<Vec<_>>(),
            run.cell_bytes(),
        );
        let own = |d: usize| kernel[d];
        let (balanced_iteration, _) = self.balanced(total_cells);
        let staging = self.staging(m, &chain)?;

        let mut devices = Vec::with_capacity(p);
        let mut shapes = Vec::with_capacity(p);
        let mut iteration: f64 = 0.0;
        for (d, &staged) in staging.iter().enumerate() {
            let nb = neighbours(d);
            // A learned model times the whole phase, the slowest process's:
            // every device that exchanges at all waits for it.
            let phase = |e: f64| match exchange {
                ExchangeTime::Links => e,
                ExchangeTime::Phase(_) if nb == 0.0 => 0.0,
                ExchangeTime::Phase(t) => t,
            };
            let dev = &self.devices[d];
            let additive = |compute: f64, exchange: f64| IterationShape {
                before: compute,
                overlapped: 0.0,
                exchange,
                after: 0.0,
                cv: dev.cv,
                spell: dev.spell,
            };
            let (compute, exchange, time, shape) = match method {
                Method::Hockney => {
                    let (c, e) = (own(d), phase(nb * link.hockney.time(m)) + staged);
                    (c, e, c + e, additive(c, e))
                }
                Method::LogGp => {
                    let (c, e) = (own(d), phase(loggp_exchange(&link.loggp, nb, m)) + staged);
                    (c, e, c + e, additive(c, e))
                }
                Method::HcLogP => {
                    // HCLogP assumes the work divided by power (Eq. 3.2 with
                    // I = I_s, F_r = 0): the partition does not enter. With
                    // fixed costs or tile curves "by power" is the split
                    // that equalises each device's time (`Machine::balanced`),
                    // of which Eq. 3.2 is the case of lines through 0.
                    let c = balanced_iteration;
                    let l = &link.loggp;
                    let e = phase(hclogp::comm_time(
                        Op::SendRecv,
                        nb,
                        p,
                        l.l,
                        m,
                        1.0 / l.big_g,
                        l.o_s + l.o_r,
                    )) + staged;
                    (c, e, c + e, additive(c, e))
                }
                Method::Rivera => {
                    // Rivera assumes equal work per process (§4.2).
                    let c = self.devices[d].time(total_cells / p as f64);
                    let e = phase(nb * rivera_p2p(&link.hockney, link.switch_latency, m)) + staged;
                    (c, e, c + e, additive(c, e))
                }
                Method::Overlap => {
                    let rows = run.rows[d];
                    // A strip on each side that sends goes before the
                    // halos leave (`hitmap::VpHalo::send_widths`), as the
                    // simulator has it.
                    let border_rows = rows.min(run.halo_rows * nb as u64);
                    let spc = dev.seconds_per_cell;
                    // The fixed cost is paid before the halos leave: the
                    // threads wake for the border strips first.
                    let fixed = if rows > 0 { dev.fixed_seconds } else { 0.0 };
                    let border = fixed + border_rows as f64 * cells * spc;
                    let inner = (rows - border_rows) as f64 * cells * spc;
                    // Held back by memory, both parts stretch alike.
                    let stretch = if border + inner > 0.0 {
                        own(d) / (border + inner)
                    } else {
                        1.0
                    };
                    let (border, inner) = (border * stretch, inner * stretch);
                    let e = phase(nb * link.hockney.time(m)) + staged;
                    (
                        border + inner,
                        e,
                        border + e.max(inner) + self.iteration_overhead,
                        IterationShape {
                            before: border,
                            overlapped: inner,
                            exchange: e,
                            after: self.iteration_overhead,
                            cv: dev.cv,
                            spell: dev.spell,
                        },
                    )
                }
            };
            iteration = iteration.max(time);
            devices.push(DeviceTime { compute, exchange });
            shapes.push(shape);
        }
        let iters = run.iterations as f64;
        let prediction = Prediction {
            method,
            devices,
            iteration,
            loop_time: iteration * iters,
            balanced_iteration,
            balanced_loop: balanced_iteration * iters,
        };
        Ok((prediction, shapes))
    }
}

/// Each device's neighbours along the partitioned axis: the nearest
/// devices on either side that hold rows. A device without rows has none
/// and is no one's: the skeleton exchanges no halos with it.
fn chain(rows: &[u64]) -> Vec<Vec<usize>> {
    let holding: Vec<usize> = (0..rows.len()).filter(|&d| rows[d] > 0).collect();
    let mut chain = vec![Vec::new(); rows.len()];
    for (k, &d) in holding.iter().enumerate() {
        chain[d] = [k.checked_sub(1), holding.get(k + 1).map(|_| k + 1)]
            .into_iter()
            .flatten()
            .map(|j| holding[j])
            .collect();
    }
    chain
}
