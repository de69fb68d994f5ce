//! kernels: stencil descriptions, the stencil library, CPU kernels (generic,
//! specialised, custom, expressions from a spec: [`expr`]), their device code ([`device`]: dialects, the kernel
//! ABI) and the naive serial reference used by tests.

pub mod cell;
pub mod custom;
pub mod device;
pub mod error;
pub mod expr;
pub mod formula;
pub mod frame;
pub mod generic;
pub mod init;
pub mod input_file;
pub mod kernel;
pub mod library;
pub mod limits;
pub mod reference;
pub mod spec;
pub mod specialized;
pub mod toml_error;

pub use cell::{Cell, Real};
pub use custom::{Custom, Neighbourhood};
pub use device::{CellDecl, CellLayout, DeviceKernel, DeviceScalar, Dialect, Table};
pub use error::{KernelError, ParseReason, SpecError, UnknownKernel};
pub use expr::{ExprCell, ExprKernel, ExprSpec};
pub use formula::Formula;
pub use frame::{for_each_row, Frame};
pub use generic::Generic;
pub use init::InitSpec;
pub use kernel::{check_launch, launch_serial, row as neighbour_row, AuxField, Kernel};
pub use library::{basic_init, random_value, Library};
pub use spec::{AnySpec, StencilSpec};
pub use specialized::Specialized;
pub use toml_error::TomlError;

use std::str::FromStr;

/// Which CPU kernel runs a library stencil.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelChoice {
    /// Evaluation order of reference.md §1, bit-identical to EPSILOD.
    #[default]
    Specialized,
    /// Weights times neighbours in lexicographic order.
    Generic,
}

impl FromStr for KernelChoice {
    type Err = UnknownKernel;
    fn from_str(s: &str) -> Result<KernelChoice, UnknownKernel> {
        match s {
            "specialized" | "specialised" => Ok(KernelChoice::Specialized),
            "generic" => Ok(KernelChoice::Generic),
            _ => Err(UnknownKernel(s.to_string())),
        }
    }
}

/// The kernel for a library stencil.
pub fn library_kernel<T: Real>(lib: Library, choice: KernelChoice) -> Box<dyn Kernel<T>> {
    match choice {
        KernelChoice::Specialized => Box::new(Specialized::<T>::new(lib)),
        KernelChoice::Generic => Box::new(Generic::<T>::new(&lib.spec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_kernel_is_a_typed_error_naming_the_choices() {
        assert_eq!("generic".parse(), Ok(KernelChoice::Generic));
        assert_eq!("specialised".parse(), Ok(KernelChoice::Specialized));
        let e = "fast".parse::<KernelChoice>().unwrap_err();
        assert_eq!(e, UnknownKernel("fast".into()));
        assert_eq!(
            e.to_string(),
            "unknown kernel 'fast': use specialized or generic"
        );
    }
}
