//! The crate's layers (docs/architecture.md), held to the code: every `crate::` path in a module
//! may name only its own top-level module or one of a lower layer. That rules out cycles between
//! top-level modules and any arrow that points up (a renderer imported by the judge, the judge by
//! the wire, the command line by anything but the run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top to bottom is last to first: a module may import from the layers before its own.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "leaves",
        &["command", "error", "os", "rng", "stats", "trust", "units"],
    ),
    ("measurement: the machine", &["system"]),
    (
        "measurement: the sections",
        &["sched", "memory", "net", "storage"],
    ),
    ("wire", &["wire"]),
    ("node checks (NHC)", &["nhc"]),
    ("history", &["history"]),
    ("judge", &["judge"]),
    ("render", &["render"]),
    ("profiles and defaults", &["profile"]),
    ("command line", &["cli"]),
    ("settings", &["config"]),
    ("run", &["run"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// The source roots: the root package's `src/` and each floor crate's (`crates/*/src`). A module
/// keeps its name in whichever crate it lives (the crates above re-export the floors below).
fn roots() -> Vec<PathBuf> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![top.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(top.join("crates"))
        .map(|d| d.map(|e| e.unwrap().path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    roots.extend(crates.into_iter().filter(|p| p.is_dir()));
    roots
}

/// `file` relative to its source root.
fn relative(file: &Path) -> &Path {
    for root in roots() {
        if let Ok(rel) = file.strip_prefix(&root) {
            return rel;
        }
    }
    file
}

/// Every Rust file of every source root.
fn all_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for root in roots() {
        rust_files(&root, &mut files);
    }
    files
}

/// The top-level module a file belongs to (`crates/judge/src/judge/checks/mod.rs` -> `judge`).
fn module_of(file: &Path) -> Option<String> {
    let rel = relative(file);
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A path a file names, split at `::`, with the line it is on.
type Named = (Vec<String>, usize);

/// Every path a file's text names from `crate::`, `super::` or `self::`, grouped imports
/// (`use crate::{a, b::{c, d}}`) expanded, comments left out.
fn paths_named(text: &str) -> Vec<Named> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| bytes[i..].starts_with(p.as_bytes()))
            .filter(|_| i == 0 || !ident(bytes[i - 1]) && bytes[i - 1] != b':');
        if starts.is_none() {
            i += 1;
            continue;
        }
        let line = code[..i].matches('\n').count() + 1;
        let (paths, end) = parse_path(&code, i);
        out.extend(paths.into_iter().map(|p| (p, line)));
        i = end.max(i + 1);
    }
    out
}

/// Parses the path at `at` (idents and `::`, ending in a `{...}` group or not); returns every
/// path it names and where it ends.
fn parse_path(code: &str, mut at: usize) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut segments = Vec::new();
    loop {
        let start = at;
        while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
            at += 1;
        }
        if at > start {
            segments.push(code[start..at].to_string());
        }
        if code[at..].starts_with("::") {
            at += 2;
            if code[at..].starts_with('{') {
                let mut out = Vec::new();
                at += 1;
                loop {
                    while at < bytes.len() && (bytes[at] as char).is_whitespace() {
                        at += 1;
                    }
                    if at >= bytes.len() || bytes[at] == b'}' {
                        break;
                    }
                    let (inner, end) = parse_path(code, at);
                    for p in inner {
                        let mut full = segments.clone();
                        full.extend(p.into_iter().filter(|s| s != "self"));
                        out.push(full);
                    }
                    at = end;
                    // Past `as name` and up to the next item.
                    while at < bytes.len() && bytes[at] != b',' && bytes[at] != b'}' {
                        at += 1;
                    }
                    if at < bytes.len() && bytes[at] == b',' {
                        at += 1;
                    }
                }
                return (out, at + 1);
            }
            continue;
        }
        return (vec![segments], at);
    }
}

/// Every top-level module a file's text names as `crate::<module>` (grouped imports too), with
/// a line where it does.
fn imports(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (path, line) in paths_named(text) {
        if path.first().map(String::as_str) == Some("crate") {
            if let Some(name) = path.get(1) {
                out.entry(name.clone()).or_insert(line);
            }
        }
    }
    out
}

/// The module a file is, as a path (`crates/judge/src/judge/checks/mod.rs` -> `judge::checks`).
fn module_path(file: &Path) -> Vec<String> {
    let rel = relative(file);
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem);
    }
    parts
}

/// The module a named path refers to, from the module `own`: `crate::` from the root, `super::`
/// from `own`'s parent, `self::` from `own`.
fn resolve(path: &[String], own: &[String]) -> Vec<String> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base = own.to_vec();
            rest = &path[1..];
        }
        _ => {
            base = own.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
    }
    base.extend(rest.iter().cloned());
    base
}

