//! The architecture, checked. The core crate's layers import downwards only, its modules import
//! each other without circles, and the crates link what their names promise:
//!
//! * layers (`functions/reelgate/src/<layer>/`): `api` → `app` → `adapters` → `domain` → `ports`,
//!   with `config` and `observability` leaves every layer may use (docs/architecture.md has the table). `domain`
//!   never sees `app` (use cases take the ports they use, not the whole application), `ports`
//!   see nothing but ports.
//! * no circle between the modules one level inside a layer (`domain::videos`,
//!   `domain::videos::workflow`, `api::files`, …).
//! * the core crate depends on no SQLite and no AWS SDK, and the Lambda binaries' dependency tree
//!   (`cargo tree -p reelgate-lambda -e normal`) holds neither SQLite nor the ASL runner.
//!
//! Imports are read from the source text: every `crate::a::b` path, `use crate::{…}` groups and
//! `super::` paths resolved against the file's module. Test modules (`#[cfg(test)] mod tests`)
//! are left out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &[
    "config",
    "observability",
    "ports",
    "domain",
    "adapters",
    "app",
    "api",
    "contract",
];

/// What each layer may import (besides itself).
fn allowed(layer: &str) -> &'static [&'static str] {
    match layer {
        "config" | "observability" => &[],
        "ports" => &["config", "observability"],
        "domain" => &["ports", "config", "observability"],
        "adapters" => &["domain", "ports", "config", "observability"],
        "app" => &["adapters", "domain", "ports", "config", "observability"],
        "api" => &["app", "domain", "ports", "config", "observability"],
        // The adapter contract suites: test support over the ports and the domain's rules.
        "contract" => &["domain", "ports", "config", "observability"],
        _ => &[],
    }
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every workspace crate's `src` folder (`functions/<crate>/src`).
fn crate_src_dirs() -> Vec<PathBuf> {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&functions)
        .expect("functions/")
        .map(|e| e.expect("entry").path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/domain/videos/create.rs` → `["domain", "videos", "create"]`; `mod.rs` names its folder.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// The source without test modules and comments.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        {
            // Test modules close at the end of the file by convention here; skip the rest.
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The module paths `code` refers to, absolute from the crate root.
fn references(module: &[String], code: &str) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    let bytes: Vec<char> = code.chars().collect();
    let text: String = bytes.iter().collect();
    for (start, _) in text
        .match_indices("crate::")
        .chain(text.match_indices("super::"))
    {
        // Part of a longer path (`super::super::`, `a::crate`) or an identifier: not a start.
        if start > 0 && (is_ident(bytes[start - 1]) || bytes[start - 1] == ':') {
            continue;
        }
        let is_super = text[start..].starts_with("super::");
        // The base of a relative path: the file's own module for `super::` at file level
        // (files are modules, so `super` is the parent).
        let mut base: Vec<String> = if is_super {
            let mut m = module.to_vec();
            m.pop();
            m
        } else {
            Vec::new()
        };
        let mut rest = &text[start + "crate::".len()..];
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::b, c}`: each member, up to the closing brace (no nesting used here).
            let end = group.find('}').unwrap_or(group.len());
            for member in group[..end].split(',') {
                let path: Vec<String> = member
                    .trim()
                    .split("::")
                    .map(|s| s.trim().to_owned())
                    .take_while(|s| !s.is_empty() && s.chars().all(is_ident))
                    .collect();
                if !path.is_empty() {
                    let mut full = base.clone();
                    full.extend(path);
                    found.insert(full);
                }
            }
            continue;
        }
        // Segments while each is a whole identifier; the first one followed by anything else
        // (`(`, `;`, `}`, a space) ends the path.
        let mut path: Vec<String> = Vec::new();
        for seg in rest.split("::") {
            let ident: String = seg.chars().take_while(|c| is_ident(*c)).collect();
            if ident.is_empty() {
                break;
            }
            let whole = ident.len() == seg.len();
            path.push(ident);
            if !whole {
                break;
            }
        }
        let mut full = base;
        full.extend(path);
        if !full.is_empty() {
            found.insert(full);
        }
    }
    found
}

struct Graph {
    /// module (as `a::b`) → modules it refers to, cut to the known module paths.
    edges: BTreeMap<String, BTreeSet<String>>,
}

fn graph() -> Graph {
    graph_of(&src_dir())
}

fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("read");
        let mut targets = BTreeSet::new();
        for reference in references(&module, &code_of(&text)) {
            // The longest known module that prefixes the path (the rest names an item).
            let target = (1..=reference.len())
                .rev()
                .map(|n| reference[..n].to_vec())
                .find(|p| modules.contains(p));
            if let Some(target) = target {
                if target != module {
                    targets.insert(target.join("::"));
                }
            }
        }
        edges.insert(module.join("::"), targets);
    }
    Graph { edges }
}

fn layer_of(module: &str) -> &str {
    module.split("::").next().unwrap_or_default()
}

#[test]
fn every_source_file_sits_in_a_layer() {
    let g = graph();
    let loose: Vec<_> = g
        .edges
        .keys()
        .filter(|m| !m.is_empty() && !LAYERS.contains(&layer_of(m)))
        .collect();
    assert!(
        loose.is_empty(),
        "modules outside the layers {LAYERS:?}: {loose:?} (docs/architecture.md says where code goes)"
    );
}

