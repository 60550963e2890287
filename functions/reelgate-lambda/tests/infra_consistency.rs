//! Keeps `infra/template.yaml`, the Lambda binaries (`src/bin/`), the crate's manifest
//! (`reelgate_lambda::functions`), the router's `API_ROUTES` and the state machine's
//! placeholders in agreement. Offline: it reads files only.

use reelgate_lambda::functions::{bootstrap, stream_logical_id, Serves, FUNCTIONS};
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
            Some("makefile"),
            "{id}: BuildMethod (functions/reelgate-lambda/Makefile)"
        );
        template_binaries.insert(binary.to_owned());
    }
    let on_disk = bin_dir_binaries();
    let manifest: BTreeSet<String> = reelgate_lambda::functions::bootstraps()
        .into_iter()
        .map(str::to_owned)
        .collect();
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
        expected.insert(f.logical_id.to_owned(), bootstrap(f));
        if let Some(twin) = stream_logical_id(f) {
            expected.insert(twin, bootstrap(f));
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
    // A function of a shared bootstrap (and its streaming twin) is told which it is, and no
    // other function is.
    for f in FUNCTIONS {
        let shared = reelgate_lambda::functions::shared_bootstrap(f).is_some();
        for id in std::iter::once(f.logical_id.to_owned()).chain(stream_logical_id(f)) {
            let named = fns[&id]["Properties"]["Environment"]["Variables"]
                [reelgate_lambda::functions::FUNCTION_ENV]
                .as_str();
            assert_eq!(
                named,
                shared.then_some(f.binary),
                "{id}: {}",
                reelgate_lambda::functions::FUNCTION_ENV
            );
        }
    }
}

/// `sam build` runs `make build-<LogicalId>` in each function's CodeUri with this crate's
/// Makefile, which names each function's binary once more (SAM hands make nothing but the
/// logical id): both lists, the build's architecture and its profile must agree with the
/// template and Cargo.toml, or a deploy would ship another function's code, the wrong
/// architecture or the larger release profile.
#[test]
fn the_makefile_builds_every_function_from_its_binary_with_the_lambda_profile() {
    let t = template();
    assert_eq!(
        t["Globals"]["Function"]["CodeUri"].as_str(),
        Some("../functions/reelgate-lambda"),
        "Globals.Function.CodeUri: where SAM looks for the Makefile"
    );
    let makefile =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Makefile"))
            .expect("functions/reelgate-lambda/Makefile");
    let assignment = |line: &str| {
        let (name, value) = line.split_once(":=")?;
        Some((name.trim().to_owned(), value.trim().to_owned()))
    };
    let variables: BTreeMap<String, String> = makefile.lines().filter_map(assignment).collect();
    let in_makefile: BTreeMap<String, String> = variables
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("BINARY_")?.to_owned(), v.clone())))
        .collect();
    let fns = functions(&t);
    let in_template: BTreeMap<String, String> = fns
        .iter()
        .map(|(id, r)| (id.clone(), binary_of(r).unwrap_or_default().to_owned()))
        .collect();
    assert_eq!(
        in_makefile, in_template,
        "Makefile BINARY_<logical id> vs the template's Metadata.BuildProperties.Binary"
    );
    for (id, r) in &fns {
        assert!(
            r["Properties"].get("CodeUri").is_none(),
            "{id} overrides the global CodeUri"
        );
    }
    let triple = match t["Globals"]["Function"]["Architectures"][0].as_str() {
        Some("arm64") => "aarch64-unknown-linux-gnu",
        Some("x86_64") => "x86_64-unknown-linux-gnu",
        other => panic!("Architectures {other:?}"),
    };
    assert_eq!(
        variables.get("TARGET").map(String::as_str),
        Some(triple),
        "the Makefile's TARGET vs the template's Architectures"
    );
    // The profile whose sizes docs/cost.md reports (scripts/lambda-artifacts.sh --profile lambda).
    assert_eq!(variables.get("PROFILE").map(String::as_str), Some("lambda"));
    let cargo_toml = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        cargo_toml.contains("[profile.lambda]"),
        "Cargo.toml has no lambda profile"
    );
    let recipe = makefile
        .split_once("build-%:")
        .map(|(_, r)| r)
        .expect("a build-% rule");
    for piece in [
        "--profile $(PROFILE)",
        "--target $(TARGET).2.17",
        "--bins",
        // cargo-lambda moves every binary it builds to <lambda dir>/<binary>/bootstrap: the
        // copy must take it from there (the first whole-stack sam build failed copying from
        // cargo's own output directory, which cargo-lambda had emptied).
        "--lambda-dir $(BOOTSTRAPS)",
        "$(BOOTSTRAPS)/$(BINARY_$*)/bootstrap $(ARTIFACTS_DIR)/bootstrap",
    ] {
        assert!(recipe.contains(piece), "the build-% recipe lacks `{piece}`");
    }
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
    // Each console function takes every method of its paths; no other function takes a path
    // under /console.
    let expected_console: BTreeSet<(String, String, String)> = FUNCTIONS
        .iter()
        .filter_map(|f| match f.serves {
            Serves::Console { paths, .. } => Some((f.logical_id, paths)),
            _ => None,
        })
        .flat_map(|(id, paths)| {
            paths
                .iter()
                .map(move |p| ("ANY".to_owned(), p.to_string(), id.to_owned()))
        })
        .collect();
    let console_events: BTreeSet<(String, String, String)> = events
        .iter()
        .filter(|(_, p, _)| p == "/console" || p.starts_with("/console/"))
        .cloned()
        .collect();
    assert_eq!(
        console_events, expected_console,
        "the console's HttpApi events: ANY on each path of each console function, on that function"
    );
    let events: Vec<(String, String, String)> = events
        .into_iter()
        .filter(|(_, p, _)| p != "/console" && !p.starts_with("/console/"))
        .collect();
    let event_routes: BTreeSet<(String, String)> = events
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect();
    assert_eq!(
        event_routes.len(),
        events.len(),
        "a route has two API events: {events:?}"
    );
    // Every listed route (the /v1 API and /openapi.json) has its HttpApi event.
    let api_routes: BTreeSet<(String, String)> = reelgate::api::API_ROUTES
        .iter()
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