/// The modules (files) of `src/` that import each other, directly or around a loop, within one
/// top-level module: siblings only (a module and its own submodules are one unit by nature).
fn cycles_within_modules() -> Vec<Vec<String>> {
    let files = all_files();
    let modules: BTreeMap<Vec<String>, PathBuf> =
        files.iter().map(|f| (module_path(f), f.clone())).collect();
    let mut edges: BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>> = BTreeMap::new();
    for (own, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        for (path, _) in paths_named(&text) {
            let target = resolve(&path, own);
            // The longest module the path is in.
            let Some(to) = (1..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|m| modules.contains_key(m))
            else {
                continue;
            };
            let related = to.starts_with(own) || own.starts_with(&to);
            if to.first() == own.first() && !related {
                edges.entry(own.clone()).or_default().insert(to);
            }
        }
    }
    // Every loop, found once from its smallest module.
    let mut found = std::collections::BTreeSet::new();
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, trail)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let mut cycle = trail.clone();
                    let min = cycle
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, m)| *m)
                        .map(|(i, _)| i);
                    cycle.rotate_left(min.unwrap_or(0));
                    found.insert(cycle);
                } else if !trail.contains(next) && next > start && trail.len() < 8 {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push((next.clone(), t));
                }
            }
        }
    }
    found
        .into_iter()
        .map(|c| c.iter().map(|m| m.join("::")).collect())
        .collect()
}

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    let cycles = cycles_within_modules();
    assert!(
        cycles.is_empty(),
        "modules that import each other (around a loop):\n{}",
        cycles
            .iter()
            .map(|c| format!("{} -> {}", c.join(" -> "), c[0]))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn grouped_and_relative_imports_are_read() {
    let found = paths_named(
        "use crate::{render::summary, wire::{figures, fleet::Sku as S}};\n\
         use super::{noise, checks::Thresholds};\nlet x = super::super::a::b(); // crate::run\n",
    );
    let paths: Vec<String> = found.iter().map(|(p, _)| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "crate::render::summary",
            "crate::wire::figures",
            "crate::wire::fleet::Sku",
            "super::noise",
            "super::checks::Thresholds",
            "super::super::a::b",
        ]
    );
    assert_eq!(found[3].1, 2);
    let own = ["judge".to_string(), "noise".to_string()];
    assert_eq!(
        resolve(&found[4].0, &own),
        ["judge", "checks", "Thresholds"]
    );
    assert_eq!(
        imports("use crate::{render, wire::x};")
            .keys()
            .collect::<Vec<_>>(),
        ["render", "wire"]
    );
}

