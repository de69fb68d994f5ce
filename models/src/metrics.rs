//! The error metrics of the modelling theses (modelling.md): relative error
//! (HCLogP's Eq. 5.1), MMRE, Pred(25), R², Spearman's rank correlation and
//! the communication-modelling study's RCC (concordant pairs).

use serde::Serialize;

use crate::ModelError;

fn paired(est: &[f64], real: &[f64], needed: usize, what: &'static str) -> Result<(), ModelError> {
    if est.len() != real.len() {
        return Err(ModelError::LengthMismatch {
            left: est.len(),
            right: real.len(),
        });
    }
    if est.len() < needed {
        return Err(ModelError::TooFewPoints {
            what,
            needed,
            got: est.len(),
        });
    }
    for &v in est.iter().chain(real) {
        if !v.is_finite() {
            return Err(ModelError::InvalidValue { what, value: v });
        }
    }
    Ok(())
}

/// `|est − real| / |real|`, as a fraction (multiply by 100 for percent).
pub fn relative_error(est: f64, real: f64) -> Result<f64, ModelError> {
    if real == 0.0 {
        return Err(ModelError::ZeroMeasurement);
    }
    if !est.is_finite() || !real.is_finite() {
        return Err(ModelError::InvalidValue {
            what: "relative error",
            value: if est.is_finite() { real } else { est },
        });
    }
    Ok((est - real).abs() / real.abs())
}

/// Mean magnitude of relative error over pairs.
pub fn mmre(est: &[f64], real: &[f64]) -> Result<f64, ModelError> {
    paired(est, real, 1, "MMRE")?;
    let mut sum = 0.0;
    for (&e, &r) in est.iter().zip(real) {
        sum += relative_error(e, r)?;
    }
    Ok(sum / est.len() as f64)
}

/// Pred(`level`): the fraction of pairs whose relative error is at most
/// `level` (Pred(25) is `pred(est, real, 0.25)`).
pub fn pred(est: &[f64], real: &[f64], level: f64) -> Result<f64, ModelError> {
    paired(est, real, 1, "Pred")?;
    let mut hits = 0usize;
    for (&e, &r) in est.iter().zip(real) {
        if relative_error(e, r)? <= level {
            hits += 1;
        }
    }
    Ok(hits as f64 / est.len() as f64)
}

/// Coefficient of determination `1 − SS_res / SS_tot` of the estimates
/// against the measurements. Negative when the model is worse than the
/// measurements' mean.
pub fn r_squared(est: &[f64], real: &[f64]) -> Result<f64, ModelError> {
    paired(est, real, 2, "R²")?;
    let mean = real.iter().sum::<f64>() / real.len() as f64;
    let ss_tot: f64 = real.iter().map(|r| (r - mean).powi(2)).sum();
    if ss_tot == 0.0 {
        return Err(ModelError::DegenerateSizes);
    }
    let ss_res: f64 = est.iter().zip(real).map(|(e, r)| (r - e).powi(2)).sum();
    Ok(1.0 - ss_res / ss_tot)
}

/// Ranks with ties given their average rank (1-based).
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation: Pearson's correlation of the ranks, ties
/// averaged. It says whether the model orders configurations as the
/// measurements do, which is what a planner needs even when the absolute
/// times are off.
pub fn spearman(est: &[f64], real: &[f64]) -> Result<f64, ModelError> {
    paired(est, real, 2, "Spearman")?;
    let (a, b) = (ranks(est), ranks(real));
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(&b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    if va == 0.0 || vb == 0.0 {
        return Err(ModelError::DegenerateSizes);
    }
    Ok(cov / (va * vb).sqrt())
}

/// The rank correlation of the communication-modelling study (modelling.md
/// §3.1): the fraction of the m(m−1)/2 pairs that the estimates order as
/// the measurements do, strictly. A pair tied on either side is not
/// concordant, so a model that cannot tell two configurations apart
/// scores lower than one that orders them.
pub fn rcc(est: &[f64], real: &[f64]) -> Result<f64, ModelError> {
    paired(est, real, 2, "RCC")?;
    let m = est.len();
    let mut concordant = 0usize;
    for i in 0..m {
        for j in i + 1..m {
            let a = est[i].partial_cmp(&est[j]);
            if a != Some(std::cmp::Ordering::Equal) && a == real[i].partial_cmp(&real[j]) {
                concordant += 1;
            }
        }
    }
    Ok(concordant as f64 / (m * (m - 1) / 2) as f64)
}

/// Every metric of estimates against measurements, as a report prints
/// them (the rank correlation is Spearman's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scores {
    /// [`mmre`], a fraction.
    pub mmre: f64,
    /// [`pred`] at 0.25, a fraction.
    pub pred25: f64,
    /// [`r_squared`].
    pub r_squared: f64,
    /// [`spearman`].
    pub spearman: f64,
    /// [`rcc`].
    pub rcc: f64,
}