#[test]
fn layers_import_downwards_only() {
    let g = graph();
    let mut violations = Vec::new();
    for (module, targets) in &g.edges {
        if module.is_empty() {
            continue; // lib.rs declares the layers
        }
        let from = layer_of(module);
        for target in targets {
            let to = layer_of(target);
            if to != from && !allowed(from).contains(&to) {
                violations.push(format!("{module} → {target}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layering (api → app → adapters → domain → ports; config for all):\n  {}",
        violations.join("\n  ")
    );
}

/// Modules one level inside their layer (`domain::videos` for `domain::videos::create`).
/// The import circles among one crate's modules (each file a module), each as its edges.
fn circles(g: &Graph) -> Vec<String> {
    let mut units: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, targets) in &g.edges {
        if module.is_empty() {
            continue; // the crate root declares the modules
        }
        let entry = units.entry(module.clone()).or_default();
        for t in targets {
            if t != module && !t.is_empty() {
                entry.insert(t.clone());
            }
        }
    }
    // Tarjan's strongly connected components; any component of two or more is a circle.
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        circles: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            let graph = self.graph;
            for w in graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(lw));
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.circles.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph: &units,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        circles: Vec::new(),
    };
    for v in units.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v.as_str());
        }
    }
    let explain: Vec<String> = t
        .circles
        .iter()
        .map(|c| {
            let members: BTreeSet<&String> = c.iter().collect();
            let edges: Vec<String> = c
                .iter()
                .flat_map(|from| {
                    units[from]
                        .iter()
                        .filter(|to| members.contains(to))
                        .map(move |to| format!("{from} → {to}"))
                })
                .collect();
            edges.join(", ")
        })
        .collect();
    explain
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for src in crate_src_dirs() {
        let name = src.parent().and_then(|p| p.file_name()).unwrap_or_default();
        for circle in circles(&graph_of(&src)) {
            found.push(format!("{}: {circle}", name.to_string_lossy()));
        }
    }
    assert!(
        found.is_empty(),
        "modules importing each other in a circle:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    let edges = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
        ("d".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    let found = circles(&Graph { edges });
    assert_eq!(found, vec!["a → b, b → c, c → a".to_owned()]);
}

#[test]
fn the_checker_sees_imports_of_every_form() {
    let m = vec![
        "domain".to_owned(),
        "videos".to_owned(),
        "create".to_owned(),
    ];
    let refs = references(
        &m,
        "use crate::ports::store::Key;\nuse crate::{app::App, domain::files};\nlet x = super::job_key();\nuse super::super::api::x;\n",
    );
    let as_text: BTreeSet<String> = refs.iter().map(|r| r.join("::")).collect();
    for expected in [
        "ports::store::Key",
        "app::App",
        "domain::files",
        "domain::videos::job_key",
        "domain::api::x",
    ] {
        assert!(as_text.contains(expected), "{expected} in {as_text:?}");
    }
    // An upward import is caught.
    assert!(!allowed("domain").contains(&"app"));
    assert!(!allowed("ports").contains(&"domain"));
}

/// The HTTP crates `code` names as paths (`axum::…`, `http::…`).
fn http_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for root in ["axum::", "http::", "tower_http::"] {
        for (start, _) in code.match_indices(root) {
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            found.push(root.to_owned());
        }
    }
    found
}

#[test]
fn the_domain_knows_no_http() {
    // The domain's errors carry a kind, not a status: `api/envelope.rs` maps them to HTTP.
    let mut files = Vec::new();
    rust_files(&src_dir().join("domain"), &mut files);
    rust_files(&src_dir().join("ports"), &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let code = code_of(&text);
        for path in http_paths(&code) {
            violations.push(format!(
                "{}: {path}",
                module_of(&src_dir(), file).join("::")
            ));
        }
        if code.contains("use axum") {
            violations.push(format!(
                "{}: use axum",
                module_of(&src_dir(), file).join("::")
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "the domain and the ports use HTTP types (map in api/ instead):\n  {}",
        violations.join("\n  ")
    );
    assert_eq!(
        http_paths("use axum::http::StatusCode; let u = \"https://x\"; reqwest::http::M; (http::Method::GET)"),
        ["axum::", "http::"]
    );
}

/// The key prefix literals (`"ORG#`, `"VIDEO#`, `"RATE#`, …: a quote, two or more capitals or
/// underscores, then `#`) in `code`.
fn key_prefix_literals(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        if *c != '"' {
            continue;
        }
        let name: String = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_uppercase() || **c == '_')
            .collect();
        if name.len() >= 2 && chars.get(i + 1 + name.len()) == Some(&'#') {
            found.push(format!("\"{name}#"));
        }
    }
    found
}

/// The one owner of the table's key formats (docs/table-design.md lists them).
const KEY_OWNER: &str = "domain/table_keys.rs";

#[test]
fn key_formats_have_one_owner() {
    // The core crate's code (the adapter contract suites excepted: they exercise the store with
    // keys of their own) and the other crates' library code that talks to the table.
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in [
        "reelgate",
        "reelgate-embedded",
        "reelgate-aws",
        "reelgate-lambda",
        "reelgate-cli",
    ] {
        rust_files(&functions.join(krate).join("src"), &mut files);
    }
    let mut violations = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&functions).expect("under functions");
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel == format!("reelgate/src/{KEY_OWNER}") || rel.starts_with("reelgate/src/contract/") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read");
        for literal in key_prefix_literals(&code_of(&text)) {
            violations.push(format!("{rel}: {literal}"));
        }
    }
    assert!(
        violations.is_empty(),
        "key formats written outside {KEY_OWNER} (call the functions there instead):\n  {}",
        violations.join("\n  ")
    );
}

#[test]
fn the_key_check_sees_prefix_literals() {
    let code = r##"let k = Key::new(format!("ORG#{org}"), "ORG"); q.prefix("VIDEO#"); let s = r#"{"a":1}"#; "# HELP"; "IDEMPOTENCY_X#1""##;
    assert_eq!(
        key_prefix_literals(code),
        ["\"ORG#", "\"VIDEO#", "\"IDEMPOTENCY_X#"]
    );
}

