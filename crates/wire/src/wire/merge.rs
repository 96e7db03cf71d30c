//! Several documents of one machine as one: a fleet run measures the network in rounds (one
//! document per round in which the machine led a test) and the local sections once; `merge`
//! puts them together so the fleet report has one document per machine. Typed throughout: what
//! a section holds is taken from the document that measured it.

use crate::wire::document::{Document, Part, SectionOutcome};

/// Why documents cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no document to merge")]
    Empty,
    /// The documents describe different machines.
    #[error(
        "'{first}' and '{other}' are different machines (host names differ); merge the documents of one machine"
    )]
    OtherMachine {
        /// The first host name.
        first: String,
        /// The other.
        other: String,
    },
}

fn rank(o: &SectionOutcome) -> u8 {
    match o {
        SectionOutcome::Ok => 3,
        SectionOutcome::Interrupted => 2,
        SectionOutcome::Failed(_) => 1,
        SectionOutcome::Skipped(_) => 0,
    }
}

/// The measured part when one document has it, else the first reason it has none.
fn pick<T>(parts: impl Iterator<Item = Option<Part<T>>>) -> Option<Part<T>> {
    let mut fallback = None;
    for p in parts.flatten() {
        match p {
            Part::Measured(_) => return Some(p),
            Part::NotMeasured(_) if fallback.is_none() => fallback = Some(p),
            Part::NotMeasured(_) => {}
        }
    }
    fallback
}

/// Merges documents of one machine, in the order given.
pub fn merge(docs: Vec<Document>) -> Result<Document, MergeError> {
    let hosts: Vec<String> = docs
        .iter()
        .filter_map(|d| d.system().and_then(|s| s.hostname.clone()))
        .collect();
    if let Some(other) = hosts.iter().find(|h| **h != hosts[0]) {
        return Err(MergeError::OtherMachine {
            first: hosts[0].clone(),
            other: other.clone(),
        });
    }
    let mut docs = docs.into_iter();
    let mut out = docs.next().ok_or(MergeError::Empty)?;
    let rest: Vec<Document> = docs.collect();
    for d in &rest {
        let info = &d.health_check;
        for c in &info.clients {
            if !out.health_check.clients.contains(c) {
                out.health_check.clients.push(c.clone());
            }
        }
        out.health_check.seconds =
            crate::units::round_to(out.health_check.seconds + info.seconds, 3);
        out.health_check.started_unix = out.health_check.started_unix.min(info.started_unix);
        out.health_check.interrupted_by = out.health_check.interrupted_by.or(info.interrupted_by);
        for (name, outcome) in &info.sections.0 {
            match out
                .health_check
                .sections
                .0
                .iter_mut()
                .find(|(n, _)| n == name)
            {
                Some((_, mine)) if rank(outcome) > rank(mine) => *mine = outcome.clone(),
                Some(_) => {}
                None => out.health_check.sections.0.push((*name, outcome.clone())),
            }
        }
        for c in &d.checks {
            if !out.checks.iter().any(|x| x.name == c.name) {
                out.checks.push(c.clone());
            }
        }
    }
    let mut ping = out.ping.take();
    let mut bandwidth = out.iperf3_bandwidth.take();
    let mut dcperf = out.iperf3_bandwidth_dcperf.take();
    let mut sleep = vec![out.sleepbench.take()];
    let mut memory = vec![out.memory.take()];
    let mut storage = vec![out.storage.take()];
    let mut system = vec![out.system.take()];
    for d in rest {
        if let Some(t) = d.ping {
            ping.get_or_insert_with(Vec::new).extend(t);
        }
        if let Some(t) = d.iperf3_bandwidth {
            bandwidth.get_or_insert_with(Vec::new).extend(t);
        }
        if let Some(t) = d.iperf3_bandwidth_dcperf {
            dcperf.get_or_insert_with(Vec::new).extend(t);
        }
        out.network_aggregate = out.network_aggregate.take().or(d.network_aggregate);
        out.responder = out.responder.take().or(d.responder);
        sleep.push(d.sleepbench);
        memory.push(d.memory);
        storage.push(d.storage);
        system.push(d.system);
    }
    out.ping = ping;
    out.iperf3_bandwidth = bandwidth;
    out.iperf3_bandwidth_dcperf = dcperf;
    out.sleepbench = pick(sleep.into_iter());
    out.memory = pick(memory.into_iter());
    out.storage = pick(storage.into_iter());
    out.system = pick(system.into_iter());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::document::Section;

    fn fixture() -> Document {
        serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/document.json"
        )))
        .unwrap()
    }

    #[test]
    fn rounds_and_local_sections_become_one_document() {
        let mut local = fixture();
        local.ping = None;
        local.iperf3_bandwidth = None;
        local.iperf3_bandwidth_dcperf = None;
        local.health_check.clients.clear();
        local
            .health_check
            .sections
            .0
            .retain(|(n, _)| *n != Section::Network);
        local.health_check.sections.0.push((
            Section::Network,
            SectionOutcome::Skipped("not in --only".into()),
        ));
        let mut round1 = fixture();
        round1.memory = None;
        round1.sleepbench = None;
        round1.storage = None;
        round1.checks.retain(|c| c.name.section == "network");
        let mut round2 = round1.clone();
        for b in round2.iperf3_bandwidth.iter_mut().flatten() {
            b.hostname = "other".into();
        }
        for p in round2.ping.iter_mut().flatten() {
            p.hostname = "other".into();
        }
        round2.health_check.clients = vec!["other".into()];
        let merged = merge(vec![local, round1, round2]).unwrap();
        assert_eq!(merged.iperf3_bandwidth.as_ref().unwrap().len(), 2);
        assert_eq!(merged.ping.as_ref().unwrap().len(), 2);
        assert_eq!(
            merged.health_check.clients,
            ["localhost", "other"],
            "clients of every round"
        );
        assert!(merged.memory().is_some() && merged.sleep().is_some());
        assert_eq!(
            merged.health_check.sections.get(Section::Network),
            Some(&SectionOutcome::Ok)
        );
        let mut stranger = fixture();
        if let Some(Part::Measured(s)) = &mut stranger.system {
            s.hostname = Some("elsewhere".into());
        }
        assert!(matches!(
            merge(vec![fixture(), stranger]),
            Err(MergeError::OtherMachine { .. })
        ));
        assert!(matches!(merge(vec![]), Err(MergeError::Empty)));
    }
}
