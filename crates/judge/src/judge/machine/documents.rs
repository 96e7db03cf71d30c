//! Documents read into machines: each file as a machine of its own ([`machine_from`], in the
//! threads that read them), then the fleet's settled ([`settle`]): one vote per machine,
//! labels, and a second round's documents joined to their hosts.

use super::{ClientCheck, LabelFrom, Machine, blank_entry, identity};
use crate::judge::checks::Thresholds;
use crate::judge::noise;
use crate::wire::document::{Document, SectionOutcome, Status};
use crate::wire::figures::{self, Extracted, Figure};
use crate::wire::fleet::{DocumentKind, IdentityKind, IdentityNote, MachineStatus, Sku};
use crate::wire::identity::MachineIdentity;
use crate::wire::read::{Content, EnvelopeMachine, Loaded};
use foldhash::fast::FixedState;
use std::collections::HashMap;

/// Settles files already turned into machines one by one ([`machine_from`], in the threads
/// that read them): one vote each ([`identity`]), labelled, and says what was merged, dropped
/// or doubted.
pub fn settle(read: Vec<Machine>, labels: LabelFrom) -> (Vec<Machine>, Vec<IdentityNote>) {
    let is_second = |m: &Machine| m.entry.source.ends_with(SECOND_ROUND);
    // Split only when there is a second round: a fleet's machines are not copied for nothing.
    let (second, machines): (Vec<Machine>, Vec<Machine>) = if read.iter().any(is_second) {
        read.into_iter().partition(is_second)
    } else {
        (Vec::new(), read)
    };
    let (mut machines, mut notes) = identity::one_vote(machines);
    assign_labels(&mut machines, labels);
    notes.extend(join_second_round(&mut machines, second, labels));
    (machines, notes)
}

/// How a second round's document is named: `<host>.resolve.json` beside `<host>.json`.
pub const SECOND_ROUND: &str = ".resolve.json";

/// A second round's documents (the measurements `compare` asked for in `resolve`) join their
/// machine: its per-client figures are added to the machine's of the same host (by file name;
/// by host name too unless machines are labelled by file), when the document is that host's
/// (the same machine id and model, and no other host name). A second round that belongs to no
/// host of the fleet, or to another machine, is named and ignored; one whose run failed is a
/// reason on its machine, never a failure of it. A host the first round only measured as a
/// client is a machine of its second round's document.
fn join_second_round(
    machines: &mut Vec<Machine>,
    second: Vec<Machine>,
    labels: LabelFrom,
) -> Vec<IdentityNote> {
    let mut notes = Vec::new();
    let mut added = Vec::new();
    if second.is_empty() {
        return notes;
    }
    // Every host a test of either round measured, whatever order the files come in.
    let clients: std::collections::HashSet<String> = machines
        .iter()
        .chain(&second)
        .flat_map(|m| {
            m.figures
                .iter()
                .filter_map(|f| f.client().map(str::to_string))
        })
        .collect();
    for r in second {
        let stem = file_label(&r.entry.source);
        let host = stem.strip_suffix(".resolve").unwrap_or(&stem).to_string();
        let same = machines.iter().position(|m| {
            file_label(&m.entry.source) == host
                || (labels != LabelFrom::File
                    && m.entry.hostname.is_some()
                    && m.entry.hostname == r.entry.hostname)
        });
        let ignored = |why: String| IdentityNote {
            kind: IdentityKind::Ignored,
            files: vec![r.entry.source.clone()],
            message: format!(
                "{}: a second round's document {why}: ignored",
                r.entry.source
            ),
        };
        let Some(i) = same else {
            // A host the first round measured as a client, without a document of its own: its
            // second round is its document (its model, its own tests), unless it is the
            // document of a machine the fleet already has.
            // Named as the first round named it: by file, host name or address.
            let measured = clients.contains(host.as_str())
                || r.entry
                    .hostname
                    .as_ref()
                    .is_some_and(|h| clients.contains(h))
                || r.addresses.iter().any(|a| clients.contains(a));
            let twin = machines
                .iter()
                .find(|m| m.entry.machine_id.is_some() && m.entry.machine_id == r.entry.machine_id);
            match (measured, twin) {
                (false, _) => notes.push(ignored(format!(
                    "for host '{host}', which is not in the fleet (no document of its own, and \
                     no test measured it)"
                ))),
                (true, Some(t)) => notes.push(ignored(format!(
                    "from machine {}, which is {}'s, not '{host}'s",
                    r.entry.machine_id.as_deref().unwrap_or_default(),
                    t.entry.source
                ))),
                (true, None) => {
                    let mut r = r;
                    r.entry.label = match (labels, &r.entry.hostname) {
                        (LabelFrom::Hostname | LabelFrom::Auto, Some(h)) => h.clone(),
                        _ => host,
                    };
                    added.push(r);
                }
            }
            continue;
        };
        let m = &machines[i];
        let differs = |a: &Option<String>, b: &Option<String>| a.is_some() && b.is_some() && a != b;
        let mismatch = if differs(&r.entry.machine_id, &m.entry.machine_id) {
            Some(format!(
                "from machine {}, while {} is machine {}",
                r.entry.machine_id.as_deref().unwrap_or_default(),
                m.entry.source,
                m.entry.machine_id.as_deref().unwrap_or_default()
            ))
        } else if r.entry.sku.is_some() && m.entry.sku.is_some() && r.entry.sku != m.entry.sku {
            Some(format!("of another model than {}", m.entry.source))
        } else if differs(&r.entry.hostname, &m.entry.hostname) {
            Some(format!(
                "named after host '{}', while {} is '{}'",
                r.entry.hostname.as_deref().unwrap_or_default(),
                m.entry.source,
                m.entry.hostname.as_deref().unwrap_or_default()
            ))
        } else {
            None
        };
        if let Some(why) = mismatch {
            notes.push(ignored(why));
            continue;
        }
        let m = &mut machines[i];
        if r.entry.status > MachineStatus::Alone {
            m.entry.reasons.push(format!(
                "its second round ({}) is not counted: {}",
                r.entry.source,
                r.entry.reasons.join("; ")
            ));
            continue;
        }
        let extra: Vec<Figure> = r
            .figures
            .into_iter()
            .filter(|f| f.family.per_client())
            .collect();
        m.entry.figures += extra.len();
        m.figures.extend(extra);
        m.addresses.extend(r.addresses);
    }
    machines.extend(added);
    notes
}

