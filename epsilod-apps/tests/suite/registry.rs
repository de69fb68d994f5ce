//! The app registry and its parameters: names found, defaults taken, and
//! every wrong parameter named in its error; library stencils and spec
//! files as apps.

use epsilod::{AnySpec, Library};
use epsilod_apps::{all, find, App, ParamError, Params, StencilApp};

#[test]
fn params_take_defaults_and_say_what_is_wrong() {
    let w = find("wavesim").unwrap();
    assert_eq!(Params::parse(w, &[]).unwrap().get("dt"), Ok(0.25));
    assert_eq!(
        Params::parse(w, &["dt=0.1".into()]).unwrap().get("dt"),
        Ok(0.1)
    );
    assert_eq!(
        Params::parse(w, &[]).unwrap().get("dx"),
        Err(ParamError::Unknown {
            app: "wavesim".into(),
            name: "dx".into()
        })
    );
    for (bad, why) in [
        ("dt", "write name=value"),
        ("step=1", "wavesim takes dt"),
        ("dt=fast", "not a finite number"),
        ("dt=inf", "not a finite number"),
    ] {
        assert!(
            Params::parse(w, &[bad.into()])
                .unwrap_err()
                .to_string()
                .contains(why),
            "{bad}"
        );
    }
    assert!(Params::parse(w, &["dt=1".into(), "dt=2".into()])
        .unwrap_err()
        .to_string()
        .contains("twice"));
    let g = find("gas-sim").unwrap();
    assert!(Params::parse(g, &["x=1".into()])
        .unwrap_err()
        .to_string()
        .contains("takes no parameters"));
}

#[test]
fn names_are_unique_and_found() {
    for a in all() {
        assert_eq!(find(a.name()).map(|f| f.name()), Some(a.name()));
        assert_eq!(all().iter().filter(|b| b.name() == a.name()).count(), 1);
        // Apps must not shadow library stencils.
        assert!(epsilod::Library::by_name(a.name()).is_none());
    }
    assert!(find("no-such-app").is_none());
}

#[test]
fn a_library_stencil_is_an_app_without_params() {
    let lib = Library::by_name("2d4").unwrap();
    let app = StencilApp::library("2d4", lib);
    assert_eq!((app.name(), app.ndims()), ("2d4", 2));
    assert_eq!(app.boundary(), lib.spec().boundary());
    assert!(app.check_size(&[2, 2]).is_ok());
    assert_eq!(
        Params::parse(&app, &["dt=1".into()])
            .unwrap_err()
            .to_string(),
        "--param is for apps; '2d4' takes none"
    );
    assert!(Params::parse(&app, &[]).is_ok());
    assert!(app.components().is_none() && app.aux_fields().is_empty());
}

#[test]
fn array_cells_of_a_count_not_built_are_refused() {
    let text = |n: usize| {
        let updates: Vec<String> = (0..n)
            .map(|k| format!("\"u[0,-1][{k}] + u[0,1][{k}]\""))
            .collect();
        format!(
            "name = \"v\"\ncell = {n}\nlow = [0, 1]\nhigh = [0, 1]\nupdate = [{}]\n",
            updates.join(", ")
        )
    };
    let dir = tempfile::tempdir().unwrap();
    for (n, ok) in [(2, true), (5, false)] {
        let path = dir.path().join(format!("v{n}.toml"));
        std::fs::write(&path, text(n)).unwrap();
        let spec = AnySpec::load(&path).unwrap();
        match StencilApp::spec("v.toml", spec) {
            Ok(app) => assert!(ok && app.components() == Some(n)),
            Err(e) => assert!(
                !ok && e
                    .to_string()
                    .starts_with("v.toml has cells of 5 components"),
                "{e}"
            ),
        }
    }
}