// ---------------------------------------------------------------- the front door (issue 18)

/// CloudFront's managed policies the front door's behaviours use.
const CACHING_DISABLED: &str = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";
const ALL_VIEWER_EXCEPT_HOST_HEADER: &str = "b689b0a8-53d0-40ab-baf2-68738e2966ac";
const ALL_METHODS: [&str; 7] = ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"];

/// A value with its tags, as text: enough to see which resource a nested intrinsic names.
fn text(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_default()
}

fn resource<'a>(t: &'a Value, id: &str) -> &'a Value {
    let r = &t["Resources"][id];
    assert!(!r.is_null(), "infra/template.yaml has no {id}");
    r
}

fn of_type<'a>(t: &'a Value, ty: &str) -> Vec<(String, &'a Value)> {
    resources(t)
        .into_iter()
        .filter(|(_, r)| r["Type"].as_str() == Some(ty))
        .collect()
}

fn distribution(t: &Value) -> &Value {
    let all = of_type(t, "AWS::CloudFront::Distribution");
    assert_eq!(all.len(), 1, "one distribution, the one front door");
    &all[0].1["Properties"]["DistributionConfig"]
}

/// CloudFront's path pattern match: `*` any run of characters, `?` one, case-sensitive.
fn path_pattern_matches(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some((b'?', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

/// The behaviour CloudFront picks for `path`: the first cache behaviour whose pattern matches,
/// else the default one.
fn behaviour_for<'a>(d: &'a Value, path: &str) -> &'a Value {
    d["CacheBehaviors"]
        .as_sequence()
        .into_iter()
        .flatten()
        .find(|b| path_pattern_matches(b["PathPattern"].as_str().unwrap_or_default(), path))
        .unwrap_or(&d["DefaultCacheBehavior"])
}

fn origin<'a>(d: &'a Value, id: &str) -> &'a Value {
    d["Origins"]
        .as_sequence()
        .expect("Origins")
        .iter()
        .find(|o| o["Id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no origin {id}"))
}