impl Scores {
    /// The metrics of `est` against `real` (at least two pairs).
    pub fn of(est: &[f64], real: &[f64]) -> Result<Scores, ModelError> {
        Ok(Scores {
            mmre: mmre(est, real)?,
            pred25: pred(est, real, 0.25)?,
            r_squared: r_squared(est, real)?,
            spearman: spearman(est, real)?,
            rcc: rcc(est, real)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EST: [f64; 4] = [110.0, 90.0, 130.0, 40.0];
    const REAL: [f64; 4] = [100.0, 100.0, 100.0, 50.0];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn relative_error_by_hand() {
        assert!(close(relative_error(110.0, 100.0).unwrap(), 0.10));
        assert!(close(relative_error(90.0, 100.0).unwrap(), 0.10));
        assert!(close(relative_error(75.0, 50.0).unwrap(), 0.5));
        assert_eq!(relative_error(1.0, 0.0), Err(ModelError::ZeroMeasurement));
    }

    #[test]
    fn mmre_and_pred_by_hand() {
        // Errors: 0.10, 0.10, 0.30, 0.20.
        assert!(close(mmre(&EST, &REAL).unwrap(), 0.175));
        assert!(close(pred(&EST, &REAL, 0.25).unwrap(), 0.75));
        assert!(close(pred(&EST, &REAL, 0.05).unwrap(), 0.0));
        assert!(matches!(
            mmre(&EST, &REAL[..3]),
            Err(ModelError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn r_squared_by_hand() {
        // mean 87.5; SS_tot = 3·12.5² + 37.5² = 1875; SS_res = 100+100+900+100 = 1200.
        assert!(close(
            r_squared(&EST, &REAL).unwrap(),
            1.0 - 1200.0 / 1875.0
        ));
        assert!(close(r_squared(&REAL, &REAL).unwrap(), 1.0));
    }

    #[test]
    fn spearman_by_hand() {
        // Ranks est: [3,2,4,1]; real (ties averaged): [3,3,3,1].
        // Centred: est [0.5,-0.5,1.5,-1.5], real [0.5,0.5,0.5,-1.5];
        // cov = 0.25-0.25+0.75+2.25 = 3; va = 5; vb = 3 → 3/√15.
        assert!(close(spearman(&EST, &REAL).unwrap(), 3.0 / 15f64.sqrt()));
        assert!(close(
            spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 35.0]).unwrap(),
            1.0
        ));
        assert!(close(
            spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap(),
            -1.0
        ));
    }

    #[test]
    fn rcc_by_hand() {
        // Pairs of EST [110,90,130,40] against REAL [100,100,100,50]:
        // (0,1), (0,2), (1,2) tie in REAL; (0,3), (1,3), (2,3) concordant.
        assert!(close(rcc(&EST, &REAL).unwrap(), 3.0 / 6.0));
        // Five points, one pair swapped, one pair tied in the estimates:
        // 10 pairs, (1,2) discordant, (3,4) tied: 8 concordant.
        let est = [1.0, 3.0, 2.0, 4.0, 4.0];
        let real = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(close(rcc(&est, &real).unwrap(), 0.8));
        // Spearman on the same vectors is not the fraction of pairs.
        assert!(spearman(&est, &real).unwrap() > 0.85);
        assert!(matches!(
            rcc(&[1.0], &[1.0]),
            Err(ModelError::TooFewPoints { needed: 2, .. })
        ));
    }
}