fn file_label(source: &str) -> String {
    let path = std::path::Path::new(source);
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string())
}

fn assign_labels(machines: &mut [Machine], how: LabelFrom) {
    // Counted by borrowed names, each label made once (a fleet of 100,000 copied every host
    // name and label into the counts).
    let labels: Vec<String> = {
        let mut host_count: HashMap<&str, usize, FixedState> = HashMap::default();
        for h in machines.iter().filter_map(|m| m.entry.hostname.as_deref()) {
            *host_count.entry(h).or_default() += 1;
        }
        machines
            .iter()
            .map(|m| match (how, m.entry.hostname.as_deref()) {
                (LabelFrom::File, _) | (_, None) => file_label(&m.entry.source),
                (LabelFrom::Hostname, Some(h)) => h.to_string(),
                (LabelFrom::Auto, Some(h)) if host_count[h] == 1 => h.to_string(),
                (LabelFrom::Auto, Some(_)) => file_label(&m.entry.source),
            })
            .collect()
    };
    // Labels must tell machines apart: repeated ones get their file's full path.
    let mut label_count: HashMap<&str, usize, FixedState> = HashMap::default();
    for l in &labels {
        *label_count.entry(l).or_default() += 1;
    }
    let repeated: Vec<bool> = labels.iter().map(|l| label_count[l.as_str()] > 1).collect();
    drop(label_count);
    for ((m, label), repeated) in machines.iter_mut().zip(labels).zip(repeated) {
        m.entry.label = if repeated {
            let source = &m.entry.source;
            source.strip_suffix(".json").unwrap_or(source).to_string()
        } else {
            label
        };
    }
}

/// One read file as a machine of the fleet: its identity, figures, own checks and interference;
/// `keep_document` keeps our document on it (for the HTML report).
pub fn machine_from(l: Loaded, keep_document: bool, t: &Thresholds) -> Machine {
    let mut m = Machine::of_entry(blank_entry(
        l.path.display().to_string(),
        DocumentKind::Unknown,
    ));
    m.entry.started_unix = l.timestamp;
    let envelope = l.machine.as_ref().map(identity_of_envelope);
    if let Some(id) = &envelope {
        m.entry.hostname = id.hostname.clone();
        m.entry.sku = Some(Sku::of(id));
    }
    match l.content {
        Err(why) => m.raise(MachineStatus::Unreadable, why),
        Ok(Content::HostError(why, addresses)) => {
            m.addresses = addresses;
            m.raise(MachineStatus::Failed, format!("no document: {why}"));
        }
        Ok(Content::Upstream(u)) => {
            m.entry.kind = DocumentKind::Dcperf;
            let mut got = figures::of_upstream(&u);
            if let Some(id) = &envelope {
                got.figures.splice(0..0, figures::of_identity(id).figures);
            }
            take_extracted(&mut m, got);
        }
        Ok(Content::Ours(doc)) => {
            m.entry.kind = DocumentKind::HealthCheck;
            let identity = doc.identity().or(envelope);
            describe_ours(&doc, identity.as_ref(), &mut m, t);
            take_extracted(&mut m, figures::of_document_as(&doc, identity.as_ref()));
            if let Some(sys) = doc.system() {
                m.facts = shared_facts(&sys.fingerprint);
            }
            if let Some(a) = &doc.network_aggregate {
                m.aggregate_clients = a.clients.clone();
            }
            if keep_document {
                m.document = Some(doc);
            }
        }
    }
    m
}