/// A concrete request path for a route template (`{file_id}` → `file-abc123`).
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            seg.strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .map(|name| format!("{name}-abc123"))
                .unwrap_or_else(|| seg.to_owned())
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Where an origin sends requests: `Some(twin)` for a streaming function's URL, `None` for the
/// HTTP API (panics on anything else).
fn origin_target(o: &Value) -> Option<String> {
    let domain = text(&o["DomainName"]);
    if domain.contains("ApiOriginDomain") {
        return None;
    }
    for f in FUNCTIONS {
        if let Some(twin) = stream_logical_id(f) {
            if domain.contains(&format!("{twin}Url.FunctionUrl")) {
                return Some(twin);
            }
        }
    }
    panic!(
        "origin {} goes neither to the HTTP API nor to a streaming function URL: {domain}",
        o["Id"].as_str().unwrap_or_default()
    )
}

#[test]
fn the_front_door_routes_streaming_paths_to_function_urls_and_everything_else_to_the_api() {
    let t = template();
    let d = distribution(&t);
    let mut checked = 0;
    for (method, path) in reelgate::api::API_ROUTES.iter() {
        let f = reelgate_lambda::functions::for_path(path)
            .unwrap_or_else(|| panic!("{method} {path}: no binary in the manifest serves it"));
        let b = behaviour_for(d, &concrete(path));
        let target = b["TargetOriginId"].as_str().expect("TargetOriginId");
        let streams = matches!(f.serves, Serves::Http { stream: true, .. });
        let expected = streams.then(|| stream_logical_id(f).expect("twin"));
        assert_eq!(
            origin_target(origin(d, target)),
            expected,
            "{method} {path} goes to origin {target}"
        );
        let allowed: Vec<&str> = b["AllowedMethods"]
            .as_sequence()
            .expect("AllowedMethods")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            allowed.contains(method),
            "{method} {path} is not allowed by its behaviour"
        );
        checked += 1;
    }
    assert_eq!(checked, reelgate::api::API_ROUTES.len());
    // Every streaming path has a behaviour of its own, on its twin's URL.
    for f in FUNCTIONS {
        if let (
            Serves::Http {
                path, stream: true, ..
            },
            Some(twin),
        ) = (f.serves, stream_logical_id(f))
        {
            let b = behaviour_for(d, path);
            assert_eq!(
                b["PathPattern"].as_str(),
                Some(path),
                "{path} has its own behaviour"
            );
            assert_eq!(
                origin_target(origin(d, b["TargetOriginId"].as_str().unwrap())),
                Some(twin)
            );
        }
    }
    // The console's chat goes to the console's chat function; the rest of the console (its
    // other JSON routes included) to the HTTP API.
    let console_chat = FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::ConsoleChat { .. }))
        .expect("the console's chat function");
    let stream_path = reelgate_lambda::functions::CONSOLE_STREAM_PATH;
    assert!(
        reelgate::api::CONSOLE_ROUTES.contains(&("POST", stream_path)),
        "{stream_path} is a console route"
    );
    let b = behaviour_for(d, stream_path);
    assert_eq!(b["PathPattern"].as_str(), Some(stream_path));
    assert_eq!(
        origin_target(origin(d, b["TargetOriginId"].as_str().unwrap())),
        stream_logical_id(console_chat)
    );
    for path in [
        "/console/api/chat/models",
        "/console/api/videos",
        "/console/api/session",
    ] {
        let b = behaviour_for(d, path);
        assert_eq!(
            origin_target(origin(d, b["TargetOriginId"].as_str().unwrap())),
            None,
            "{path}"
        );
    }
    // Paths outside the API (the console, the health check) reach the HTTP API.
    for path in ["/console", "/console/login", "/health", "/v1/unknown"] {
        let b = behaviour_for(d, path);
        assert_eq!(
            origin_target(origin(d, b["TargetOriginId"].as_str().unwrap())),
            None,
            "{path}"
        );
    }
    // A streaming pattern must not catch the routes below it (GET /v1/responses/{id}).
    assert_eq!(
        origin_target(origin(
            d,
            behaviour_for(d, "/v1/responses/resp-1")["TargetOriginId"]
                .as_str()
                .unwrap()
        )),
        None
    );
}

