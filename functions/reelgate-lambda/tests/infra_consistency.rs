//! Keeps `infra/template.yaml`, the Lambda binaries (`src/bin/`), the crate's manifest
//! (`reelgate_lambda::functions`), the router's `API_ROUTES` and the state machine's
//! placeholders in agreement. Offline: it reads files only.

use reelgate_lambda::functions::{stream_logical_id, Serves, FUNCTIONS};
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn template() -> Value {
    let path = repo().join("infra/template.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

/// CloudFormation's short-form tags (`!Ref X`) read as tagged values; this gives `(tag, value)`.
fn tagged(v: &Value) -> Option<(String, &Value)> {
    match v {
        Value::Tagged(t) => Some((t.tag.to_string(), &t.value)),
        _ => None,
    }
}

fn resources(t: &Value) -> Vec<(String, &Value)> {
    t["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .map(|(k, v)| (k.as_str().expect("logical id").to_owned(), v))
        .collect()
}

/// Serverless functions: logical id → resource.
fn functions(t: &Value) -> BTreeMap<String, &Value> {
    resources(t)
        .into_iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .collect()
}

fn binary_of(resource: &Value) -> Option<&str> {
    resource["Metadata"]["BuildProperties"]["Binary"].as_str()
}

fn bin_dir_binaries() -> BTreeSet<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    std::fs::read_dir(&dir)
        .expect("src/bin")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".rs"))
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn every_function_has_a_binary_and_every_binary_a_function() {
    let t = template();
    let fns = functions(&t);
    let mut template_binaries = BTreeSet::new();
    for (id, r) in &fns {
        let binary =
            binary_of(r).unwrap_or_else(|| panic!("{id} has no Metadata.BuildProperties.Binary"));
        assert_eq!(
            r["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{id}: BuildMethod"
        );
        template_binaries.insert(binary.to_owned());
    }
    let on_disk = bin_dir_binaries();
    let manifest: BTreeSet<String> = FUNCTIONS.iter().map(|f| f.binary.to_owned()).collect();
    assert_eq!(
        template_binaries, on_disk,
        "binaries named by the template vs src/bin/*.rs"
    );
    assert_eq!(
        manifest, on_disk,
        "reelgate_lambda::functions::FUNCTIONS vs src/bin/*.rs"
    );

    // Exactly the manifest's functions (and the streaming twins), each on its binary.
    let mut expected = BTreeMap::new();
    for f in FUNCTIONS {
        expected.insert(f.logical_id.to_owned(), f.binary);
        if let Some(twin) = stream_logical_id(f) {
            expected.insert(twin, f.binary);
        }
    }
    let actual: BTreeMap<String, &str> = fns
        .iter()
        .map(|(id, r)| (id.clone(), binary_of(r).unwrap_or_default()))
        .collect();
    assert_eq!(
        actual, expected,
        "template functions (logical id → binary) vs the manifest"
    );
}

#[test]
fn functions_run_rust_bootstraps_on_arm64() {
    let t = template();
    let globals = &t["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Handler"].as_str(), Some("bootstrap"));
    assert_eq!(globals["Architectures"][0].as_str(), Some("arm64"));
    for (id, r) in functions(&t) {
        let props = &r["Properties"];
        for key in ["Runtime", "Architectures", "Handler"] {
            assert!(props.get(key).is_none(), "{id} overrides the global {key}");
        }
    }
}

#[test]
fn streaming_functions_are_function_urls_in_response_stream_mode() {
    let t = template();
    let fns = functions(&t);
    for f in FUNCTIONS {
        let Some(twin) = stream_logical_id(f) else {
            continue;
        };
        let r = fns
            .get(&twin)
            .unwrap_or_else(|| panic!("{twin} (streams {}) is missing", f.binary));
        let url = &r["Properties"]["FunctionUrlConfig"];
        assert_eq!(
            url["InvokeMode"].as_str(),
            Some("RESPONSE_STREAM"),
            "{twin}"
        );
        assert_eq!(
            r["Properties"]["Environment"]["Variables"][reelgate_lambda::RESPONSE_STREAM_ENV]
                .as_str(),
            Some("1"),
            "{twin} must run lambda_http in streaming mode"
        );
        // A streaming function speaks the streaming prelude, which an HTTP API cannot read.
        assert!(
            r["Properties"].get("Events").is_none(),
            "{twin} must not have API events"
        );
    }
}

/// Every (method, path) of the template's HttpApi events, with the function it is on.
fn api_events(t: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (id, r) in functions(t) {
        let Some(events) = r["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, e) in events {
            if e["Type"].as_str() != Some("HttpApi") {
                continue;
            }
            let p = &e["Properties"];
            let api = tagged(&p["ApiId"])
                .map(|(tag, v)| (tag, v.as_str().unwrap_or_default().to_owned()));
            assert_eq!(
                api,
                Some(("!Ref".to_owned(), "Api".to_owned())),
                "{id}: every route is on the one HTTP API"
            );
            out.push((
                p["Method"].as_str().unwrap_or_default().to_uppercase(),
                p["Path"].as_str().unwrap_or_default().to_owned(),
                id.clone(),
            ));
        }
    }
    out
}

#[test]
fn every_route_has_an_api_event_and_every_event_a_route() {
    let t = template();
    let events = api_events(&t);
    let event_routes: BTreeSet<(String, String)> = events
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect();
    assert_eq!(
        event_routes.len(),
        events.len(),
        "a route has two API events: {events:?}"
    );
    let api_routes: BTreeSet<(String, String)> = reelgate::api::API_ROUTES
        .iter()
        .filter(|(_, p)| p.starts_with("/v1/"))
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    let missing: Vec<_> = api_routes.difference(&event_routes).collect();
    let extra: Vec<_> = event_routes.difference(&api_routes).collect();
    assert!(
        missing.is_empty(),
        "routes without an HttpApi event in infra/template.yaml: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "HttpApi events for routes the router does not list: {extra:?}"
    );
    // Each event is on the function the manifest gives its path.
    for (method, path, id) in &events {
        let f = reelgate_lambda::functions::for_path(path).unwrap_or_else(|| {
            panic!("{method} {path}: no binary in the manifest serves this path")
        });
        assert_eq!(
            &f.logical_id, id,
            "{method} {path} is routed to the wrong function"
        );
    }
    // Every HTTP function of the manifest has its path in API_ROUTES.
    for f in FUNCTIONS {
        if let Serves::Http { path, .. } = f.serves {
            assert!(
                reelgate::api::API_ROUTES.iter().any(|(_, p)| *p == path),
                "{} serves {path}, which API_ROUTES does not list",
                f.binary
            );
        }
    }
}

#[test]
fn every_asl_placeholder_has_a_substitution_and_every_substitution_a_placeholder() {
    let t = template();
    let machine = resources(&t)
        .into_iter()
        .find(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::StateMachine"))
        .map(|(_, r)| r)
        .expect("a state machine");
    let props = &machine["Properties"];
    let uri = props["DefinitionUri"].as_str().expect("DefinitionUri");
    let asl_path = repo().join("infra").join(uri);
    let text = std::fs::read_to_string(&asl_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", asl_path.display()));
    assert_eq!(
        asl_path.canonicalize().ok(),
        repo()
            .join("statemachine/video.asl.json")
            .canonicalize()
            .ok(),
        "the template deploys statemachine/video.asl.json"
    );
    let placeholders = reelgate_asl::placeholders(&text);
    let subs = props["DefinitionSubstitutions"]
        .as_mapping()
        .expect("DefinitionSubstitutions");
    let names: BTreeSet<String> = subs
        .keys()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        placeholders, names,
        "ASL placeholders vs DefinitionSubstitutions"
    );
    // Each step placeholder points at the function running that step.
    for f in FUNCTIONS {
        if let Serves::Step { placeholder, .. } = f.serves {
            let v = &subs[placeholder];
            let (tag, target) =
                tagged(v).unwrap_or_else(|| panic!("{placeholder} is not a !GetAtt"));
            assert_eq!(tag, "!GetAtt", "{placeholder}");
            assert_eq!(
                target.as_str(),
                Some(format!("{}.Arn", f.logical_id).as_str()),
                "{placeholder}"
            );
        }
    }
    // The local host fills the same placeholders.
    let local: BTreeSet<String> = reelgate_embedded::workflow::local_substitutions()
        .into_keys()
        .collect();
    assert_eq!(
        placeholders, local,
        "ASL placeholders vs the local host's substitutions"
    );
}

#[test]
fn the_table_matches_the_table_design() {
    let t = template();
    let tables: Vec<_> = resources(&t)
        .into_iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::DynamoDB::Table"))
        .collect();
    assert_eq!(tables.len(), 1, "docs/table-design.md: one table");
    let p = &tables[0].1["Properties"];
    assert_eq!(p["BillingMode"].as_str(), Some("PAY_PER_REQUEST"));
    assert_eq!(
        p["TimeToLiveSpecification"]["AttributeName"].as_str(),
        Some(reelgate::ports::store::EXPIRES_AT)
    );
    assert_eq!(
        p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"].as_bool(),
        Some(true)
    );
    let keys: Vec<(&str, &str)> = p["KeySchema"]
        .as_sequence()
        .expect("KeySchema")
        .iter()
        .map(|k| {
            (
                k["AttributeName"].as_str().unwrap_or_default(),
                k["KeyType"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (reelgate::ports::store::PK, "HASH"),
            (reelgate::ports::store::SK, "RANGE")
        ]
    );
    assert!(p.get("GlobalSecondaryIndexes").is_none() && p.get("LocalSecondaryIndexes").is_none());
}
