//! The C names and literals of the scalar types device code computes in.

/// A scalar type device code can compute in.
pub trait DeviceScalar: Copy {
    /// The C type name.
    const C_TYPE: &'static str;
    /// Whether the type needs double-precision support on the device.
    const NEEDS_FP64: bool;
    /// A C literal of exactly this value, in this type.
    fn literal(self) -> String;
    /// A literal of `v` rounded to this type, as `Real::from_f64` rounds it.
    fn literal_of(v: f64) -> String;
}

/// C spellings of the values Rust's shortest round-trip formatting cannot
/// give as a literal.
fn non_finite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NAN")
    } else if v == f64::INFINITY {
        Some("INFINITY")
    } else if v == f64::NEG_INFINITY {
        Some("(-INFINITY)")
    } else {
        None
    }
}

impl DeviceScalar for f32 {
    const C_TYPE: &'static str = "float";
    const NEEDS_FP64: bool = false;
    fn literal(self) -> String {
        // `{:?}` is the shortest text that parses back to the same bits.
        match non_finite(self as f64) {
            Some(s) => s.to_string(),
            None => format!("{self:?}f"),
        }
    }
    fn literal_of(v: f64) -> String {
        (v as f32).literal()
    }
}

impl DeviceScalar for f64 {
    const C_TYPE: &'static str = "double";
    const NEEDS_FP64: bool = true;
    fn literal(self) -> String {
        match non_finite(self) {
            Some(s) => format!("((double){s})"),
            None => format!("{self:?}"),
        }
    }
    fn literal_of(v: f64) -> String {
        v.literal()
    }
}
