//! A machine as the fleet's judges see it: a label, an identity and model, the figures, and what
//! the machine's own run says about it before any comparison: failed sections (it stays
//! failed), its own failed checks, sections measured under interference, impossible figures.
//! `documents` reads files into machines (the documents are dropped once their figures are
//! taken, so memory grows with the figures); `identity` gives each machine one vote.

use crate::wire::check::CheckId;
use crate::wire::document::{Document, Section, Status};
use crate::wire::figures::{self, Figure};
use crate::wire::fleet::{DocumentKind, MachineEntry, MachineStatus};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A machine's configuration facts, shared (see [`Machine::facts`]).
pub type Facts = Arc<BTreeMap<String, String>>;

pub mod documents;
pub mod identity;

/// How machines are named in the report (`--label-from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// One machine: its report entry (status and findings still to come), its figures, and what
/// its own document said about it.
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
    /// Sections measured under interference beyond the limits, and what interfered.
    pub interfered: BTreeMap<Section, String>,
    /// Its own checks about one client (`network.bandwidth:c3`) that failed or warned. Blame
    /// may explain a failure by the client or the path, a shortfall its whole group shares by
    /// the group; the failures left fail the machine.
    pub client_checks: Vec<ClientCheck>,
    /// Its configuration as facts (`system.fingerprint`), for the drift among siblings; one
    /// copy for the machines a reading thread found alike (most of a model's are).
    pub facts: Facts,
    /// The clients its aggregate bandwidth measured together, as its document names them.
    pub aggregate_clients: Vec<String>,
    /// Names it claimed (a host name, addresses) that another machine claims too
    /// (`identity::one_vote`): no one's, so a path naming one is nobody's path.
    pub disputed: Vec<String>,
}

/// A check about one path of a machine's that did not pass: one of its run's own, or one of
/// the baseline's on a per-client figure.
#[derive(Debug, Clone)]
pub struct ClientCheck {
    /// The client, as the check names it.
    pub client: String,
    /// The check (`network.bandwidth:c3`, `baseline.network.bandwidth.c3`).
    pub check: CheckId,
    /// What it checks, the same for every client (`network.bandwidth`,
    /// `baseline.network.bandwidth`).
    pub kind: String,
    /// Whose check it is.
    pub origin: Origin,
    /// `fail` or `warn`.
    pub status: Status,
    /// The checked value, where the check has one.
    pub value: Option<f64>,
    /// Its limit.
    pub limit: Option<f64>,
    /// The check's message.
    pub message: String,
}

/// Whose check a [`ClientCheck`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The machine's run gave it: its failures fail the machine, its warnings are its run's.
    Run,
    /// The baseline gave it (`--baseline`): a warning warns the machine too.
    Baseline,
}

impl Origin {
    /// How a reason names a check of this origin.
    pub fn word(self) -> &'static str {
        match self {
            Origin::Run => "its own check",
            Origin::Baseline => "baseline check",
        }
    }
}

impl ClientCheck {
    /// A run's own check `check` about `client`.
    pub fn own(
        client: &str,
        check: CheckId,
        status: Status,
        value: Option<f64>,
        limit: Option<f64>,
        message: String,
    ) -> ClientCheck {
        ClientCheck {
            client: client.to_string(),
            kind: format!("{}.{}", check.section, check.rule),
            check,
            origin: Origin::Run,
            status,
            value,
            limit,
            message,
        }
    }

    pub(super) fn of(client: &str, c: &crate::wire::check::Check) -> ClientCheck {
        ClientCheck::own(
            client,
            c.name.clone(),
            c.status,
            c.value,
            c.limit,
            c.message.clone(),
        )
    }

    /// The baseline's check `c` when it is about a path (a per-client network figure's) and
    /// did not pass.
    pub fn of_baseline(c: &crate::wire::check::Check) -> Option<ClientCheck> {
        if !matches!(c.status, Status::Fail | Status::Warn) || c.name.section != "baseline" {
            return None;
        }
        let (family, client) = figures::FAMILIES.iter().find_map(|f| {
            let client = c.name.rule.strip_prefix(f.name)?.strip_prefix('.')?;
            (f.per_client() && f.section == Section::Network).then_some((f, client))
        })?;
        Some(ClientCheck {
            client: client.to_string(),
            check: c.name.clone(),
            kind: format!("baseline.{}", family.name),
            origin: Origin::Baseline,
            status: c.status,
            value: c.value,
            limit: c.limit,
            message: c.message.clone(),
        })
    }

    /// Whether it makes the machine's status when nothing explains it: a failure, or the
    /// baseline's warning.
    pub fn counts(&self) -> bool {
        self.status == Status::Fail
            || (self.origin == Origin::Baseline && self.status == Status::Warn)
    }
}

impl Machine {
    /// Takes `c` as explained by `why`: a reason on the machine, and the baseline's check, if
    /// it is one, skipped with the explanation (the report's checks agree with the status).
    pub fn explained(&mut self, c: &ClientCheck, why: &str) {
        self.skip_baseline_check(c, why);
        let word = if c.status == Status::Fail {
            "failed"
        } else {
            "warned"
        };
        self.entry.reasons.push(format!(
            "{} {} {word}, explained by {why}",
            c.origin.word(),
            c.check
        ));
    }

    /// The baseline's check behind `c`, if it is one, skipped as explained by `why`.
    pub fn skip_baseline_check(&mut self, c: &ClientCheck, why: &str) {
        if c.origin != Origin::Baseline {
            return;
        }
        if let Some(b) = self
            .entry
            .baseline_checks
            .iter_mut()
            .find(|b| b.name == c.check)
        {
            b.status = Status::Skip;
            b.message = format!("{}; explained by {why}", b.message);
        }
    }

    /// Raises the machine's status to `status` (never lowers it) and records why: first among
    /// the reasons when it decides the status, so the first reason always says why the status
    /// is what it is.
    pub fn raise(&mut self, status: MachineStatus, why: impl Into<String>) {
        if status > self.entry.status {
            self.entry.reasons.insert(0, why.into());
        } else {
            self.entry.reasons.push(why.into());
        }
        self.entry.status = self.entry.status.max(status);
    }

    /// A machine of this entry, nothing known of it yet.
    pub(super) fn of_entry(entry: MachineEntry) -> Machine {
        Machine {
            entry,
            figures: Vec::new(),
            addresses: Vec::new(),
            document: None,
            interfered: BTreeMap::new(),
            client_checks: Vec::new(),
            facts: Facts::default(),
            aggregate_clients: Vec::new(),
            disputed: Vec::new(),
        }
    }

    /// A machine known only from others' measurements of it (no document of its own).
    pub fn measured_only(label: &str) -> Machine {
        Machine::of_entry(blank_entry(String::new(), DocumentKind::None)).labelled(label)
    }

    fn labelled(mut self, label: &str) -> Machine {
        self.entry.label = label.to_string();
        self.entry.hostname = Some(label.to_string());
        self
    }
}

pub(super) fn blank_entry(source: String, kind: DocumentKind) -> MachineEntry {
    MachineEntry {
        label: String::new(),
        source,
        hostname: None,
        kind,
        sku: None,
        group: None,
        status: MachineStatus::Ok,
        reasons: Vec::new(),
        figures: 0,
        missing_figures: Vec::new(),
        not_compared: Vec::new(),
        checks_failed: Vec::new(),
        baseline_checks: Vec::new(),
        started_unix: None,
        machine_id: None,
        boot_id: None,
    }
}
