//! The heuristics `--alb` names, comma-separated, each with its parameters.

use crate::error::CliError;

/// `none,welch:alpha=0.01,margin=3,next-alb` -> `none`,
/// `welch:alpha=0.01,margin=3`, `next-alb`: names never contain `=`, so a
/// piece with one continues the parameters of the heuristic before it.
pub(super) fn split_heuristics(text: &str) -> Result<Vec<String>, CliError> {
    let mut out: Vec<String> = Vec::new();
    for piece in text.split(',').map(str::trim) {
        match out.last_mut() {
            Some(last) if piece.contains('=') && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    // `none,,welch` or a stray comma: said as such, not as a name given
    // twice (two empty pieces) or an unknown one.
    if let Some(e) = super::empty_item("--alb", text, &out, "heuristic", "none,next-alb") {
        return Err(e);
    }
    super::once_each("--alb", &out, "heuristic")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::split_heuristics;

    #[test]
    fn parameters_stay_with_their_heuristic() {
        assert_eq!(
            split_heuristics("none, welch:alpha=0.01,margin=3,next-alb,const-iters:every=5")
                .unwrap(),
            [
                "none",
                "welch:alpha=0.01,margin=3",
                "next-alb",
                "const-iters:every=5"
            ]
        );
        // A stray parameter stays a piece of its own, and fails to parse there.
        assert_eq!(
            split_heuristics("none,every=5").unwrap(),
            ["none", "every=5"]
        );
        // Twice is a mistake (a table with two rows of one name).
        assert_eq!(
            split_heuristics("welch,none,welch")
                .unwrap_err()
                .to_string(),
            "--alb names welch twice: give each heuristic once"
        );
    }
}
