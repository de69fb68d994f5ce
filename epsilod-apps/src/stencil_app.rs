//! A library stencil or a spec file as an [`App`], so that a driver runs
//! it, an app and an array-cell spec by the same path. The choices only
//! such a stencil has (its CPU kernel, a random interior, auxiliary fields
//! from files) are set on it before it runs.

use crate::{array_cells, run_to_output, App, AppError, AppOutcome, Params};
use epsilod::{
    AnySpec, Cluster, ExprKernel, ExprSpec, InitSpec, KernelChoice, Library, RunOptions, Skeleton,
    Stencil,
};
use std::sync::Arc;

/// What a [`StencilApp`] runs.
#[derive(Clone, Debug)]
pub enum StencilSource {
    /// A stencil of the library.
    Library(Library),
    /// A spec file's stencil, of scalar or array cells.
    Spec(AnySpec),
}

/// An auxiliary field's values over the global domain.
pub type AuxValues = Arc<ndarray::ArrayD<f32>>;

/// A library stencil or spec file, run with EPSILOD's init.
pub struct StencilApp {
    name: String,
    source: StencilSource,
    kernel: KernelChoice,
    random: Option<u64>,
    aux: Vec<(String, AuxValues)>,
}

impl StencilApp {
    /// The library stencil `lib`, called `name`.
    pub fn library(name: &str, lib: Library) -> StencilApp {
        StencilApp::new(name, StencilSource::Library(lib))
    }

    /// The stencil of `spec`, read from the file `name`: an error where its
    /// cells have a number of components this build does not run.
    pub fn spec(name: &str, spec: AnySpec) -> Result<StencilApp, AppError> {
        let app = StencilApp::new(name, StencilSource::Spec(spec));
        match app.components() {
            Some(n) if !array_cells::SUPPORTED_COMPONENTS.contains(&n) => {
                Err(AppError::ArrayCells {
                    path: name.to_string(),
                    n,
                })
            }
            _ => Ok(app),
        }
    }

    fn new(name: &str, source: StencilSource) -> StencilApp {
        StencilApp {
            name: name.to_string(),
            source,
            kernel: KernelChoice::default(),
            random: None,
            aux: Vec::new(),
        }
    }

    /// The same stencil run by the CPU kernel `kernel` (library stencils).
    pub fn kernel(self, kernel: KernelChoice) -> StencilApp {
        StencilApp { kernel, ..self }
    }

    /// The same stencil with an interior drawn from `seed` (uniform in
    /// [0, 1)), or EPSILOD's 0 where `None`.
    pub fn random_init(self, seed: Option<u64>) -> StencilApp {
        StencilApp {
            random: seed,
            ..self
        }
    }

    /// The same stencil with auxiliary fields' values over the global
    /// domain (name and values each) instead of their definitions.
    pub fn aux(self, aux: Vec<(String, AuxValues)>) -> StencilApp {
        StencilApp { aux, ..self }
    }

    /// What it runs.
    pub fn source(&self) -> &StencilSource {
        &self.source
    }

    /// Components per cell of a spec with array cells (`cell = N`).
    pub fn components(&self) -> Option<usize> {
        match &self.source {
            StencilSource::Spec(AnySpec::Expr(ExprSpec { components, .. })) => *components,
            _ => None,
        }
    }

    /// The auxiliary fields its spec declares.
    pub fn aux_fields(&self) -> Vec<String> {
        match &self.source {
            StencilSource::Spec(AnySpec::Expr(e)) => e.aux.iter().map(|(n, _)| n.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// Its stencil of scalar cells, a spec's `n[d]` bound to `size` where
    /// given.
    ///
    /// # Panics
    ///
    /// Where its cells have components ([`StencilApp::components`]).
    pub fn scalar_stencil(&self, size: Option<&[usize]>) -> Result<Stencil<f32>, AppError> {
        Ok(match &self.source {
            StencilSource::Library(lib) => Stencil::<f32>::library(*lib, self.kernel),
            StencilSource::Spec(spec) => {
                let spec = match size {
                    Some(size) => spec.for_domain(size)?,
                    None => spec.clone(),
                };
                let mut stencil = Stencil::<f32>::from_any_spec(&spec);
                if let (AnySpec::Expr(e), false) = (&spec, self.aux.is_empty()) {
                    stencil.kernel = Arc::new(self.with_aux_values(e)?);
                }
                stencil
            }
        })
    }

    /// The spec's kernel with fields' values from [`StencilApp::aux`].
    fn with_aux_values(&self, spec: &ExprSpec) -> Result<ExprKernel<f32>, AppError> {
        let mut k = ExprKernel::<f32>::new(spec);
        for (name, a) in &self.aux {
            // Row-major strides of the array (the global domain's shape).
            let mut strides = vec![1usize; a.ndim()];
            for d in (0..a.ndim().saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * a.shape()[d + 1];
            }
            let values: Vec<f32> = a.iter().copied().collect();
            k = k
                .with_aux(name, move |g: &[i64]| {
                    // Fields are read within the global domain, the array's shape.
                    let at: usize = g.iter().zip(&strides).map(|(&i, s)| i as usize * s).sum();
                    values[at]
                })
                .map_err(|e| AppError::Aux {
                    name: name.clone(),
                    why: e.to_string(),
                })?;
        }
        Ok(k)
    }
}

impl App for StencilApp {
    fn name(&self) -> &str {
        &self.name
    }
    fn about(&self) -> &'static str {
        match self.source {
            StencilSource::Library(_) => "a library stencil",
            StencilSource::Spec(_) => "a stencil spec file",
        }
    }
    fn ndims(&self) -> usize {
        match &self.source {
            StencilSource::Library(l) => l.ndims(),
            StencilSource::Spec(s) => s.ndims(),
        }
    }
    fn check_size(&self, _size: &[usize]) -> Result<(), AppError> {
        // The skeleton says what is wrong with a size for a stencil.
        Ok(())
    }
    fn boundary(&self) -> Vec<usize> {
        match &self.source {
            StencilSource::Library(l) => l.spec().boundary(),
            StencilSource::Spec(s) => s.boundary(),
        }
    }
    fn is_stencil(&self) -> bool {
        true
    }
    fn run(
        &self,
        size: &[usize],
        _params: &Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, AppError> {
        if let (StencilSource::Spec(AnySpec::Expr(spec)), Some(_)) =
            (&self.source, self.components())
        {
            let spec = spec.for_domain(size)?;
            return array_cells::run(&self.name, &spec, size, self.random, options, cluster);
        }
        let stencil = self.scalar_stencil(Some(size))?;
        let init = InitSpec {
            sizes: size.to_vec(),
            low: stencil.low.clone(),
            high: stencil.high.clone(),
            random: self.random,
        };
        let on_device = init.device_kernel::<f32>();
        let mut skeleton = Skeleton::new(size, stencil).init(move |i| init.value(i));
        if let Some(k) = on_device {
            skeleton = skeleton.init_on_device(k);
        }
        run_to_output(skeleton, options, cluster, None)
    }
}