#[test]
fn every_behaviour_is_uncached_takes_every_method_and_relays_the_callers_headers() {
    let t = template();
    let d = distribution(&t);
    let relay = resource(&t, "RelayAuthorizationFunction");
    assert_eq!(relay["Type"].as_str(), Some("AWS::CloudFront::Function"));
    let code = relay["Properties"]["FunctionCode"]
        .as_str()
        .expect("FunctionCode");
    assert!(
        code.contains(reelgate::api::origin::RELAYED_AUTHORIZATION_HEADER),
        "the relay function writes the header the service reads"
    );
    let behaviours: Vec<&Value> = std::iter::once(&d["DefaultCacheBehavior"])
        .chain(d["CacheBehaviors"].as_sequence().into_iter().flatten())
        .collect();
    assert!(behaviours.len() >= 3);
    for b in behaviours {
        let name = b["PathPattern"].as_str().unwrap_or("default");
        assert_eq!(
            b["CachePolicyId"].as_str(),
            Some(CACHING_DISABLED),
            "{name}: caching off"
        );
        assert_eq!(
            b["OriginRequestPolicyId"].as_str(),
            Some(ALL_VIEWER_EXCEPT_HOST_HEADER),
            "{name}: every header, cookie and query string the caller sent goes on"
        );
        let methods: BTreeSet<&str> = b["AllowedMethods"]
            .as_sequence()
            .expect("AllowedMethods")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            methods,
            ALL_METHODS.into_iter().collect(),
            "{name}: all methods"
        );
        assert_eq!(
            b["ViewerProtocolPolicy"].as_str(),
            Some("https-only"),
            "{name}"
        );
        assert_eq!(
            b["Compress"].as_bool(),
            Some(false),
            "{name}: compression holds SSE back"
        );
        let viewer: Vec<&Value> = b["FunctionAssociations"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter(|a| a["EventType"].as_str() == Some("viewer-request"))
            .collect();
        assert_eq!(
            viewer.len(),
            1,
            "{name}: the relay runs on the viewer request"
        );
        assert!(
            text(&viewer[0]["FunctionARN"])
                .contains("RelayAuthorizationFunction.FunctionMetadata.FunctionARN"),
            "{name}"
        );
        // Toward a signed function URL, the payload hash is added at the origin request.
        let target = b["TargetOriginId"].as_str().unwrap();
        if origin_target(origin(d, target)).is_some() {
            let edge = &b["LambdaFunctionAssociations"][0];
            assert_eq!(edge["EventType"].as_str(), Some("origin-request"), "{name}");
            assert_eq!(edge["IncludeBody"].as_bool(), Some(true), "{name}");
            assert!(
                text(&edge["LambdaFunctionARN"]).contains("PayloadHashFunctionVersion"),
                "{name}"
            );
        }
    }
}

