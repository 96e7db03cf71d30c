//! One exporter per output format, behind one trait (hyperfine's `Exporter`): every command that
//! prints a document or a fleet report picks its exporter here, once, from `--format`.

use super::envelope;
use super::{junit, npd, prometheus, render};
use crate::system::SystemInfo;
use crate::wire::document::Document;
use crate::wire::fleet::FleetReport;

/// What stdout (and `--output`) carries (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The JSON document (or fleet report).
    #[default]
    Json,
    /// JUnit XML: one testcase per check (CI systems show them).
    Junit,
    /// Prometheus text: figures and check statuses as gauges.
    Prometheus,
    /// node-problem-detector's custom plugin line: at most 80 bytes naming the first
    /// failing check; exit 0 healthy, 1 failing, 2 inconclusive or could not run.
    Npd,
}

/// Turns a run's document or a fleet report into text.
pub trait Exporter {
    /// One run's document. `pretty`: indented (files and terminals) rather than one line.
    fn document(&self, doc: &Document, pretty: bool) -> Result<String, serde_json::Error>;
    /// A fleet report.
    fn fleet(&self, report: &FleetReport, pretty: bool) -> Result<String, serde_json::Error>;
}

struct Json;

impl Exporter for Json {
    fn document(&self, doc: &Document, pretty: bool) -> Result<String, serde_json::Error> {
        render(doc, pretty)
    }

    fn fleet(&self, report: &FleetReport, pretty: bool) -> Result<String, serde_json::Error> {
        render(report, pretty)
    }
}

struct Junit;

impl Exporter for Junit {
    fn document(&self, doc: &Document, _: bool) -> Result<String, serde_json::Error> {
        Ok(junit::document(doc))
    }

    fn fleet(&self, report: &FleetReport, _: bool) -> Result<String, serde_json::Error> {
        Ok(junit::fleet(report))
    }
}

struct Prometheus;

impl Exporter for Prometheus {
    fn document(&self, doc: &Document, _: bool) -> Result<String, serde_json::Error> {
        Ok(prometheus::document(doc))
    }

    fn fleet(&self, report: &FleetReport, _: bool) -> Result<String, serde_json::Error> {
        Ok(prometheus::fleet(report))
    }
}

struct Npd;

impl Exporter for Npd {
    fn document(&self, doc: &Document, _: bool) -> Result<String, serde_json::Error> {
        Ok(npd::verdict(doc).line)
    }

    fn fleet(&self, report: &FleetReport, _: bool) -> Result<String, serde_json::Error> {
        Ok(npd::fleet_line(report))
    }
}

/// benchpress's envelope around the JSON document (`--envelope`).
pub struct Envelope {
    /// The machine, for the envelope's `machines` record.
    pub system: SystemInfo,
    /// The role's arguments as benchpress records them.
    pub args: Vec<String>,
    /// One id for stdout and `--output`.
    pub run_id: String,
}

impl Exporter for Envelope {
    fn document(&self, doc: &Document, pretty: bool) -> Result<String, serde_json::Error> {
        let env = envelope::wrap(
            doc,
            &self.system,
            self.args.clone(),
            self.run_id.clone(),
            doc.health_check.started_unix,
        );
        render(&env, pretty)
    }

    fn fleet(&self, report: &FleetReport, pretty: bool) -> Result<String, serde_json::Error> {
        render(report, pretty)
    }
}

/// The exporter of `format`.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Json => Box::new(Json),
        Format::Junit => Box::new(Junit),
        Format::Prometheus => Box::new(Prometheus),
        Format::Npd => Box::new(Npd),
    }
}
