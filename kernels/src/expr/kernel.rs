//! [`ExprKernel`]: an [`ExprSpec`] as a [`Kernel`], its update compiled
//! to row operations on the CPU and to device code for the devices, its
//! auxiliary fields evaluated cell by cell or supplied by the program.

use super::error::{ExprError, Part};
use super::eval;
use super::math::ExprCell;
use super::parse::Expr;
use super::rows::Program;
use super::spec::{bad, ExprSpec};
use crate::device::emit::expression::{spec_kernel, SpecBody};
use crate::device::DeviceKernel;
use crate::error::SpecError;
use crate::frame::Frame;
use crate::kernel::{AuxField, Kernel};
use hitmap::Footprint;
use std::ops::Range;

/// An [`ExprSpec`] as a kernel for cells of type `C`.
pub struct ExprKernel<C: ExprCell> {
    spec: ExprSpec,
    footprint: Footprint,
    program: Program<C::Real>,
    /// The spec's auxiliary fields, evaluated cell by cell.
    aux: Vec<AuxField<C>>,
}

impl<C: ExprCell> ExprKernel<C> {
    /// # Panics
    ///
    /// If the spec reads an auxiliary field it does not declare
    /// ([`ExprSpec::with_aux`]). If the spec reads the domain size (`n[d]`) unbound: bind it with
    /// [`ExprSpec::for_domain`] first (the size is the run's, not the
    /// spec's). If the spec's cells are not `C`'s: scalar for `f32`, `N`
    /// components (`cell = N`) for `[f32; N]` ([`ExprSpec::components`]).
    pub fn new(spec: &ExprSpec) -> ExprKernel<C> {
        assert!(
            !spec.uses_domain(),
            "stencil '{}' reads n[d]: bind the domain with ExprSpec::for_domain first",
            spec.name
        );
        assert!(
            spec.undeclared_aux().is_none(),
            "stencil '{}' reads an aux field it does not declare: ExprSpec::with_aux",
            spec.name
        );
        assert_eq!(
            spec.components,
            C::COMPONENTS,
            "stencil '{}': its cells' components (None: scalar) are not the kernel's",
            spec.name
        );
        let lets: Vec<Expr> = spec.lets.iter().map(|(_, e, _)| e.clone()).collect();
        let aux = spec
            .aux
            .iter()
            .map(|(_, e)| {
                let e = e.clone();
                // Scalar cells only (the parser refuses aux with cell = N),
                // where `C` is `C::Real`.
                let f: AuxField<C> = std::sync::Arc::new(move |g: &[i64]| {
                    bytemuck::cast(eval::value::<C::Real>(&e, g))
                });
                f
            })
            .collect();
        ExprKernel {
            spec: spec.clone(),
            footprint: spec.footprint(),
            program: Program::new(&lets, &spec.update, spec.components),
            aux,
        }
    }

    /// The same kernel with auxiliary field `name`'s values from `f`
    /// instead of its definition in the spec: data a program has (an image,
    /// a velocity model read from a file), as a function of the global
    /// index. Errors when the spec has no such field.
    pub fn with_aux(
        mut self,
        name: &str,
        f: impl Fn(&[i64]) -> C + Send + Sync + 'static,
    ) -> Result<ExprKernel<C>, SpecError> {
        let i = self
            .spec
            .aux
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| {
                bad(
                    Part::AuxFields,
                    0,
                    ExprError::NoAuxField {
                        stencil: self.spec.name.clone(),
                        name: name.to_string(),
                    },
                )
            })?;
        self.aux[i] = std::sync::Arc::new(f);
        Ok(self)
    }
}

impl<C: ExprCell> Kernel<C> for ExprKernel<C> {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn apply(&self, src: &[C], dst: &mut [C], frame: &Frame, region: &[Range<usize>]) {
        self.apply_aux(src, &[], dst, frame, region)
    }

    /// # Panics
    ///
    /// Unless `aux` has a buffer per auxiliary field (controllers check).
    fn apply_aux(
        &self,
        src: &[C],
        aux: &[&[C]],
        dst: &mut [C],
        frame: &Frame,
        region: &[Range<usize>],
    ) {
        assert_eq!(aux.len(), self.aux.len(), "one buffer per aux field");
        // A cell is its components side by side (`C` is `Real` or an array
        // of it), so the buffers are read as components.
        let src: &[C::Real] = bytemuck::cast_slice(src);
        let aux: Vec<&[C::Real]> = aux.iter().map(|a| bytemuck::cast_slice(a)).collect();
        let dst: &mut [C::Real] = bytemuck::cast_slice_mut(dst);
        self.program.apply(src, &aux, dst, frame, region);
    }

    fn reads_previous(&self) -> bool {
        self.spec.reads_previous()
    }

    fn aux_fields(&self) -> &[AuxField<C>] {
        &self.aux
    }

    fn device_kernel(&self) -> Option<DeviceKernel> {
        Some(spec_kernel::<C::Real>(&SpecBody {
            ndims: self.spec.ndims(),
            lets: &self.spec.lets,
            update: &self.spec.update,
            components: self.spec.components,
            reads_previous: self.spec.reads_previous(),
            aux: self.aux.len(),
        }))
    }
}