#[test]
fn function_urls_are_aws_iam_signed_by_origin_access_control_for_the_distribution_only() {
    let t = template();
    let d = distribution(&t);
    // No function URL is open to the internet.
    let mut urls = 0;
    for (id, r) in functions(&t) {
        let url = &r["Properties"]["FunctionUrlConfig"];
        if !url.is_null() {
            urls += 1;
            assert_eq!(url["AuthType"].as_str(), Some("AWS_IAM"), "{id}");
        }
    }
    for (id, r) in of_type(&t, "AWS::Lambda::Url") {
        assert_eq!(
            r["Properties"]["AuthType"].as_str(),
            Some("AWS_IAM"),
            "{id}"
        );
    }
    assert!(urls >= 2, "the streaming twins have function URLs");
    // The OAC signs every request to a Lambda origin.
    let oacs = of_type(&t, "AWS::CloudFront::OriginAccessControl");
    assert_eq!(oacs.len(), 1);
    let (oac_id, oac) = &oacs[0];
    let c = &oac["Properties"]["OriginAccessControlConfig"];
    assert_eq!(c["OriginAccessControlOriginType"].as_str(), Some("lambda"));
    assert_eq!(c["SigningBehavior"].as_str(), Some("always"));
    assert_eq!(c["SigningProtocol"].as_str(), Some("sigv4"));
    for o in d["Origins"].as_sequence().expect("Origins") {
        let oac_ref = text(&o["OriginAccessControlId"]);
        match origin_target(o) {
            Some(twin) => {
                assert!(
                    oac_ref.contains(&format!("{oac_id}.Id")),
                    "{twin}'s origin is signed"
                );
                // Invoke permission for the distribution and nobody else.
                let perms: Vec<(String, &Value)> = of_type(&t, "AWS::Lambda::Permission")
                    .into_iter()
                    .filter(|(_, p)| text(&p["Properties"]["FunctionName"]).contains(&twin))
                    .collect();
                let actions: BTreeSet<&str> = perms
                    .iter()
                    .filter_map(|(_, p)| p["Properties"]["Action"].as_str())
                    .collect();
                assert_eq!(
                    actions,
                    ["lambda:InvokeFunction", "lambda:InvokeFunctionUrl"]
                        .into_iter()
                        .collect(),
                    "{twin}"
                );
                for (pid, p) in &perms {
                    let p = &p["Properties"];
                    assert_eq!(
                        p["Principal"].as_str(),
                        Some("cloudfront.amazonaws.com"),
                        "{pid}"
                    );
                    let source = text(&p["SourceArn"]);
                    assert!(
                        source.contains(":distribution/${Distribution}"),
                        "{pid} is scoped to the distribution: {source}"
                    );
                    match p["Action"].as_str() {
                        Some("lambda:InvokeFunctionUrl") => {
                            assert_eq!(p["FunctionUrlAuthType"].as_str(), Some("AWS_IAM"), "{pid}")
                        }
                        _ => assert_eq!(p["InvokedViaFunctionUrl"].as_bool(), Some(true), "{pid}"),
                    }
                }
            }
            None => assert!(
                o["OriginAccessControlId"].is_null(),
                "the HTTP API is not a Lambda origin"
            ),
        }
    }
    // Streamed answers get long read timeouts.
    let default_timeout = t["Parameters"]["StreamReadTimeout"]["Default"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        default_timeout >= 60,
        "StreamReadTimeout default {default_timeout}"
    );
    for o in d["Origins"].as_sequence().unwrap() {
        if origin_target(o).is_some() {
            assert_eq!(
                tagged(&o["CustomOriginConfig"]["OriginReadTimeout"])
                    .map(|(tag, v)| (tag, v.as_str().map(str::to_owned))),
                Some(("!Ref".to_owned(), Some("StreamReadTimeout".to_owned())))
            );
        }
    }
}

