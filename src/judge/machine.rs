//! From documents read to machines compared: a label, a model (SKU), the figures, and what the
//! run itself said went wrong. The documents are dropped once their figures are taken, so memory
//! grows with the figures, not with the documents.

use crate::wire::document::{Document, SectionOutcome, Status};
use crate::wire::figures::{self, Figure};
use crate::wire::fleet::{DocumentKind, MachineEntry, MachineStatus, Sku};
use crate::wire::read::{Content, EnvelopeMachine, Loaded};
use std::collections::HashMap;

/// How machines are named in the report (`--label-from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LabelFrom {
    /// The host name, or the file name where host names repeat.
    #[default]
    Auto,
    /// The host name.
    Hostname,
    /// The file name without .json (fleet runs name files after inventory hosts).
    File,
}

impl LabelFrom {
    /// How the report describes the choice.
    pub fn describe(self) -> &'static str {
        match self {
            LabelFrom::Auto => "host names (file names where host names repeat)",
            LabelFrom::Hostname => "host names",
            LabelFrom::File => "file names",
        }
    }
}

/// One machine: its report entry (status and findings still to come) and its figures.
#[derive(Debug)]
pub struct Machine {
    /// The report entry.
    pub entry: MachineEntry,
    /// Every figure.
    pub figures: Vec<Figure>,
    /// Its IP addresses (to recognise it as another machine's client).
    pub addresses: Vec<String>,
    /// The document, kept only when asked (the HTML report draws it).
    pub document: Option<Box<Document>>,
}

/// Turns read files into machines, labelled. `keep_documents` keeps our documents (for the HTML
/// report); otherwise they are dropped after their figures are taken.
pub fn machines_from(loaded: Vec<Loaded>, labels: LabelFrom, keep_documents: bool) -> Vec<Machine> {
    let mut machines: Vec<Machine> = loaded
        .into_iter()
        .map(|l| machine_from(l, keep_documents))
        .collect();
    assign_labels(&mut machines, labels);
    machines
}

fn file_label(source: &str) -> String {
    let path = std::path::Path::new(source);
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string())
}

fn assign_labels(machines: &mut [Machine], how: LabelFrom) {
    let mut host_count: HashMap<String, usize> = HashMap::new();
    for m in machines.iter() {
        if let Some(h) = &m.entry.hostname {
            *host_count.entry(h.clone()).or_default() += 1;
        }
    }
    for m in machines.iter_mut() {
        let file = file_label(&m.entry.source);
        m.entry.label = match (how, &m.entry.hostname) {
            (LabelFrom::File, _) | (_, None) => file,
            (LabelFrom::Hostname, Some(h)) => h.clone(),
            (LabelFrom::Auto, Some(h)) if host_count[h] == 1 => h.clone(),
            (LabelFrom::Auto, Some(_)) => file,
        };
    }
    // Labels must tell machines apart: repeated ones get their file's full path.
    let mut label_count: HashMap<String, usize> = HashMap::new();
    for m in machines.iter() {
        *label_count.entry(m.entry.label.clone()).or_default() += 1;
    }
    for m in machines.iter_mut() {
        if label_count[&m.entry.label] > 1 {
            m.entry.label = m
                .entry
                .source
                .strip_suffix(".json")
                .unwrap_or(&m.entry.source)
                .to_string();
        }
    }
}

fn machine_from(l: Loaded, keep_document: bool) -> Machine {
    let source = l.path.display().to_string();
    let envelope_sku = l.machine.as_ref().map(sku_of_envelope);
    let envelope_host = l.machine.as_ref().and_then(|m| m.hostname.clone());
    let mut entry = MachineEntry {
        label: String::new(),
        source,
        hostname: envelope_host,
        kind: DocumentKind::Unknown,
        sku: envelope_sku,
        group: None,
        status: MachineStatus::Ok,
        reasons: Vec::new(),
        figures: 0,
        missing_figures: Vec::new(),
        checks_failed: Vec::new(),
        baseline_checks: Vec::new(),
        started_unix: l.timestamp,
    };
    let (figures, addresses, document) = match l.content {
        Err(why) => {
            entry.status = MachineStatus::Unreadable;
            entry.reasons.push(why);
            (Vec::new(), Vec::new(), None)
        }
        Ok(Content::HostError(why)) => {
            entry.status = MachineStatus::Failed;
            entry.reasons.push(format!("no document: {why}"));
            (Vec::new(), Vec::new(), None)
        }
        Ok(Content::Upstream(m)) => {
            entry.kind = DocumentKind::Dcperf;
            (figures::of_upstream(&m), Vec::new(), None)
        }
        Ok(Content::Ours(doc)) => {
            entry.kind = DocumentKind::HealthCheck;
            let addresses = describe_ours(&doc, &mut entry);
            let figures = figures::of_document(&doc);
            (figures, addresses, keep_document.then_some(doc))
        }
    };
    entry.figures = figures.len();
    if entry.kind != DocumentKind::Unknown
        && figures.is_empty()
        && entry.status < MachineStatus::Failed
    {
        entry.status = MachineStatus::Failed;
        entry
            .reasons
            .push("the document holds no figure: the run measured nothing".into());
    }
    Machine {
        entry,
        figures,
        addresses,
        document,
    }
}