/// `cargo tree` of one package, normal dependencies only, as crate names.
fn dependency_names(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_core_crate_depends_on_no_sqlite_and_no_aws_sdk() {
    let deps = dependency_names("reelgate");
    let forbidden: Vec<&String> = deps
        .iter()
        .filter(|d| d.contains("sqlite") || d.starts_with("aws-") || d.as_str() == "reelgate-asl")
        .collect();
    assert!(
        forbidden.is_empty(),
        "the core crate links {forbidden:?}; embedded adapters belong in reelgate-embedded, AWS \
         ones in reelgate-aws"
    );
}

#[test]
fn lambda_binaries_link_neither_sqlite_nor_the_asl_runner() {
    let deps = dependency_names("reelgate-lambda");
    let forbidden: Vec<&String> = deps
        .iter()
        .filter(|d| {
            d.contains("sqlite")
                || d.as_str() == "reelgate-asl"
                || d.as_str() == "reelgate-embedded"
        })
        .collect();
    assert!(
        forbidden.is_empty(),
        "reelgate-lambda's normal dependencies include {forbidden:?}"
    );
    // The tree is real: the AWS adapters are in it.
    assert!(deps.contains("reelgate-aws"), "{deps:?}");
}

/// The `async fn`s of `code` that its routes name (`.declared(&LIST_VIDEOS, list)`, or
/// `get(list)`, `.post(create)`): its handlers.
fn handlers_of(code: &str) -> BTreeSet<String> {
    let defined: BTreeSet<String> = code
        .match_indices("async fn ")
        .map(|(i, m)| {
            code[i + m.len()..]
                .chars()
                .take_while(|c| is_ident(*c))
                .collect()
        })
        .collect();
    let mut named = BTreeSet::new();
    for (i, m) in code.match_indices("declared(&") {
        let rest = &code[i + m.len()..];
        let Some(comma) = rest.find(',') else {
            continue;
        };
        let arg: String = rest[comma + 1..]
            .trim_start()
            .chars()
            .take_while(|c| is_ident(*c) || *c == ':')
            .collect();
        if let Some(name) = arg.rsplit("::").next() {
            if defined.contains(name) {
                named.insert(name.to_owned());
            }
        }
    }
    for method in ["get(", "post(", "put(", "patch(", "delete("] {
        for (i, _) in code.match_indices(method) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(is_ident) {
                continue;
            }
            let arg: String = code[i + method.len()..]
                .chars()
                .take_while(|c| is_ident(*c) || *c == ':')
                .collect();
            let rest = &code[i + method.len() + arg.len()..];
            if rest.trim_start().starts_with(')') {
                if let Some(name) = arg.rsplit("::").next() {
                    if defined.contains(name) {
                        named.insert(name.to_owned());
                    }
                }
            }
        }
    }
    named
}

/// Every `api` file as (module, code).
fn api_files() -> Vec<(Vec<String>, String)> {
    let mut files = Vec::new();
    rust_files(&src_dir().join("api"), &mut files);
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read");
            (module_of(&src_dir(), f), code_of(&text))
        })
        .collect()
}

/// References from one `api` module to another's handlers (`module → api::other::handler`).
fn cross_handler_calls(files: &[(Vec<String>, String)]) -> Vec<String> {
    let handlers: BTreeMap<Vec<String>, BTreeSet<String>> = files
        .iter()
        .map(|(m, code)| (m.clone(), handlers_of(code)))
        .collect();
    let mut found = Vec::new();
    for (module, code) in files {
        for reference in references(module, code) {
            let Some((item, owner)) = reference.split_last() else {
                continue;
            };
            if owner != module.as_slice() && handlers.get(owner).is_some_and(|h| h.contains(item)) {
                found.push(format!("{} → {}", module.join("::"), reference.join("::")));
            }
        }
    }
    found
}