#[test]
fn every_origin_gets_the_origin_secret_from_secrets_manager_and_every_api_function_reads_it() {
    let t = template();
    let d = distribution(&t);
    let secret = resource(&t, "OriginSecret");
    assert_eq!(secret["Type"].as_str(), Some("AWS::SecretsManager::Secret"));
    assert_eq!(
        secret["Properties"]["GenerateSecretString"]["GenerateStringKey"].as_str(),
        Some("REELGATE_ORIGIN_SECRET"),
        "the secret holds the variable the service reads"
    );
    let length = secret["Properties"]["GenerateSecretString"]["PasswordLength"]
        .as_u64()
        .unwrap_or(0);
    assert!(length as usize >= reelgate::config::ORIGIN_SECRET_MIN_LEN);
    for o in d["Origins"].as_sequence().expect("Origins") {
        let headers: Vec<&Value> = o["OriginCustomHeaders"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter(|h| {
                h["HeaderName"].as_str() == Some(reelgate::api::origin::ORIGIN_SECRET_HEADER)
            })
            .collect();
        assert_eq!(
            headers.len(),
            1,
            "origin {} carries the origin secret",
            o["Id"].as_str().unwrap_or_default()
        );
        // A dynamic reference, never the value itself.
        let (tag, value) = tagged(&headers[0]["HeaderValue"]).expect("a !Sub");
        assert_eq!(tag, "!Sub");
        assert_eq!(
            value.as_str(),
            Some("{{resolve:secretsmanager:${OriginSecret}:SecretString:REELGATE_ORIGIN_SECRET}}")
        );
    }
    for (id, r) in functions(&t) {
        let is_api = FUNCTIONS.iter().any(|f| {
            f.serves.http_routes().is_some()
                && (f.logical_id == id || stream_logical_id(f).as_deref() == Some(id.as_str()))
        });
        let env = &r["Properties"]["Environment"]["Variables"]["REELGATE_ORIGIN_SECRET_ARN"];
        let policies = text(&r["Properties"]["Policies"]);
        if is_api {
            assert_eq!(
                tagged(env).map(|(tag, v)| (tag, v.as_str().map(str::to_owned))),
                Some(("!Ref".to_owned(), Some("OriginSecret".to_owned()))),
                "{id} checks the origin secret"
            );
            assert!(
                policies.contains("AWSSecretsManagerGetSecretValuePolicy")
                    && policies.contains("OriginSecret"),
                "{id} may read the origin secret"
            );
        } else {
            assert!(
                env.is_null() && !policies.contains("OriginSecret"),
                "{id} serves no HTTP and needs no origin secret"
            );
        }
    }
    assert!(
        text(&t["Outputs"]["BaseUrl"]["Value"]).contains("${Distribution.DomainName}"),
        "the one base URL is the distribution's"
    );
}

#[test]
fn the_payload_hash_function_is_the_same_in_both_templates() {
    let t = template();
    let path = repo().join("infra/edge-payload-hash.yaml");
    let edge: Value = serde_yaml::from_str(&std::fs::read_to_string(&path).expect("edge template"))
        .expect("edge template YAML");
    for id in [
        "PayloadHashFunction",
        "PayloadHashRole",
        "PayloadHashFunctionVersion",
    ] {
        let mut main = resource(&t, id).clone();
        if let Some(m) = main.as_mapping_mut() {
            m.remove("Condition");
        }
        assert_eq!(
            &main,
            resource(&edge, id),
            "{id} differs between the two templates"
        );
    }
}

#[test]
fn the_front_door_options_are_optional_and_complete() {
    let t = template();
    let d = distribution(&t);
    // A custom domain: aliases and an ACM certificate, only when a domain is given.
    let aliases = text(&d["Aliases"]);
    assert!(
        aliases.contains("HasCustomDomain") && aliases.contains("DomainName"),
        "{aliases}"
    );
    let cert = text(&d["ViewerCertificate"]);
    assert!(
        cert.contains("CertificateArn") && cert.contains("sni-only"),
        "{cert}"
    );
    let base = text(&t["Outputs"]["BaseUrl"]["Value"]);
    assert!(
        base.contains("${DomainName}"),
        "BaseUrl follows the custom domain: {base}"
    );
    // WAF: conditional, a rate-based rule per client IP and the AWS managed common rule set.
    let acl = resource(&t, "FrontDoorWebAcl");
    assert_eq!(acl["Condition"].as_str(), Some("HasWebAcl"));
    assert_eq!(acl["Properties"]["Scope"].as_str(), Some("CLOUDFRONT"));
    let rules = text(&acl["Properties"]["Rules"]);
    assert!(
        rules.contains("RateBasedStatement") && rules.contains("AggregateKeyType: IP"),
        "{rules}"
    );
    assert!(rules.contains("AWSManagedRulesCommonRuleSet"), "{rules}");
    assert!(text(&d["WebACLId"]).contains("FrontDoorWebAcl"));
    // Access logs: their own bucket, with their own retention.
    let logs = resource(&t, "AccessLogBucket");
    assert_eq!(logs["Condition"].as_str(), Some("HasAccessLogs"));
    assert!(text(&logs["Properties"]["LifecycleConfiguration"]).contains("AccessLogRetentionDays"));
    assert!(text(&d["Logging"]).contains("AccessLogBucket"));
}

#[test]
fn the_console_signs_in_through_the_user_pool_hosted_ui() {
    let t = template();
    let console = resource(&t, "ConsoleFunction");
    let env = &console["Properties"]["Environment"]["Variables"];
    let issuer = text(&env["REELGATE_OIDC_ISSUER"]);
    assert!(
        issuer.contains("https://cognito-idp.${AWS::Region}.amazonaws.com/${ConsoleUserPool}"),
        "the issuer is the user pool's: {issuer}"
    );
    assert_eq!(
        tagged(&env["REELGATE_OIDC_CLIENT_ID"])
            .map(|(tag, v)| (tag, v.as_str().map(str::to_owned))),
        Some(("!Ref".to_owned(), Some("ConsoleUserPoolClient".to_owned()))),
        "the client id is the user pool client's"
    );
    let client = &resource(&t, "ConsoleUserPoolClient")["Properties"];
    assert_eq!(
        text(&client["AllowedOAuthFlows"]),
        text(&serde_yaml::from_str::<Value>("[code]").unwrap())
    );
    let scopes = text(&client["AllowedOAuthScopes"]);
    assert!(
        scopes.contains("openid") && scopes.contains("email"),
        "{scopes}"
    );
    assert_eq!(
        client["GenerateSecret"].as_bool(),
        Some(false),
        "a public client: PKCE, no secret in the function"
    );
    assert!(
        text(&client["CallbackURLs"]).contains("/console/oidc/callback"),
        "the callback is the console's"
    );
    let domain = &resource(&t, "ConsoleUserPoolDomain")["Properties"];
    assert!(text(&domain["UserPoolId"]).contains("ConsoleUserPool"));
    // Every REELGATE_* variable a function is given is one the service knows.
    for (id, r) in functions(&t) {
        if let Some(vars) = r["Properties"]["Environment"]["Variables"].as_mapping() {
            for (name, _) in vars {
                let name = name.as_str().unwrap_or_default();
                if name.starts_with("REELGATE_") {
                    assert!(
                        reelgate::config::VARIABLES
                            .iter()
                            .any(|(known, _)| *known == name),
                        "{id}: {name} is not a variable the service reads"
                    );
                }
            }
        }
    }
}

/// Issue #30: the PDF renderer function's memory size and timeout are the limits of
/// `reelgate::ports::pdf`, it reaches only `scratch/pdf/` and no table or secret, and every
/// function whose manifest entry declares the PDF port (with its streaming twin) names it in
/// `REELGATE_PDF_FUNCTION` and may invoke it, and only those.
#[test]
fn the_pdf_renderer_is_a_function_of_its_own_with_the_renderers_limits() {
    use reelgate::ports::pdf::{LIMIT_MEMORY_BYTES, LIMIT_SECONDS};
    use reelgate_lambda::ports::Port;
    let t = template();
    let renderer = FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::PdfRasterizer))
        .expect("a PDF renderer in the manifest");
    let r = resource(&t, renderer.logical_id);
    assert_eq!(binary_of(r), Some(renderer.binary));
    let props = &r["Properties"];
    assert_eq!(
        props["MemorySize"].as_u64(),
        Some(LIMIT_MEMORY_BYTES >> 20),
        "the renderer's memory size is its memory limit"
    );
    let timeout = props["Timeout"]
        .as_u64()
        .expect("the renderer's own timeout");
    assert!(
        timeout > LIMIT_SECONDS && timeout <= LIMIT_SECONDS + 10,
        "timeout {timeout} s: the time limit plus start-up"
    );
    let policies = text(&props["Policies"]);
    assert!(policies.contains("/scratch/pdf/*"), "{policies}");
    for forbidden in [
        "dynamodb:",
        "secretsmanager:",
        "lambda:",
        "s3:DeleteObject",
        "sqs:",
        "states:",
    ] {
        assert!(
            !policies.contains(forbidden),
            "the renderer may not use {forbidden}: {policies}"
        );
    }
    // Every object it may touch is under scratch/pdf/.
    assert_eq!(
        policies.matches("${Bucket.Arn}/").count(),
        policies.matches("${Bucket.Arn}/scratch/pdf/*").count(),
        "{policies}"
    );
    assert!(
        props["Events"].is_null(),
        "the renderer is invoked by the API functions only"
    );

    let invokers: BTreeSet<String> = FUNCTIONS
        .iter()
        .filter(|f| f.adapters.declares(Port::Pdf))
        .flat_map(|f| [Some(f.logical_id.to_owned()), stream_logical_id(f)])
        .flatten()
        .collect();
    assert!(
        invokers.contains("ApiResponsesFunction")
            && invokers.contains("ApiResponsesStreamFunction")
    );
    for (id, f) in functions(&t) {
        let env = text(&f["Properties"]["Environment"]);
        let policies = text(&f["Properties"]["Policies"]);
        let names = env.contains("REELGATE_PDF_FUNCTION");
        let invokes =
            policies.contains("lambda:InvokeFunction") && policies.contains(renderer.logical_id);
        if invokers.contains(&id) {
            assert!(names && invokes, "{id} declares the PDF port: it needs REELGATE_PDF_FUNCTION and lambda:InvokeFunction on {}", renderer.logical_id);
            assert!(
                policies.contains("/scratch/pdf/*"),
                "{id} stages documents under scratch/pdf/"
            );
        } else {
            assert!(
                !names && !invokes,
                "{id} does not declare the PDF port but reaches the renderer"
            );
        }
    }
    let lifecycle = text(&resource(&t, "Bucket")["Properties"]["LifecycleConfiguration"]);
    assert!(
        lifecycle.contains("scratch/pdf/"),
        "what a failed call leaves must expire: {lifecycle}"
    );
}