/// The copy of `facts` this thread's machines share: a fleet's machines of one model mostly
/// report the same (10,000 copies of twenty facts were a third of a fleet run's memory).
fn shared_facts(facts: &std::collections::BTreeMap<String, String>) -> super::Facts {
    thread_local! {
        static SEEN: std::cell::RefCell<std::collections::HashSet<super::Facts>> =
            std::cell::RefCell::default();
    }
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(shared) = seen.get(facts) {
            return shared.clone();
        }
        let shared = super::Facts::new(facts.clone());
        seen.insert(shared.clone());
        shared
    })
}

/// Takes a document's figures; an impossible value makes the whole document untrusted.
fn take_extracted(m: &mut Machine, got: Extracted) {
    if !got.rejected.is_empty() {
        m.raise(
            MachineStatus::Unreadable,
            format!(
                "impossible figures (negative or not finite): {}",
                got.rejected.join("; ")
            ),
        );
        return;
    }
    m.entry.figures = got.figures.len();
    m.figures = got.figures;
    // Read one at a time, the figures left room for as many again: a fleet keeps every
    // machine's.
    m.figures.shrink_to_fit();
}

/// What benchpress's envelope says of the machine: model, CPUs and memory, no topology.
fn identity_of_envelope(m: &EnvelopeMachine) -> MachineIdentity {
    MachineIdentity {
        hostname: m.hostname.clone(),
        cpu_model: m.cpu_model.clone(),
        architecture: m.cpu_architecture.clone().unwrap_or_default(),
        logical_cpus: m
            .num_logical_cpus
            .as_deref()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0),
        mem_total_kib: m
            .mem_total_kib
            .as_deref()
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok()),
        ..MachineIdentity::default()
    }
}

