//! The readers' commands: `compare` prints the fleet report (JSON on stdout, the table on
//! stderr); `baseline` writes what it learned to `-o FILE`.

use crate::config::{Config, Format};
use crate::judge::fleet::ReaderConfig;
use crate::judge::{self, rules::DEFAULT_RULES};
use crate::render::{self as report, fleet_table as human};
use crate::wire;
use std::io::IsTerminal;

/// `health_check compare`: 0, 1 when the report cannot be written, 2 when an input path cannot be
/// read, 3 with `--strict` when anything is flagged.
pub fn compare(config: &Config, reader: &ReaderConfig) -> u8 {
    if reader.print_rules {
        print!("{}", rules_text(reader));
        return 0;
    }
    let (fleet_report, _) = match judge::fleet::build(reader, config.baseline.as_ref(), false) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return 2;
        }
    };
    let render = |pretty: bool| -> Result<String, serde_json::Error> {
        match config.format {
            Format::Json => report::render(&fleet_report, pretty),
            Format::Junit => Ok(report::junit::fleet(&fleet_report)),
            Format::Prometheus => Ok(report::prometheus::fleet(&fleet_report)),
        }
    };
    let file = match config.output {
        Some(_) => render(true),
        None => Ok(String::new()),
    };
    let code = match (render(std::io::stdout().is_terminal()), file) {
        (Ok(out), Ok(file)) => super::emit(config.output.as_deref(), &out, &file),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("health_check: error: {e:#}");
            1
        }
    };
    eprint!("{}", human::summary(&fleet_report));
    if code == 0 && config.strict && judge::fleet::anything_flagged(&fleet_report) {
        return 3;
    }
    code
}

/// The rules in force as a YAML file: the built-in text (with its comments), or the file's.
fn rules_text(reader: &ReaderConfig) -> String {
    if reader.rules.source == "built-in" {
        return DEFAULT_RULES.to_string();
    }
    #[derive(serde::Serialize)]
    struct File {
        rules: Vec<crate::judge::rules::RuleSpec>,
    }
    serde_yaml::to_string(&File {
        rules: reader.rules.specs(),
    })
    .unwrap_or_default()
}

/// `health_check report`: one document's page, or the fleet's (`--html`); one document's or the
/// fleet's JUnit XML or Prometheus text (`--format`). 0 when written, 1 when not, 2 when an input
/// cannot be read.
pub fn report(config: &Config, reader: &ReaderConfig, html: Option<&std::path::Path>) -> u8 {
    let (fleet_report, machines) = match judge::fleet::build(reader, config.baseline.as_ref(), true)
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return 2;
        }
    };
    let single = match machines.as_slice() {
        [one] => one
            .document
            .as_deref()
            .map(|d| (d, one.entry.source.as_str())),
        _ => None,
    };
    let mut code = 0;
    if let Some(path) = html {
        let page = match single {
            Some((doc, source)) => report::html::machine_page(doc, source),
            None => report::html::fleet_page(&fleet_report, &machines),
        };
        match report::write_atomically(path, &page) {
            Ok(()) => eprintln!(
                "health_check: wrote '{}' ({} machine(s), {} KiB)",
                path.display(),
                machines.len(),
                page.len() / 1024
            ),
            Err(e) => {
                eprintln!("health_check: error: {e:#}");
                code = 1;
            }
        }
    }
    let text = match (config.format, single) {
        (Format::Json, _) => return code,
        (Format::Junit, Some((doc, _))) => report::junit::document(doc),
        (Format::Junit, None) => report::junit::fleet(&fleet_report),
        (Format::Prometheus, Some((doc, _))) => report::prometheus::document(doc),
        (Format::Prometheus, None) => report::prometheus::fleet(&fleet_report),
    };
    code.max(super::emit(config.output.as_deref(), &text, &text))
}

/// `health_check merge`: 0 when printed (and written), 1 when not, 2 when a document cannot be
/// read or the documents are of different machines.
pub fn merge(config: &Config, paths: &[std::path::PathBuf]) -> u8 {
    let mut docs = Vec::with_capacity(paths.len());
    for p in paths {
        let loaded = wire::read::load(p);
        match loaded.map(|l| l.content) {
            Some(Ok(wire::read::Content::Ours(d))) => docs.push(*d),
            Some(Ok(wire::read::Content::Upstream(_))) => {
                eprintln!(
                    "health_check: error: '{}' is DCPerf's own output; only health_check documents merge",
                    p.display()
                );
                return 2;
            }
            Some(Err(why)) | Some(Ok(wire::read::Content::HostError(why))) => {
                eprintln!("health_check: error: '{}': {why}", p.display());
                return 2;
            }
            None => {
                eprintln!(
                    "health_check: error: '{}' is a fleet report, not a document",
                    p.display()
                );
                return 2;
            }
        }
    }
    let merged = match wire::merge::merge(docs) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return 2;
        }
    };
    match (
        report::render(&merged, std::io::stdout().is_terminal()),
        report::render(&merged, true),
    ) {
        (Ok(out), Ok(file)) => super::emit(config.output.as_deref(), &out, &file),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("health_check: error: {e:#}");
            1
        }
    }
}

/// `health_check baseline`: 0 when written, 1 when not, 2 when an input cannot be read.
pub fn baseline(config: &Config, reader: &ReaderConfig) -> u8 {
    let (learned, machines) = match judge::fleet::learn(reader) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return 2;
        }
    };
    let Some(path) = &config.output else {
        eprintln!("health_check: error: say where to write the baseline: -o baseline.yaml");
        return 2;
    };
    let used = machines.iter().filter(|m| !m.figures.is_empty()).count();
    if used == 0 {
        eprintln!(
            "health_check: error: none of the {} input(s) holds a figure to learn from",
            machines.len()
        );
        return 1;
    }
    let text = match serde_yaml::to_string(&learned) {
        Ok(t) => format!(
            "# health_check baseline: per-SKU medians learned from {used} machine(s); judge runs with\n\
             # 'health_check -r server ... --baseline FILE' or 'health_check compare ... --baseline FILE'.\n{t}"
        ),
        Err(e) => {
            eprintln!("health_check: error: {e}");
            return 1;
        }
    };
    if let Err(e) = report::write_atomically(path, text.trim_end()) {
        eprintln!("health_check: error: {e:#}");
        return 1;
    }
    for m in machines.iter().filter(|m| m.figures.is_empty()) {
        eprintln!(
            "health_check: note: {} was not used: {}",
            m.entry.label,
            m.entry.reasons.first().map_or("no figures", String::as_str)
        );
    }
    eprintln!(
        "health_check: baseline of {} SKU(s) from {used} machine(s) written to '{}'",
        learned.skus.len(),
        path.display()
    );
    0
}