/// The HTTP API answers only through its own domain, the distribution's origin: the
/// execute-api address is disabled, so a request around CloudFront invokes nothing; the stage
/// throttles every route; the webhook worker's concurrency is reserved and its queue hands it
/// no more batches than that (docs/security.md, docs/deploy.md).
#[test]
fn the_api_is_reachable_only_through_the_front_door_and_throttled_and_the_webhook_worker_bounded() {
    let t = template();
    let api = &resource(&t, "Api")["Properties"];
    assert_eq!(
        api["DisableExecuteApiEndpoint"].as_bool(),
        Some(true),
        "the HTTP API's execute-api address must be disabled"
    );
    let domain = resource(&t, "ApiOriginDomain");
    assert_eq!(
        domain["Type"].as_str(),
        Some("AWS::ApiGatewayV2::DomainName")
    );
    assert!(text(&domain["Properties"]["DomainName"]).contains("ApiOriginDomainName"));
    let mapping = &resource(&t, "ApiOriginMapping")["Properties"];
    assert!(text(&mapping["ApiId"]).contains("Api"));
    assert!(text(&mapping["DomainName"]).contains("ApiOriginDomain"));
    assert_eq!(mapping["Stage"].as_str(), Some("$default"));
    let api_origin = origin(distribution(&t), "http-api");
    assert!(
        text(&api_origin["DomainName"]).contains("ApiOriginDomain"),
        "the distribution must reach the API through its own domain"
    );
    assert!(
        !serde_yaml::to_string(&t["Resources"])
            .unwrap_or_default()
            .contains(".execute-api."),
        "nothing may point at the disabled execute-api address"
    );

    // The stage throttles, as docs/deploy.md states them.
    let routes = &api["DefaultRouteSettings"];
    let burst = routes["ThrottlingBurstLimit"]
        .as_u64()
        .expect("a burst limit");
    let rate = routes["ThrottlingRateLimit"]
        .as_u64()
        .expect("a rate limit");
    let deploy = std::fs::read_to_string(repo().join("docs/deploy.md")).expect("deploy.md");
    assert!(
        deploy.contains(&format!("burst {burst} requests")) && deploy.contains(&format!("{rate} requests per second")),
        "docs/deploy.md must state the stage throttles (burst {burst} requests, {rate} requests per second)"
    );

    // The webhook worker.
    let worker = &resource(&t, "WebhookWorkerFunction")["Properties"];
    assert!(
        text(&worker["ReservedConcurrentExecutions"]).contains("WebhookWorkerConcurrency"),
        "the webhook worker needs reserved concurrency"
    );
    let param = &t["Parameters"]["WebhookWorkerConcurrency"];
    let default = param["Default"].as_u64().expect("a default");
    assert!((2..=100).contains(&default), "{default}");
    assert!(param["MinValue"].as_u64().is_some() && param["MaxValue"].as_u64().is_some());
    let source = &worker["Events"]["Deliver"]["Properties"];
    assert!(
        text(&source["ScalingConfig"]["MaximumConcurrency"]).contains("WebhookWorkerConcurrency"),
        "the webhook queue must not hand the worker more batches than it may run"
    );
    // A batch is handled at once and each POST waits at most 10 s for its answer.
    assert!(worker["Timeout"].as_u64().expect("a timeout") >= 20);
}
