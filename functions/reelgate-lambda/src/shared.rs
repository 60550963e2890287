//! How a shared bootstrap ([`functions::SharedBootstrap`]) becomes the function it is deployed
//! as: the name in [`functions::FUNCTION_ENV`] picks its member.

use crate::functions::{self, LambdaFunction, SharedBootstrap};

/// The member of `shared` that [`functions::FUNCTION_ENV`] names; a missing or unknown name ends
/// the process at init, saying which names it takes (a template error, not a request's).
pub(crate) fn selected_member(shared: &SharedBootstrap) -> &'static LambdaFunction {
    let name = std::env::var(functions::FUNCTION_ENV).unwrap_or_default();
    match shared.member(&name) {
        Some(function) => function,
        None => {
            eprintln!(
                "{}={name:?} is not a function of the {} bootstrap; it runs one of: {}",
                functions::FUNCTION_ENV,
                shared.binary,
                shared.member_names().join(", ")
            );
            std::process::exit(1);
        }
    }
}

/// A manifest error in a shared bootstrap's members: say which, at init.
pub(crate) fn not_runnable(function: &LambdaFunction, why: &str) -> ! {
    eprintln!(
        "{} is in a shared bootstrap but cannot run there: {why}",
        function.binary
    );
    std::process::exit(1);
}

#[cfg(test)]
mod tests {
    use crate::functions::{FUNCTIONS, PIPELINE, SHARED_BOOTSTRAPS};
    use std::collections::BTreeSet;

    /// Each member of each shared bootstrap is selected by its name, and is something that
    /// bootstrap runs; no function is in two, and no other name selects one.
    #[test]
    fn every_member_is_selected_by_its_name_and_runs_there() {
        let mut seen = BTreeSet::new();
        for shared in SHARED_BOOTSTRAPS {
            assert!(
                FUNCTIONS.iter().all(|f| f.binary != shared.binary),
                "{} is a function's name as well as a shared bootstrap's",
                shared.binary
            );
            for f in shared.members {
                assert!(seen.insert(f.binary), "{} is in two bootstraps", f.binary);
                let selected = shared
                    .member(f.binary)
                    .unwrap_or_else(|| panic!("{} is not selectable", f.binary));
                assert_eq!(selected.logical_id, f.logical_id, "{}", f.binary);
                let runnable = if shared.binary == PIPELINE.binary {
                    crate::pipeline::runs(f)
                } else {
                    f.serves.http_routes().is_some()
                };
                assert!(runnable, "{} cannot run in {}", f.binary, shared.binary);
            }
            for f in FUNCTIONS {
                if !shared.members.iter().any(|m| m.binary == f.binary) {
                    assert!(shared.member(f.binary).is_none(), "{}", f.binary);
                }
            }
            assert!(shared.member("").is_none());
        }
    }
}