/// Fills the entry from one of our documents; returns the machine's addresses.
fn describe_ours(doc: &Document, entry: &mut MachineEntry) -> Vec<String> {
    entry.started_unix = Some(doc.health_check.started_unix);
    for (section, outcome) in &doc.health_check.sections.0 {
        match outcome {
            SectionOutcome::Failed(why) => {
                entry.reasons.push(format!("{section} failed: {why}"));
                entry.status = entry.status.max(MachineStatus::Warn);
            }
            SectionOutcome::Interrupted => {
                entry.reasons.push(format!("{section} was interrupted"));
                entry.status = entry.status.max(MachineStatus::Warn);
            }
            SectionOutcome::Ok | SectionOutcome::Skipped(_) => {}
        }
    }
    entry.checks_failed = doc
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.name.to_string())
        .collect();
    let Some(sys) = doc.system() else {
        return Vec::new();
    };
    entry.hostname = sys.hostname.clone().or(entry.hostname.take());
    entry.sku = Some(Sku::of_system(sys));
    sys.nic_links
        .iter()
        .flat_map(|l| l.addresses.iter().cloned())
        .collect()
}

fn sku_of_envelope(m: &EnvelopeMachine) -> Sku {
    let kib = m
        .mem_total_kib
        .as_deref()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok());
    Sku {
        cpu_model: m.cpu_model.clone(),
        logical_cpus: m
            .num_logical_cpus
            .as_deref()
            .and_then(|n| n.trim().parse().ok()),
        sockets: None,
        numa_nodes: None,
        mem_gib: kib.map(|k| (k as f64 / (1 << 20) as f64).round() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(source: &str, host: Option<&str>) -> Machine {
        Machine {
            entry: MachineEntry {
                label: String::new(),
                source: source.into(),
                hostname: host.map(str::to_string),
                kind: DocumentKind::HealthCheck,
                sku: None,
                group: None,
                status: MachineStatus::Ok,
                reasons: vec![],
                figures: 0,
                missing_figures: vec![],
                checks_failed: vec![],
                baseline_checks: vec![],
                started_unix: None,
            },
            figures: vec![],
            addresses: vec![],
            document: None,
        }
    }

    #[test]
    fn labels_are_host_names_unless_they_repeat() {
        let mut m = vec![
            machine("runs/a1.json", Some("vm")),
            machine("runs/a2.json", Some("vm")),
            machine("runs/b.json", Some("box")),
            machine("other/a1.json", None),
        ];
        assign_labels(&mut m, LabelFrom::Auto);
        let labels: Vec<&str> = m.iter().map(|m| m.entry.label.as_str()).collect();
        assert_eq!(labels, ["runs/a1", "a2", "box", "other/a1"]);
        assign_labels(&mut m, LabelFrom::File);
        assert_eq!(m[2].entry.label, "b");
    }

    #[test]
    fn the_envelope_gives_a_partial_sku() {
        let sku = sku_of_envelope(&EnvelopeMachine {
            cpu_model: Some("AMD EPYC".into()),
            num_logical_cpus: Some("2".into()),
            mem_total_kib: Some("24684096 KiB".into()),
            ..Default::default()
        });
        assert_eq!(sku.logical_cpus, Some(2));
        assert_eq!(sku.mem_gib, Some(24));
        assert_eq!(sku.sockets, None);
        let full = Sku {
            sockets: Some(1),
            numa_nodes: Some(1),
            ..sku.clone()
        };
        assert!(sku.compatible(&full) && full.compatible(&sku));
    }
}