#[test]
fn every_import_points_down_the_layers() {
    let files = all_files();
    let mut wrong = Vec::new();
    let mut unknown = Vec::new();
    for file in &files {
        let Some(from) = module_of(file) else {
            continue;
        };
        let Some(from_layer) = layer_of(&from) else {
            unknown.push(from.clone());
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (to, line) in imports(&text) {
            if to == from {
                continue;
            }
            match layer_of(&to) {
                Some(to_layer) if to_layer < from_layer => {}
                Some(to_layer) => wrong.push(format!(
                    "{}:{line}: {from} ({}) imports {to} ({})",
                    file.display(),
                    LAYERS[from_layer].0,
                    LAYERS[to_layer].0
                )),
                None => unknown.push(to),
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "modules missing from LAYERS (add them here and to docs/architecture.md): {unknown:?}"
    );
    assert!(
        wrong.is_empty(),
        "imports that point up or across a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_test_catches_an_upward_import() {
    let found = imports(
        "use crate::render::summary;\nlet x = crate::wire::figures::of(d); // crate::run\n",
    );
    assert_eq!(found.keys().collect::<Vec<_>>(), ["render", "wire"]);
    assert!(layer_of("render") > layer_of("judge"));
    assert!(layer_of("wire") < layer_of("judge"));
}

#[test]
fn the_documented_layers_are_these() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    for (name, modules) in LAYERS {
        let line = doc
            .lines()
            .find(|l| l.starts_with("| ") && l.contains(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("docs/architecture.md has no layer row '| {name} |'"));
        for m in *modules {
            assert!(
                line.contains(&format!("`{m}`")),
                "the row for '{name}' does not name `{m}`: {line}"
            );
        }
    }
}

/// clap is the command line's business: no other module names it (value enums get their
/// command-line names in `cli/values.rs`), so a type of the wire or the judge never changes for a
/// flag's sake.
#[test]
fn clap_is_named_only_by_the_command_line() {
    let files = all_files();
    let outside: Vec<String> = files
        .iter()
        .filter(|f| module_of(f).as_deref() != Some("cli"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.contains("clap::") || text.contains("use clap")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(outside.is_empty(), "clap named outside cli: {outside:?}");
}

/// The workspace's crates, lowest floor first: each may depend only on those before it.
const CRATES: &[&str] = &[
    "health-check-base",
    "health-check-measure",
    "health-check-wire",
    "health-check-nhc",
    "health-check-history",
    "health-check-judge",
    "health-check-render",
    "health-check-app",
    "health-check",
];

/// The crates of ours a manifest names under `[dependencies]` or `[dev-dependencies]`.
fn our_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line.ends_with("dependencies]");
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if in_deps && CRATES.contains(&name) {
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn the_floor_crates_depend_only_on_floors_below() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![top.join("Cargo.toml")];
    for entry in std::fs::read_dir(top.join("crates")).unwrap() {
        manifests.push(entry.unwrap().path().join("Cargo.toml"));
    }
    let mut seen = Vec::new();
    for path in manifests {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = text
            .lines()
            .skip_while(|l| l.trim() != "[package]")
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_string())
            .unwrap_or_else(|| panic!("{} names no package", path.display()));
        let floor = CRATES
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("crate {name} is missing from CRATES (and the docs' table)"));
        for dep in our_dependencies(&text) {
            let below = CRATES.iter().position(|c| *c == dep).unwrap();
            assert!(
                below < floor,
                "{name} depends on {dep}, a floor not below it"
            );
        }
        seen.push(name);
    }
    seen.sort();
    let mut all: Vec<String> = CRATES.iter().map(|c| c.to_string()).collect();
    all.sort();
    assert_eq!(seen, all, "every crate of CRATES is in the workspace");
}

#[test]
fn our_dependencies_reads_the_manifest_forms() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nhealth-check-base.workspace = true\n\
                    libc = \"1\"\n[dev-dependencies]\nhealth-check = { path = \"..\" }\n\
                    [lints]\nhealth-check-measure = 1\n";
    assert_eq!(
        our_dependencies(manifest),
        ["health-check-base", "health-check"]
    );
}

/// Code that differs by architecture (the memory kernels' assembly, their dispatch) lives in the
/// lowest floors, whose unit tests CI runs for aarch64 under qemu; the floors above and the root
/// package have none, so their logic is the same on every architecture and is tested on the
/// build machine's.
#[test]
fn architecture_code_lives_in_the_lowest_floors() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&top.join("src"), &mut files);
    for root in roots() {
        let floor = root.parent().and_then(Path::file_name);
        if floor.is_some_and(|f| f != "base" && f != "measure") {
            rust_files(&root, &mut files);
        }
    }
    let arch: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("target_arch"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        arch.is_empty(),
        "architecture code above crates/base and crates/measure (move it down, or test that \
         crate on aarch64 in scripts/test.sh): {arch:?}"
    );
}

/// scripts/test.sh lints and checks the release profile (its proc macros and build scripts are
/// the release build's own): code compiled only with debug assertions would go unlinted.
#[test]
fn no_code_is_compiled_only_with_debug_assertions() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        if top.join(dir).is_dir() {
            rust_files(&top.join(dir), &mut files);
        }
    }
    for root in roots() {
        rust_files(&root, &mut files);
    }
    let needle = ["debug_", "assertions)"].concat();
    let found: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains(&needle))
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "code under {needle}: {found:?}");
}

/// The non-test code of every source file: its text up to its first `#[cfg(test)]`, and no
/// file named `tests.rs`.
fn shipped_code() -> Vec<(PathBuf, String)> {
    all_files()
        .into_iter()
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            (f, code)
        })
        .collect()
}

/// The files of shipped code, other than `home`, with a line `holds`.
fn found_outside(home: &str, holds: impl Fn(&str) -> bool) -> Vec<String> {
    shipped_code()
        .into_iter()
        .filter(|(f, code)| !f.ends_with(home) && code.lines().any(&holds))
        .map(|(f, _)| f.display().to_string())
        .collect()
}

/// Verdicts are assembled in one place: a fleet finding is built only by the pipeline's
/// builders, and every judge of a fleet reads the one view of it the walk makes.
#[test]
fn findings_are_built_by_the_pipeline_and_the_fleet_view_made_once() {
    let built = |line: &str| {
        let line = line.trim();
        line.ends_with("Finding {")
            && !line.contains("->")
            && !line.starts_with("pub struct")
            && !line.starts_with("impl")
    };
    let literal = found_outside("judge/pipeline.rs", built);
    assert!(
        literal.is_empty(),
        "a Finding built outside judge/pipeline.rs (use its builders): {literal:?}"
    );
    assert!(built("        Finding {") && !built("pub struct Finding {"));
    let views = found_outside("judge/fleet.rs", |l| {
        l.contains(&["View", "::of("].concat()) && !l.contains("pub fn")
    });
    assert!(
        views.is_empty(),
        "the fleet's view made outside fleet::judge (pass it down instead): {views:?}"
    );
}