/// Fills the entry from one of our documents: identity, own sections, own checks, interference;
/// returns nothing, records everything on `m`.
fn describe_ours(
    doc: &Document,
    identity: Option<&MachineIdentity>,
    m: &mut Machine,
    t: &Thresholds,
) {
    m.entry.started_unix = Some(doc.health_check.started_unix);
    if let Some(id) = identity {
        m.entry.hostname = id.hostname.clone().or(m.entry.hostname.take());
        m.entry.machine_id = id.machine_id.clone();
        m.entry.boot_id = id.boot_id.clone();
        m.entry.sku = Some(Sku::of(id));
    }
    for (section, outcome) in &doc.health_check.sections.0 {
        match outcome {
            SectionOutcome::Failed(why) => {
                m.raise(MachineStatus::Failed, format!("{section} failed: {why}"))
            }
            SectionOutcome::Interrupted => {
                m.raise(MachineStatus::Warn, format!("{section} was interrupted"))
            }
            SectionOutcome::Ok | SectionOutcome::Skipped(_) => {}
        }
    }
    for (section, i) in &doc.health_check.interference {
        if let Some(why) = noise::interfered(i, t) {
            m.entry
                .reasons
                .push(format!("{section} was measured under interference: {why}"));
            m.interfered.insert(*section, why);
        }
    }
    for c in doc.checks.iter() {
        // A document written with other limits (or by an older version) may hold a failure
        // that load moved: judged by these limits, it is inconclusive, not the machine's fault.
        let disturbed = noise::section_of(&c.name)
            .and_then(|s| m.interfered.get(&s))
            .filter(|_| noise::load_can_move(&c.name));
        if let (Status::Warn, Some(client), "network", None) = (
            c.status,
            &c.name.subject,
            c.name.section.as_str(),
            disturbed,
        ) {
            m.client_checks.push(ClientCheck::of(client, c));
        }
        if c.status != Status::Fail {
            continue;
        }
        if let Some(why) = disturbed {
            m.raise(
                MachineStatus::Inconclusive,
                format!(
                    "its own check {} failed under interference ({why}): not judged",
                    c.name
                ),
            );
            continue;
        }
        m.entry.checks_failed.push(c.name.to_string());
        match (&c.name.subject, c.name.section.as_str()) {
            (Some(client), "network") => m.client_checks.push(ClientCheck::of(client, c)),
            _ => m.raise(
                MachineStatus::Fail,
                format!("its own check {} failed: {}", c.name, c.message),
            ),
        }
    }
    if let Some(sys) = doc.system() {
        m.addresses = sys
            .nic_links
            .iter()
            .flat_map(|l| l.addresses.iter().cloned())
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(source: &str, host: Option<&str>) -> Machine {
        let mut m = Machine::measured_only("x");
        m.entry.source = source.into();
        m.entry.hostname = host.map(str::to_string);
        m.entry.kind = DocumentKind::HealthCheck;
        m
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

    /// A second round's document joins its host's machine (its per-client figures only), a
    /// failed second round is a reason, not a fault, a host measured only as a client becomes a
    /// machine of its own second round, and one for a host not in the fleet, or from another
    /// machine than its host's, is named and ignored.
    #[test]
    fn a_second_rounds_documents_join_their_hosts() {
        use crate::wire::figures::{BANDWIDTH, PEAK_BANDWIDTH};
        let fig = |family, label: &str| {
            Figure::new(family, vec![label.into()], 9.4, std::sync::Arc::from("b")).unwrap()
        };
        let mut h1 = machine("run/h1.json", Some("same"));
        h1.figures = vec![fig(&BANDWIDTH, "h2")];
        let mut h1_second = machine("run/h1.resolve.json", Some("same"));
        h1_second.figures = vec![fig(&BANDWIDTH, "h4"), fig(&PEAK_BANDWIDTH, "all reads")];
        let h4_second = machine("run/h4.resolve.json", Some("same"));
        let h9_second = machine("run/h9.resolve.json", Some("same"));
        let mut h2_failed = machine("run/h2.resolve.json", Some("same"));
        h2_failed.raise(MachineStatus::Failed, "network: refused");
        let mut h2 = machine("run/h2.json", Some("same"));
        h2.figures = vec![
            fig(&BANDWIDTH, "h1"),
            fig(&BANDWIDTH, "h3"),
            fig(&BANDWIDTH, "10.0.0.5"),
        ];
        h1.entry.machine_id = Some("id-h1".into());
        let mut impostor = machine("run/h1.resolve.json", Some("same"));
        impostor.entry.machine_id = Some("id-other".into());
        let mut h1_as_h3 = machine("run/h3.resolve.json", Some("same"));
        h1_as_h3.entry.machine_id = Some("id-h1".into());
        // A client the first round named by its address only (DCPerf's star): its second round
        // is its document.
        let mut h5_second = machine("run/h5.resolve.json", Some("h5"));
        h5_second.addresses = vec!["10.0.0.5".into()];
        let mut ms = vec![h1, h2];
        assign_labels(&mut ms, LabelFrom::File);
        let notes = join_second_round(
            &mut ms,
            vec![
                h1_second, h4_second, h9_second, h2_failed, impostor, h1_as_h3, h5_second,
            ],
            LabelFrom::File,
        );
        let labels: Vec<&str> = ms.iter().map(|m| m.entry.label.as_str()).collect();
        assert_eq!(
            labels,
            ["h1", "h2", "h4", "h5"],
            "h4: measured in h1's second round; h5: by its address"
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0]
                .message
                .contains("for host 'h9', which is not in the fleet"),
            "{notes:?}"
        );
        assert!(
            notes[1]
                .message
                .contains("from machine id-other, while run/h1.json is machine id-h1")
        );
        assert!(
            notes[2]
                .message
                .contains("from machine id-h1, which is run/h1.json's, not 'h3's"),
            "{notes:?}"
        );
        let names: Vec<String> = ms[0].figures.iter().map(Figure::name).collect();
        assert_eq!(names, ["network.bandwidth.h2", "network.bandwidth.h4"]);
        assert_eq!(ms[0].entry.figures, 1, "the count of the figures added");
        assert_eq!(ms[1].entry.status, MachineStatus::Ok);
        assert!(
            ms[1].entry.reasons[0].contains(
                "its second round (run/h2.resolve.json) is not counted: network: refused"
            )
        );
    }

    #[test]
    fn the_envelope_gives_the_cpu_model_and_the_machines_figures() {
        let id = identity_of_envelope(&EnvelopeMachine {
            cpu_model: Some("AMD EPYC".into()),
            num_logical_cpus: Some("2".into()),
            mem_total_kib: Some("24684096 KiB".into()),
            ..Default::default()
        });
        assert_eq!((id.logical_cpus, id.mem_total_kib), (2, Some(24_684_096)));
        let sku = Sku::of(&id);
        assert!(!sku.complete());
        let full = Sku {
            sockets: Some(1),
            cores_per_socket: Some(2),
            numa_nodes: Some(1),
            ..sku.clone()
        };
        assert!(sku.compatible(&full) && full.compatible(&sku));
    }
}
