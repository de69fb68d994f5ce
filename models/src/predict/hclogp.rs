//! HCLogP's published formulas (Soares 2017, ch. 3).

use super::exchange::Op;

/// Eq. 3.2: `T_comp = (I / I_s) · I_e / (ΣR_p + F_r)`, where `I_e` is the
/// time of `I_s` iterations on the slowest unit.
pub fn comp_time(i: f64, i_s: f64, i_e: f64, sum_rp: f64, f_r: f64) -> f64 {
    (i / i_s) * (i_e / (sum_rp + f_r))
}

/// Eqs. 3.8–3.10 for one operation type: `N_op · k · (L + M/B + o_d)`
/// with `k` = 1, P−1 or log2 P by `op`. `b` is in bytes per second.
pub fn comm_time(op: Op, n_op: f64, p: usize, l: f64, m: f64, b: f64, o_d: f64) -> f64 {
    let k = match op {
        Op::SendRecv => 1.0,
        Op::AllToAll => p.saturating_sub(1) as f64,
        Op::Tree => (p as f64).log2(),
    };
    n_op * k * (l + m / b + o_d)
}
