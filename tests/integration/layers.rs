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

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file belongs to (`src/judge/checks/mod.rs` -> `judge`).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?;
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

/// Every top-level module a file's text names as `crate::<module>`, with a line where it does.
fn imports(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.entry(name).or_insert(i + 1);
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_import_points_down_the_layers() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
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
                    file.strip_prefix(src()).unwrap().display(),
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