#[test]
fn no_api_module_calls_another_api_modules_handler() {
    let found = cross_handler_calls(&api_files());
    assert!(
        found.is_empty(),
        "an api module reaches for another one's handler (call the domain's use case instead):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_handler_check_sees_routes_built_from_declarations() {
    let code =
        "pub fn r() -> Router<App> {\n    Router::new()\n        .declared(&LIST, list)\n        \
                .declared(&CREATE, super::create)\n}\nasync fn list() {}\nasync fn create() {}\n\
                async fn helper() {}\n";
    assert_eq!(
        handlers_of(code),
        BTreeSet::from(["create".to_owned(), "list".to_owned()])
    );
}

#[test]
fn the_handler_check_sees_a_cross_call() {
    let files = vec![
        (
            vec!["api".to_owned(), "videos".to_owned()],
            "pub fn r() -> Router<App> { Router::new().route(\"/v\", get(list).post(create)) }\n\
             async fn list() {}\npub async fn create() {}\n"
                .to_owned(),
        ),
        (
            vec!["api".to_owned(), "console".to_owned()],
            "async fn c() { crate::api::videos::create().await }\n".to_owned(),
        ),
    ];
    assert_eq!(
        cross_handler_calls(&files),
        vec!["api::console → api::videos::create".to_owned()]
    );
}

/// The string literals of `code`, each with the line it starts on (char literals such as
/// `'"'` skipped).
fn string_literals(code: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\'' if chars.get(i + 1) == Some(&'"') && chars.get(i + 2) == Some(&'\'') => i += 3,
            '\'' if chars.get(i + 1) == Some(&'\\') && chars.get(i + 3) == Some(&'\'') => i += 4,
            '"' => {
                let line_start = chars[..i]
                    .iter()
                    .rposition(|c| *c == '\n')
                    .map_or(0, |n| n + 1);
                let line_end = chars[i..]
                    .iter()
                    .position(|c| *c == '\n')
                    .map_or(chars.len(), |n| i + n);
                let line: String = chars[line_start..line_end].iter().collect();
                let mut literal = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        literal.push(chars[i]);
                        i += 1;
                    }
                    if let Some(c) = chars.get(i) {
                        literal.push(*c);
                    }
                    i += 1;
                }
                found.push((literal, line.trim().to_owned()));
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

/// Where the `api` files state a route a second time: a `.route(` call anywhere but the
/// declaration helper (`api/operation.rs`; a route is built from its declaration with
/// `.declared(&OPERATION, handler)`), or a string literal equal to a declared path (a
/// `path: "…"` line of an `Operation`) anywhere but in its declaration.
fn restated_routes(files: &[(Vec<String>, String)]) -> Vec<String> {
    let declared: BTreeSet<String> = files
        .iter()
        .flat_map(|(_, code)| string_literals(code))
        .filter(|(literal, line)| line.starts_with("path: \"") && literal.starts_with('/'))
        .map(|(literal, _)| literal)
        .collect();
    let mut found = Vec::new();
    for (module, code) in files {
        let name = module.join("::");
        if module != &["api".to_owned(), "operation".to_owned()] && code.contains(".route(") {
            found.push(format!(
                "{name}: a `.route(` call (build it from its Operation with `.declared`)"
            ));
        }
        for (literal, line) in string_literals(code) {
            if declared.contains(&literal) && !line.starts_with("path: \"") {
                found.push(format!(
                    "{name}: \"{literal}\" restated outside its declaration: {line}"
                ));
            }
        }
    }
    found
}

/// A route's method and path are stated once, in its `Operation` beside its handler; the
/// router, `OPERATIONS` (and from it the document, `API_ROUTES`, the Lambda manifest's checks)
/// read them from there.
#[test]
fn each_route_is_stated_once() {
    let found = restated_routes(&api_files());
    assert!(
        found.is_empty(),
        "a route's path or method stated outside its declaration (use the Operation's \
         `.path`/`.method`):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_route_check_finds_a_restated_route() {
    let declaration = "pub const LIST: Operation = Operation {\n    path: \"/v1/things\",\n    \
                       ..DEFAULT\n};\npub fn r() -> Router<App> {\n    Router::new().declared(&LIST, list)\n}\n";
    let files = vec![
        (vec!["api".to_owned(), "things".to_owned()], declaration.to_owned()),
        (
            vec!["api".to_owned(), "other".to_owned()],
            "fn f(p: &str) -> bool { p == \"/v1/things\" || p.starts_with(\"/v1/\") || c == '\"' }\n\
             pub fn r() -> Router<App> { Router::new().route(\"/v1/more\", get(more)) }\n"
                .to_owned(),
        ),
        (
            vec!["api".to_owned(), "operation".to_owned()],
            "fn d(self) -> Self { self.route(op.path, on(f, h)) }\n".to_owned(),
        ),
    ];
    assert_eq!(
        restated_routes(&files),
        vec![
            "api::other: a `.route(` call (build it from its Operation with `.declared`)"
                .to_owned(),
            "api::other: \"/v1/things\" restated outside its declaration: fn f(p: &str) -> bool \
             { p == \"/v1/things\" || p.starts_with(\"/v1/\") || c == '\"' }"
                .to_owned(),
        ]
    );
}

/// Calls of the item store's methods in `code` (`app.store.get(…)`, `store.query(…)`).
fn store_calls(code: &str) -> Vec<String> {
    const METHODS: &[&str] = &[
        "get",
        "put",
        "update",
        "delete",
        "transact",
        "query",
        "update_each",
    ];
    let compact: String = code.split_whitespace().collect::<Vec<_>>().join("");
    let mut found = Vec::new();
    for (i, m) in compact.match_indices("store.") {
        if compact[..i].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let method: String = compact[i + m.len()..]
            .chars()
            .take_while(|c| is_ident(*c))
            .collect();
        let call = compact[i + m.len() + method.len()..].starts_with('(');
        if call && METHODS.contains(&method.as_str()) {
            found.push(format!("store.{method}(…)"));
        }
    }
    found
}

#[test]
fn handlers_never_read_or_write_the_store() {
    let mut found = Vec::new();
    for (module, code) in api_files() {
        for call in store_calls(&code) {
            found.push(format!("{}: {call}", module.join("::")));
        }
    }
    assert!(
        found.is_empty(),
        "an api module reads or writes the item store itself (the domain module that owns the item does):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_store_check_sees_a_call_across_lines() {
    let code = "app.store\n    .delete(&key, None)\n    .await?;\nlet s = app.store.as_ref();\nif req.store { }";
    assert_eq!(store_calls(code), vec!["store.delete(…)".to_owned()]);
}

/// The Rust types the OpenAPI document's component list names (`#[openapi(components(schemas(…)))]`
/// in `api/openapi/mod.rs`), generic arguments included, as written.
fn schema_types(document_module: &str) -> Vec<String> {
    let code = code_of(document_module);
    let Some(start) = code.find("components(schemas(") else {
        return Vec::new();
    };
    let list = &code[start + "components(schemas(".len()..];
    let list = &list[..list.find(")))]").unwrap_or(list.len())];
    let mut types = Vec::new();
    for entry in list.split([',', '<', '>']) {
        let entry = entry.trim();
        if !entry.is_empty() && !types.iter().any(|t| t == entry) {
            types.push(entry.to_owned());
        }
    }
    types
}

/// Whether `code` holds `name` as a whole word at `at`.
fn word_at(code: &str, at: usize, name: &str) -> bool {
    let before = code[..at].chars().next_back();
    let after = code[at + name.len()..].chars().next();
    !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
}

/// Uses of `name` in `code` other than its own definition, impl headers and an operation's
/// declaration naming it (`schema::<Name>`, `list_of::<Name>`: a description, not a use).
fn uses_of(code: &str, name: &str) -> usize {
    code.match_indices(name)
        .filter(|(at, _)| word_at(code, *at, name))
        .filter(|(at, _)| {
            let line_start = code[..*at].rfind('\n').map_or(0, |i| i + 1);
            let head = code[line_start..*at].trim_start();
            let declared = ["schema::<", "list_of::<"]
                .iter()
                .filter_map(|open| head.rfind(open).map(|i| &head[i..]))
                .any(|inside| !inside.contains('>'));
            !(declared
                || head.ends_with("struct ")
                || head.ends_with("enum ")
                || head.starts_with("impl")
                || head.starts_with("#["))
        })
        .count()
}

/// Every component schema of the document whose Rust type is a shadow: named without a path,
/// defined under `api/openapi/` (the document's assembly, not an owner of wire shapes), missing,
/// or never used by the service's code (only described). The types are those of the component
/// list in `api/openapi/mod.rs` and `declared`, the types the operations' declarations name
/// (`reelgate::…` paths, as `std::any::type_name` writes them).
fn shadow_schemas(src: &Path, declared: &[&str]) -> Vec<String> {
    let openapi_dir = src.join("api").join("openapi");
    let mut problems = Vec::new();
    let mut files = Vec::new();
    rust_files(&openapi_dir, &mut files);
    for file in &files {
        if file.file_name().is_some_and(|n| n != "mod.rs") {
            problems.push(format!(
                "{}: api/openapi assembles the document; wire types live with their owners",
                file.strip_prefix(src).expect("under src").display()
            ));
        }
    }
    let mut code_files = Vec::new();
    rust_files(src, &mut code_files);
    let service_code: Vec<String> = code_files
        .iter()
        .filter(|f| !f.starts_with(&openapi_dir))
        .map(|f| code_of(&std::fs::read_to_string(f).expect("read")))
        .collect();
    let document = std::fs::read_to_string(openapi_dir.join("mod.rs")).expect("api/openapi/mod.rs");
    let mut types = schema_types(&document);
    for ty in declared
        .iter()
        .flat_map(|t| t.split(['<', '>', ',']))
        .map(|t| t.trim().replacen("reelgate::", "crate::", 1))
        .filter(|t| !t.is_empty())
    {
        if !types.contains(&ty) {
            types.push(ty);
        }
    }
    for ty in types {
        if ty.starts_with("serde_json::") {
            continue;
        }
        let Some(path) = ty.strip_prefix("crate::") else {
            problems.push(format!(
                "{ty}: name the schema's type by its path (crate::…)"
            ));
            continue;
        };
        let mut parts: Vec<&str> = path.split("::").collect();
        let name = parts.pop().expect("a name");
        if parts.starts_with(&["api", "openapi"]) {
            problems.push(format!(
                "{ty}: defined by the document, not by the code that uses it"
            ));
            continue;
        }
        // The module's file, or any file of its folder (a type it re-exports).
        let module: PathBuf = parts.iter().collect();
        let mut candidates = vec![src.join(&module).with_extension("rs")];
        if src.join(&module).is_dir() {
            rust_files(&src.join(&module), &mut candidates);
        }
        let defined = candidates
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .any(|text| {
                let code = code_of(&text);
                ["struct ", "enum "].iter().any(|kind| {
                    let def = format!("{kind}{name}");
                    code.match_indices(&def)
                        .any(|(at, _)| word_at(&code, at + kind.len(), name))
                })
            });
        if !defined {
            problems.push(format!("{ty}: no such struct or enum"));
            continue;
        }
        if service_code.iter().map(|c| uses_of(c, name)).sum::<usize>() == 0 {
            problems.push(format!(
                "{ty}: described in the document but never read or written by the service"
            ));
        }
    }
    problems
}

#[test]
fn every_openapi_schema_has_a_rust_type_behind_it() {
    let problems = shadow_schemas(&src_dir(), &reelgate::api::openapi::declared_types());
    assert!(
        problems.is_empty(),
        "OpenAPI schemas without a Rust type the service uses (derive ToSchema on the type a \
         request is parsed into or an answer is serialized from):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_schema_check_finds_shadow_types() {
    let src = std::env::temp_dir().join(format!("reelgate-schema-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&src);
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "api/openapi/mod.rs",
        "#[openapi(components(schemas(\n    Bare,\n    crate::domain::things::Described,\n    \
         crate::domain::things::Used,\n    crate::api::envelope::List<crate::domain::things::Used>,\n    \
         crate::domain::things::Missing,\n)))]\nstruct Components;\n",
    );
    write(
        "api/openapi/schemas.rs",
        "#[derive(ToSchema)]\npub struct Bare;\n",
    );
    write(
        "api/envelope.rs",
        "#[derive(ToSchema)]\npub struct List<T> { data: Vec<T> }\nfn page() -> List<u8> { todo!() }\n",
    );
    write(
        "domain/things.rs",
        "// Described and Used are both here.\n#[derive(ToSchema)]\npub struct Described {}\n\
         #[derive(ToSchema)]\npub struct Used {}\nimpl Used {}\npub fn parse() -> Used { Used {} }\n\
         #[derive(ToSchema)]\npub struct OnlyDeclared {}\n",
    );
    write(
        "api/things.rs",
        "pub const GET_THING: Operation = Operation {\n    \
         ok: &[(200, Answer::Json(schema::<crate::domain::things::OnlyDeclared>))],\n    \
         ..DEFAULT\n};\n",
    );
    let problems = shadow_schemas(
        &src,
        &[
            "reelgate::domain::things::OnlyDeclared",
            "reelgate::api::envelope::List<reelgate::domain::things::Used>",
        ],
    );
    let _ = std::fs::remove_dir_all(&src);
    let found: Vec<&str> = problems
        .iter()
        .map(|p| p.split(':').next().unwrap_or_default())
        .collect();
    assert_eq!(
        found,
        ["api/openapi/schemas.rs", "Bare", "crate", "crate", "crate"],
        "{problems:#?}"
    );
    assert!(problems[2].contains("Described") && problems[2].contains("never read or written"));
    assert!(problems[3].contains("Missing") && problems[3].contains("no such"));
    assert!(
        problems[4].contains("OnlyDeclared") && problems[4].contains("never read or written"),
        "a declaration naming a type is not a use of it"
    );
}

/// The capability folder a module belongs to: `domain::<folder>` when `<folder>` is a folder of
/// `src/domain` (accounts, billing, videos, …); None for the domain's single-file modules and
/// every other layer.
fn capability_of<'a>(module: &'a str, folders: &BTreeSet<String>) -> Option<&'a str> {
    let mut parts = module.splitn(3, "::");
    match (parts.next(), parts.next()) {
        (Some("domain"), Some(folder)) if folders.contains(folder) => Some(folder),
        _ => None,
    }
}

/// The folders of `src/domain`.
fn capability_folders(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src.join("domain"))
        .expect("src/domain")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect()
}

/// Pairs of capability folders (in name order) each of which imports the other.
fn mutual_capabilities(g: &Graph, folders: &BTreeSet<String>) -> BTreeSet<(String, String)> {
    let mut arrows = BTreeSet::new();
    for (from, targets) in &g.edges {
        let Some(a) = capability_of(from, folders) else {
            continue;
        };
        for to in targets {
            if let Some(b) = capability_of(to, folders).filter(|b| *b != a) {
                arrows.insert((a.to_owned(), b.to_owned()));
            }
        }
    }
    arrows
        .iter()
        .filter(|(a, b)| a < b && arrows.contains(&(b.clone(), a.clone())))
        .cloned()
        .collect()
}

/// No two capability folders import each other: what spans two of them (a settlement that
/// moves a job and the account together, an erasure across every capability) is composed by
/// the one above, or by a folder of its own above both (`domain/erasure/`).
#[test]
fn capability_folders_do_not_import_each_other() {
    let src = src_dir();
    let folders = capability_folders(&src);
    let found: Vec<String> = mutual_capabilities(&graph_of(&src), &folders)
        .iter()
        .map(|(a, b)| format!("domain/{a} ⇄ domain/{b}"))
        .collect();
    assert!(
        found.is_empty(),
        "capability folders that import each other (compose them from a use case or a port \
         instead):\n  {}",
        found.join("\n  ")
    );
}

/// The public domain functions (`pub`, `pub(crate)`) whose parameters or answer name
/// `serde_json::Value`, as `path::function` under `src/domain/`.
fn value_functions(src: &Path) -> BTreeSet<String> {
    let domain = src.join("domain");
    let mut files = Vec::new();
    rust_files(&domain, &mut files);
    let mut found = BTreeSet::new();
    for file in files {
        let rel = file
            .strip_prefix(&domain)
            .expect("under domain/")
            .to_string_lossy()
            .replace('\\', "/");
        let code = code_of(&std::fs::read_to_string(&file).expect("read"));
        for name in value_signatures(&code) {
            found.insert(format!("{rel}::{name}"));
        }
    }
    found
}

/// The names of the public functions in `code` whose signature (up to its body or `;`) names
/// `Value`.
fn value_signatures(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line_start in std::iter::once(0).chain(code.match_indices('\n').map(|(i, _)| i + 1)) {
        let rest = code[line_start..].trim_start_matches([' ', '\t']);
        let Some(after_vis) = [
            "pub fn ",
            "pub async fn ",
            "pub(crate) fn ",
            "pub(crate) async fn ",
            "pub(super) fn ",
            "pub(super) async fn ",
        ]
        .iter()
        .find_map(|p| rest.strip_prefix(p)) else {
            continue;
        };
        let name: String = after_vis.chars().take_while(|c| is_ident(*c)).collect();
        let mut depth = 0i32;
        let mut prev = ' ';
        let mut end = after_vis.len();
        for (i, c) in after_vis.char_indices() {
            match c {
                '(' | '[' | '<' => depth += 1,
                ')' | ']' => depth -= 1,
                '>' if prev != '-' => depth -= 1,
                '{' | ';' if depth <= 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
            prev = c;
        }
        let signature = &after_vis[..end];
        let names_value = signature.match_indices("Value").any(|(i, _)| {
            let before = signature[..i].chars().next_back();
            let after = signature[i + "Value".len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        });
        if names_value {
            names.push(name);
        }
    }
    names
}

/// Item 1 of step 3: the domain's public functions take and answer types. JSON that is passed
/// on as someone else wrote it is a field of a type that says so (a stored response, an
/// upstream's own event), never a bare parameter or answer.
#[test]
fn public_domain_functions_take_and_answer_types_not_json_values() {
    let found = value_functions(&src_dir());
    assert!(
        found.is_empty(),
        "public domain functions that take or answer serde_json::Value (take a typed request, \
         answer a typed value):\n  {}",
        found
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_value_check_sees_parameters_and_answers() {
    let code = "pub fn a(x: Value) {}\npub async fn b(\n    y: &str,\n) -> ApiResult<Value> {\n}\n\
                pub fn c(v: Values) -> Option<usize> { let _: Value; }\nfn d(v: Value) {}\n\
                pub(crate) fn e<F: Fn() -> Value>(f: F) {}\n";
    assert_eq!(value_signatures(code), vec!["a", "b", "e"]);
}

/// What a module of `reelgate-media` takes from the crate root instead of from the module that
/// defines it (`crate::Name` where `Name` is no module): an arrow back up through `lib.rs`,
/// which re-exports the very modules that would import it.
fn media_root_imports(modules: &BTreeSet<String>, code: &str) -> BTreeSet<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = BTreeSet::new();
    for (start, _) in code.match_indices("crate::") {
        if start > 0 && is_ident(chars[start - 1]) {
            continue;
        }
        let name: String = code[start + "crate::".len()..]
            .chars()
            .take_while(|c| is_ident(*c))
            .collect();
        if !name.is_empty() && !modules.contains(&name) {
            found.insert(name);
        }
    }
    found
}

#[test]
fn media_modules_do_not_import_from_the_crate_root() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reelgate-media/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(&src, f).first().cloned())
        .collect();
    let mut problems = Vec::new();
    for file in &files {
        if module_of(&src, file).is_empty() {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).expect("read"));
        for name in media_root_imports(&modules, &code) {
            problems.push(format!("{}: crate::{name}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "reelgate-media modules must import from the defining module, not the crate root:\n  {}",
        problems.join("\n  ")
    );
    let modules = BTreeSet::from(["error".to_owned(), "probe".to_owned()]);
    assert_eq!(
        media_root_imports(
            &modules,
            "use crate::error::MediaError; use crate::MediaError;"
        ),
        BTreeSet::from(["MediaError".to_owned()]),
        "the check finds an import from the root"
    );
}

#[test]
fn the_capability_check_finds_a_mutual_pair() {
    let folders = BTreeSet::from(["a".to_owned(), "b".to_owned(), "c".to_owned()]);
    let edges = BTreeMap::from([
        (
            "domain::a::x".to_owned(),
            BTreeSet::from(["domain::b::y".to_owned()]),
        ),
        (
            "domain::b::y".to_owned(),
            BTreeSet::from(["domain::a::z".to_owned(), "domain::c".to_owned()]),
        ),
        (
            "domain::c".to_owned(),
            BTreeSet::from(["domain::ids".to_owned()]),
        ),
    ]);
    let found = mutual_capabilities(&Graph { edges }, &folders);
    assert_eq!(found, BTreeSet::from([("a".to_owned(), "b".to_owned())]));
}

/// The one door of text admission (chat completions, Messages, Responses): the chat use
/// case's `admit`, the only module that imports `billing::admission`.
const TEXT_ADMISSION_DOOR: &str = "domain::chat::complete";

/// Where text requests are admitted other than through [`TEXT_ADMISSION_DOOR`]: a module that
/// imports `billing::admission`, or one outside `billing` that names the text rate limits
/// (`Kind::Text`), which is how a use case would acquire them itself. `files` are
/// (module, code) pairs.
fn text_admissions_outside_the_door(g: &Graph, files: &[(String, String)]) -> Vec<String> {
    const ADMISSION: &str = "domain::billing::admission";
    let mut found: Vec<String> = g
        .edges
        .iter()
        .filter(|(module, targets)| targets.contains(ADMISSION) && *module != TEXT_ADMISSION_DOOR)
        .map(|(module, _)| format!("{module} imports {ADMISSION}"))
        .collect();
    for (module, code) in files {
        let names_text_kind = code
            .match_indices("Kind::Text")
            .any(|(at, _)| !code[..at].chars().next_back().is_some_and(is_ident));
        if !module.starts_with("domain::billing::") && names_text_kind {
            found.push(format!(
                "{module} acquires the text rate limits (Kind::Text)"
            ));
        }
    }
    found
}

#[test]
fn text_requests_are_admitted_through_one_door() {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read");
            (module_of(&src, f).join("::"), code_of(&text))
        })
        .collect();
    let found = text_admissions_outside_the_door(&graph_of(&src), &files);
    assert!(
        found.is_empty(),
        "text requests admitted outside {TEXT_ADMISSION_DOOR}::admit (use it: one admission \
         path for balance, budget and rate limits):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_admission_check_finds_a_second_door() {
    let edges = BTreeMap::from([
        (
            TEXT_ADMISSION_DOOR.to_owned(),
            BTreeSet::from(["domain::billing::admission".to_owned()]),
        ),
        (
            "domain::responses::create".to_owned(),
            BTreeSet::from(["domain::billing::admission".to_owned()]),
        ),
    ]);
    let files = vec![
        (
            "domain::messages::create".to_owned(),
            "let g = rate_limits::acquire(store, c, plan, Kind::Text, 5).await;".to_owned(),
        ),
        (
            "domain::billing::rate_limits".to_owned(),
            "Kind::Text => \"TEXT\",".to_owned(),
        ),
        (
            "domain::responses::convert".to_owned(),
            "MediaKind::Text if small => text(bytes),".to_owned(),
        ),
    ];
    assert_eq!(
        text_admissions_outside_the_door(&Graph { edges }, &files),
        vec![
            "domain::responses::create imports domain::billing::admission".to_owned(),
            "domain::messages::create acquires the text rate limits (Kind::Text)".to_owned(),
        ]
    );
}

/// How many lines of a source file are not its tests (everything before `#[cfg(test)]`).
fn non_test_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .count()
}

/// The longest a source file's non-test part may be.
const MAX_SOURCE_LINES: usize = 800;

/// Files allowed past [`MAX_SOURCE_LINES`]: the first three for good (one state machine or one
/// pipeline each, whose parts share one state), the rest until step 3 splits them, each at its
/// size now so that none grows. Paths under `functions/`.
const LONG_FILES: &[(&str, usize, &str)] = &[
    (
        "reelgate-asl/src/runner.rs",
        usize::MAX,
        "the ASL interpreter: one state machine",
    ),
    (
        "reelgate-asl/src/model.rs",
        usize::MAX,
        "the ASL document model, one type per state kind",
    ),
    (
        "reelgate-media/src/conform.rs",
        usize::MAX,
        "the conform stage: one pipeline over one state",
    ),
];

/// Files past [`MAX_SOURCE_LINES`] that architecture step 3 (issue 47) splits, each held at its
/// length when the check came in: none may grow, and each comes off once split.
const LONG_FILES_TO_SPLIT: &[(&str, usize, &str)] = &[];

#[test]
fn no_source_file_is_over_800_lines_but_those_named() {
    let mut problems = Vec::new();
    for src in crate_src_dirs() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let lines = non_test_lines(&std::fs::read_to_string(&file).expect("read"));
            let rel = file
                .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
                .expect("under functions/")
                .to_string_lossy()
                .replace('\\', "/");
            let limit = LONG_FILES
                .iter()
                .chain(LONG_FILES_TO_SPLIT)
                .find(|(path, _, _)| *path == rel)
                .map_or(MAX_SOURCE_LINES, |(_, limit, _)| *limit);
            if lines > limit {
                problems.push(format!("{rel}: {lines} lines (at most {limit})"));
            } else if lines <= MAX_SOURCE_LINES
                && LONG_FILES_TO_SPLIT.iter().any(|(path, _, _)| *path == rel)
            {
                problems.push(format!(
                    "{rel}: {lines} lines now; take it off LONG_FILES_TO_SPLIT"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "source files past their length (split them by what they do):\n  {}",
        problems.join("\n  ")
    );
}

/// The most lines of code a handler's body may have.
const MAX_HANDLER_LINES: usize = 20;

/// The lines of `async fn name`'s body in `code` that hold code (blank lines not counted;
/// `code` comes without its comment lines): from the first `{` outside the signature's
/// parentheses to the brace that closes it, string and character literals skipped.
fn body_lines(code: &str, name: &str) -> Option<usize> {
    let start = code
        .match_indices("async fn ")
        .map(|(i, m)| i + m.len())
        .find(|&i| code[i..].starts_with(name) && !code[i + name.len()..].starts_with(is_ident))?;
    let chars: Vec<char> = code[start..].chars().collect();
    let mut parens = 0i32;
    let open = chars.iter().position(|c| {
        match c {
            '(' => parens += 1,
            ')' => parens -= 1,
            '{' if parens == 0 => return true,
            _ => {}
        }
        false
    })?;
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
            }
            // A character literal (`'{'`, `'\n'`); a lifetime (`'a`) has no closing quote.
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 2,
            '\'' if chars.get(i + 1) == Some(&'\\') => {
                while i + 1 < chars.len() && chars[i + 1] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    let body: String = chars[open + 1..i].iter().collect();
                    return Some(body.lines().filter(|l| !l.trim().is_empty()).count());
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every handler of `files` (the `async fn`s a route of their own file names) whose body is
/// past [`MAX_HANDLER_LINES`], as (`api::module::handler`, lines). The document's assembly
/// (`api/openapi/`) serves no use case and is left out.
fn long_handlers(files: &[(Vec<String>, String)]) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (module, code) in files {
        if module.starts_with(&["api".to_owned(), "openapi".to_owned()]) {
            continue;
        }
        for handler in handlers_of(code) {
            let lines = body_lines(code, &handler).unwrap_or(usize::MAX);
            if lines > MAX_HANDLER_LINES {
                found.insert(format!("{}::{handler}", module.join("::")), lines);
            }
        }
    }
    found
}

/// A handler extracts the request, calls one use case of the domain and maps its answer: at most
/// [`MAX_HANDLER_LINES`] lines of code in its body (blank and comment lines not counted). A
/// handler is an `async fn` of a file under `api/` that a route of that file names (`get(list)`,
/// `.post(create)`); the helpers that read a body or write an answer are not handlers and may
/// be longer. Rules, queries and compositions live in `domain/<capability>/`.
#[test]
fn no_handler_is_over_20_lines() {
    let problems: Vec<String> = long_handlers(&api_files())
        .iter()
        .map(|(handler, lines)| format!("{handler}: {lines} lines"))
        .collect();
    assert!(
        problems.is_empty(),
        "handlers past {MAX_HANDLER_LINES} lines (move the rules and the composition into the \
         domain's use case; a handler extracts, calls one use case and maps its answer):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_handler_length_check_finds_a_long_handler() {
    let long_body: String = (0..21).map(|i| format!("    let x{i} = {i};\n")).collect();
    let short_body: String = (0..19).map(|i| format!("    let y{i} = {i};\n")).collect();
    let code = format!(
        "pub fn r() -> Router<App> {{ Router::new().route(\"/a\", get(long).post(short)) }}\n\
         async fn long(Path(p): Path<String>) -> ApiResult<Json<Value>> {{\n{long_body}\n\n    \
         Ok(Json(json!({{}})))\n}}\n\
         async fn short(headers: HeaderMap) -> Response {{\n{short_body}    let c = '{{';\n}}\n\
         async fn helper() {{\n{long_body}{long_body}}}\n\
         async fn after() {{ \"{{\"; }}\n"
    );
    let files = vec![
        (vec!["api".to_owned(), "things".to_owned()], code.clone()),
        (
            vec!["api".to_owned(), "openapi".to_owned()],
            code.replace("long", "documented"),
        ),
    ];
    assert_eq!(body_lines(&code, "short"), Some(20));
    assert_eq!(body_lines(&code, "after"), Some(1));
    assert_eq!(
        long_handlers(&files),
        BTreeMap::from([("api::things::long".to_owned(), 22)])
    );
}
