//! Grid sizes on the command line: `--size 4098x4098` or `--size 32`, and
//! how a size is written back in messages.

use crate::error::CliError;

pub use epsilod::size_text;

/// `4098x4098` or `32` (the same in each of `ndims` dimensions).
pub fn parse_size(text: &str, ndims: usize) -> Result<Vec<usize>, CliError> {
    let bad = |why: String| CliError::Size {
        size: text.to_string(),
        why,
    };
    let mut sizes = Vec::new();
    for p in text.split('x') {
        match p.trim().parse::<usize>() {
            Ok(0) => return Err(bad("sizes must be at least 1".into())),
            Ok(n) => sizes.push(n),
            Err(_) if p.trim().is_empty() => {
                return Err(bad(
                    "an extent is missing (write sizes like 4098x4098 or 32)".into(),
                ))
            }
            Err(_) => {
                return Err(bad(format!(
                    "'{p}' is not a whole number >= 1 (write sizes like 4098x4098 or 32)"
                )))
            }
        }
    }
    match sizes.len() {
        1 => Ok(vec![sizes[0]; ndims]),
        n if n == ndims => Ok(sizes),
        n => Err(bad(format!(
            "{n} dimensions given, the stencil has {ndims}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;
    use proptest::prelude::*;

    proptest! {
        /// Any text is a size or one error, never a panic.
        #[test]
        fn sizes_never_panic(text in ".*|[0-9x ]{0,24}", ndims in 1usize..5) {
            let _ = parse_size(&text, ndims);
        }
    }

    /// A zero extent is refused here, in the same words wherever it
    /// stands: commands read every size through this function.
    #[test]
    fn a_zero_extent_is_refused_alike_anywhere() {
        for size in ["0x100", "100x0", "0x0", "3x0x3", "0"] {
            assert_eq!(
                parse_size(size, size.split('x').count())
                    .unwrap_err()
                    .to_string(),
                format!("bad size '{size}': sizes must be at least 1"),
            );
        }
    }

    #[test]
    fn sizes_parse_or_say_why() {
        assert_eq!(parse_size("34", 3).unwrap(), vec![34, 34, 34]);
        assert_eq!(parse_size("10x20", 2).unwrap(), vec![10, 20]);
        for (bad, why) in [
            ("0", "at least 1"),
            ("1x", "an extent is missing"),
            ("1xy", "'y' is not a whole number"),
            ("2x3x4", "3 dimensions given"),
        ] {
            assert!(
                parse_size(bad, 2).unwrap_err().to_string().contains(why),
                "{bad}"
            );
        }
    }
}
