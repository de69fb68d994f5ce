//! How a grid's size is written in messages and file names: `4098x4098`.

/// Widths per dimension as `AxB`.
pub fn size_text(size: &[usize]) -> String {
    size.iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("x")
}
