//! What a command was asked to run: a library stencil, an app or a spec
//! file, each an [`App`], so that `run` has one path for all of them and
//! the commands that model stencils find theirs here too.

use crate::args::{InitKind, RunArgs};
use crate::error::CliError;
use epsilod::{Digest, RunIdentity, Stencil};
use epsilod_apps::{App, Params, StencilApp, StencilSource};
use kernels::{AnySpec, KernelChoice, Library};
use std::path::Path;
use std::sync::Arc;

/// What a command was asked to run.
pub enum Target {
    /// A library stencil or spec file.
    Stencil(Box<StencilApp>),
    /// An app of the registry.
    App(&'static dyn App),
}

impl Target {
    /// The name given: a library stencil, an app, or a spec file's path.
    pub fn resolve(name: &str) -> Result<Target, CliError> {
        if let Some(lib) = Library::by_name(name) {
            return Ok(Target::Stencil(Box::new(StencilApp::library(name, lib))));
        }
        if let Some(app) = epsilod_apps::find(name) {
            return Ok(Target::App(app));
        }
        let path = Path::new(name);
        if path.extension().is_some_and(|e| e == "toml") || path.exists() {
            let spec = AnySpec::load(path)?;
            return Ok(Target::Stencil(Box::new(StencilApp::spec(name, spec)?)));
        }
        Err(CliError::UnknownStencil {
            name: name.to_string(),
            apps: epsilod_apps::all()
                .iter()
                .map(|a| a.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// It as an app, whatever it is.
    pub fn app(&self) -> &dyn App {
        match self {
            Target::Stencil(s) => s.as_ref(),
            Target::App(a) => *a,
        }
    }

    /// A stencil set up as `args` say, from `aux` files' fields; an app
    /// as it is (its domain, init and kernels are its own).
    pub fn for_run(self, args: &RunArgs, aux: AuxFiles) -> Target {
        match self {
            Target::Stencil(s) => Target::Stencil(Box::new(
                s.kernel(args.kernel)
                    .random_init((args.init == InitKind::Random).then_some(args.seed))
                    .aux(aux),
            )),
            app => app,
        }
    }

    /// The options of `args` a run of it ignores, one warning each: an
    /// app sets its own initial state and kernels, and an expression
    /// spec's kernel is its own (`--kernel` chooses among the library's; a
    /// weighted spec's is the generic weighted sum).
    pub fn ignored_options(&self, args: &RunArgs) -> Vec<String> {
        let (what, follows_init) = match self {
            Target::App(a) => (format!("app {}", a.name()), false),
            Target::Stencil(s) => match s.source() {
                StencilSource::Spec(AnySpec::Expr(_)) => (format!("spec file {}", s.name()), true),
                _ => return Vec::new(),
            },
        };
        let mut warnings = Vec::new();
        if args.init == InitKind::Random && !follows_init {
            warnings.push(format!(
                "--init random is ignored: {what} sets its own initial state (--init is for library stencils and spec files)"
            ));
        }
        if args.kernel == KernelChoice::Generic {
            warnings.push(format!(
                "--kernel generic is ignored: {what} computes with its own kernel (--kernel chooses among the library stencils' kernels)"
            ));
        }
        warnings
    }

    /// What decides the result of a run of it with `args` and `params`
    /// beyond what the skeleton knows itself (see [`RunIdentity`]): for a
    /// run that writes or resumes checkpoints, which record it; other runs
    /// read no file for it.
    pub fn identity(&self, args: &RunArgs, params: &Params) -> Result<RunIdentity, CliError> {
        if args.checkpoint_dir.is_none() && args.restart.is_none() {
            return Ok(RunIdentity::default());
        }
        let digest = |path: &Path| {
            std::fs::read(path)
                .map(|bytes| Digest::of(&bytes))
                .map_err(|e| CliError::Input {
                    path: path.display().to_string(),
                    why: e.to_string(),
                })
        };
        let mut id = RunIdentity {
            target: self.app().name().to_string(),
            ..RunIdentity::default()
        };
        match self {
            Target::Stencil(s) => {
                if let StencilSource::Spec(_) = s.source() {
                    // Its content, not where it lies: a job script may
                    // resume from another directory.
                    let path = Path::new(s.name());
                    let file = path.file_name().unwrap_or(path.as_os_str());
                    id.target = format!("spec file {}", file.to_string_lossy());
                    id.definition = Some(digest(path)?);
                }
                if args.init == InitKind::Random {
                    id.seed = Some(args.seed);
                }
                for given in &args.aux {
                    if let Some((name, file)) = given.split_once('=') {
                        id.files
                            .push((format!("aux {name}"), digest(Path::new(file))?));
                    }
                }
            }
            Target::App(app) => {
                // A parameter without a default that was not given (wavesim's
                // T) decides nothing: --iters does.
                for p in app.params() {
                    if let Some(v) = params.given(p.name)? {
                        id.params.push((p.name.to_string(), v));
                    }
                }
                if let Some(input) = params.input() {
                    id.files.push(("input".into(), digest(input)?));
                }
            }
        }
        Ok(id)
    }

    /// The stencil of scalar cells of a library stencil or spec, a spec's
    /// `n[d]` bound to `size` where given, for the commands that time or
    /// model one (`signature`, `calibrate`, `simulate`): array cells run
    /// with `run` only, apps are `None`.
    pub fn scalar_stencil(&self, size: Option<&[usize]>) -> Result<Option<Stencil<f32>>, CliError> {
        let Target::Stencil(s) = self else {
            return Ok(None);
        };
        if let Some(n) = s.components() {
            return Err(CliError::ArrayCellsRunOnly {
                path: s.name().to_string(),
                n,
            });
        }
        Ok(Some(s.scalar_stencil(size)?))
    }
}

/// Auxiliary fields read from files: name and values over the global
/// domain.
pub type AuxFiles = Vec<(String, epsilod_apps::stencil_app::AuxValues)>;

/// The `--aux name=FILE.npy` fields, read and checked against the spec
/// (a field it declares, once each) and the run's size.
pub fn aux_files(given: &[String], target: &Target, size: &[usize]) -> Result<AuxFiles, CliError> {
    let declared = match target {
        Target::Stencil(s) => s.aux_fields(),
        Target::App(_) => Vec::new(),
    };
    let mut out = AuxFiles::new();
    for arg in given {
        let bad = |why: String| CliError::Aux {
            arg: arg.clone(),
            why,
        };
        let Some((name, path)) = arg.split_once('=').filter(|(_, p)| !p.is_empty()) else {
            return Err(bad("expected name=FILE.npy".into()));
        };
        if !declared.iter().any(|n| n == name) {
            return Err(bad(match declared.is_empty() {
                true => "the stencil declares no aux fields (a spec file's aux = { ... })".into(),
                false => format!("the spec declares aux fields {declared:?}, not '{name}'"),
            }));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(bad(format!("'{name}' is given twice")));
        }
        let a = epsilod::npy::read_as_f32(Path::new(path)).map_err(|e| bad(e.to_string()))?;
        if a.shape() != size {
            return Err(bad(format!(
                "the array is {:?}, the run's --size is {size:?}",
                a.shape()
            )));
        }
        out.push((name.to_string(), Arc::new(a)));
    }
    Ok(out)
}

/// The simulator's target: a library stencil or a spec (apps have cells
/// and steps of their own).
fn simulated(name: &str) -> Result<Target, CliError> {
    match Target::resolve(name)? {
        Target::App(app) => Err(CliError::Simulate(format!(
            "'{}' is an app: simulate covers library stencils and spec files",
            app.name()
        ))),
        t => Ok(t),
    }
}

/// The dimensions of a library or spec stencil, to read its `--size` with.
pub fn ndims_of(name: &str) -> Result<usize, CliError> {
    Ok(simulated(name)?.app().ndims())
}

/// The stencil of a library or spec run over a global array of `size`
/// (a spec's `n[d]` bound to it).
pub fn stencil_of(name: &str, size: &[usize]) -> Result<Stencil<f32>, CliError> {
    Ok(simulated(name)?
        .scalar_stencil(Some(size))?
        .expect("library stencils and specs have one"))
}
