//! Machine files (`calibrate --out`): read and validated once for every
//! command that takes `--model` or `--weights-from`.

use crate::error::CliError;
use models::memory::HostMemory;
use models::predict::Machine;

/// Reads and validates a machine JSON; relative powers are recomputed by
/// `Machine::new`, never trusted from the file.
pub fn load_machine(path: &std::path::Path) -> Result<Machine, CliError> {
    let bad = |why: String| CliError::MachineModel {
        path: path.display().to_string(),
        why,
    };
    let text =
        kernels::input_file::read_text(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let raw: Machine = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a machine JSON (see docs/modelling.md): {e}")))?;
    let mut m = Machine::new(raw.devices, raw.links)
        .and_then(|m| m.with_overhead(raw.iteration_overhead))
        .map_err(|e| bad(e.to_string()))?;
    if let Some(h) = raw.rebalance {
        if !(h.alpha.is_finite() && h.alpha >= 0.0 && h.beta.is_finite() && h.beta >= 0.0) {
            return Err(bad(format!("rebalance cost {h:?} must be finite and >= 0")));
        }
        m.rebalance = Some(h);
    }
    if let Some(mem) = raw.memory {
        let mem = HostMemory::new(mem.rates).map_err(|e| bad(format!("memory: {e}")))?;
        m = m.with_memory(mem);
    }
    if let Some(at) = raw.calibrated_at {
        let fine = [
            at.bytes,
            at.streams,
            at.cell_bytes,
            at.row_bytes,
            at.reach_rows,
        ]
        .iter()
        .all(|x| x.is_finite() && *x >= 0.0);
        if !fine {
            return Err(bad(format!(
                "calibrated_at {at:?}: every figure must be finite and >= 0"
            )));
        }
        m.calibrated_at = Some(at);
    }
    Ok(m)
}
