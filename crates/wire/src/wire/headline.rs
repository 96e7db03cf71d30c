//! A finding's headline: who, what and how much in one short line (the evidence stays in its
//! `message`). Made from the finding's own fields, so every finding has one and they read alike.

use super::fleet::{FactDrift, Finding, Scope};
use crate::units::shorten as cut;

/// The most a headline holds, in characters: a line of a terminal or of the fleet page.
pub const MAX: usize = 100;

/// The most a name (a machine, a fact's value) takes of a headline.
const NAME_MAX: usize = 40;

/// The most the closing tag (`; suspect: ...`, `; inconclusive: ...`) takes of a headline.
const TAG_MAX: usize = 40;

/// A figure in three significant digits or fewer, trailing zeros dropped (`5.9`, `23.6`, `0.12`,
/// `1234`).
fn number(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// What disturbed a measurement, in a word or two, from the interference judge's wording
/// (`judge::noise`; its tests hold every cause it names to a word here).
pub fn interference_word(cause: &str) -> &'static str {
    if cause.contains("stole") {
        "CPU steal"
    } else if cause.contains("other processes") {
        "other processes"
    } else if cause.contains("CPU quota") {
        "CPU quota"
    } else if cause.contains("heat") {
        "heat"
    } else {
        "interference"
    }
}

/// The headline of `f`: `h3 as a client: network.bandwidth 0.19 vs 0.94 Gbit/s (-80 %)`.
pub fn of(f: &Finding) -> String {
    let who = cut(&f.who(), NAME_MAX);
    let role = match f.scope {
        Scope::Server => " as a server",
        Scope::Client => " as a client",
        Scope::Machine if f.figure.ends_with(".*") => " both ways",
        _ => "",
    };
    let figure = f.figure.strip_suffix(".*").unwrap_or(&f.figure);
    let tag = tag(f);
    // Who and the tag are kept; what and how much are cut to the room left between them.
    let head = format!("{who}{role}: ");
    let tag = cut(&tag, TAG_MAX);
    let room = MAX - head.chars().count() - tag.chars().count();
    let how_much = match (&f.fact, f.value, f.median) {
        (Some(d), _, _) => drift(d, room),
        (None, Some(v), Some(m)) => {
            let pct = f
                .deviation_pct
                .map_or_else(String::new, |d| format!(" ({d:+.0} %)"));
            format!("{figure} {} vs {} {}{pct}", number(v), number(m), f.unit)
        }
        _ => figure.to_string(),
    };
    format!("{head}{}{tag}", cut(&how_much, room))
}

/// The closing tag: what made the finding inconclusive, or who else may be at fault.
fn tag(f: &Finding) -> String {
    if let Some(cause) = &f.inconclusive {
        format!("; inconclusive: {}", interference_word(cause))
    } else if let Some(suspects) = &f.suspect {
        let path = if f.scope == Scope::Link {
            " or the path"
        } else {
            ""
        };
        format!("; suspect: {}{path}", suspects.join(", "))
    } else {
        String::new()
    }
}

/// A fact that differs from its siblings', in `room` characters: `kernel.release 6.1.0 (not
/// 6.8.0 as 9 of 10)`. The values are cut to the room the rest leaves (24 characters each at
/// most), so the count stays whole: cut at the end, `as 97500 of 100000` read `as 97500 of 10000~`.
fn drift(d: &FactDrift, room: usize) -> String {
    const VALUE_MAX: usize = 24;
    const VALUE_MIN: usize = 6;
    let counts = format!(" as {} of {})", d.agree, d.of);
    let fixed = d.name.chars().count() + " (not ".len() + " ".len() + counts.chars().count();
    let each = (room.saturating_sub(fixed) / 2).clamp(VALUE_MIN, VALUE_MAX);
    format!(
        "{} {} (not {}{counts}",
        d.name,
        cut(&d.value, each),
        cut(&d.majority, each)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rule::Severity;

    fn finding(machine: &str, figure: &str, scope: Scope) -> Finding {
        Finding {
            machine: machine.into(),
            figure: figure.into(),
            client: None,
            scope,
            link: None,
            members: None,
            value: Some(5.9),
            median: Some(23.6),
            fact: None,
            unit: "Gbit/s".into(),
            deviation_pct: Some(-75.0),
            robust_z: None,
            severity: Severity::Fail,
            inconclusive: None,
            suspect: None,
            headline: String::new(),
            message: String::new(),
        }
    }

    #[test]
    fn a_headline_says_who_what_and_how_much() {
        let f = finding("c00", "network.bandwidth.*", Scope::Client);
        assert_eq!(
            of(&f),
            "c00 as a client: network.bandwidth 5.9 vs 23.6 Gbit/s (-75 %)"
        );
        let mut link = finding("a", "network.bandwidth.b", Scope::Link);
        link.link = Some(vec!["a".into(), "b".into()]);
        link.suspect = Some(vec!["b".into()]);
        assert_eq!(
            of(&link),
            "a<->b: network.bandwidth.b 5.9 vs 23.6 Gbit/s (-75 %); suspect: b or the path"
        );
        let mut quota = finding("q", "memory.peak_bandwidth.all reads", Scope::Machine);
        quota.inconclusive =
            Some("the cgroup's CPU quota held the run back 40.0% of the time (limit 5%)".into());
        assert!(
            of(&quota).ends_with("; inconclusive: CPU quota"),
            "{}",
            of(&quota)
        );
        let mut fact = finding("k", "kernel.release", Scope::Machine);
        (fact.value, fact.median, fact.deviation_pct) = (None, None, None);
        fact.fact = Some(FactDrift {
            name: "kernel.release".into(),
            value: "6.1.0".into(),
            majority: "6.8.0".into(),
            agree: 9,
            of: 10,
        });
        assert_eq!(of(&fact), "k: kernel.release 6.1.0 (not 6.8.0 as 9 of 10)");
        // Long values in a large fleet: cut so the count stays whole.
        let mut cmdline = fact.clone();
        cmdline.machine = "host-00007".into();
        cmdline.fact = Some(FactDrift {
            name: "kernel.cmdline".into(),
            value: "ro quiet iommu=pt transparent_hugepage=never".into(),
            majority: "ro quiet iommu=pt transparent_hugepage=madvise".into(),
            agree: 97_500,
            of: 100_000,
        });
        let line = of(&cmdline);
        assert!(line.ends_with(" as 97500 of 100000)"), "{line}");
        assert!(line.chars().count() <= MAX, "{line}");
        assert!(
            line.contains("cmdline ro quiet iommu=pt tran~ (not ro quiet iommu=pt tran~"),
            "{line}"
        );
    }

    #[test]
    fn figures_take_three_digits_at_most() {
        let shown: Vec<String> = [1234.4, 23.64, 5.9, 0.1204, 0.0, -75.0]
            .into_iter()
            .map(number)
            .collect();
        assert_eq!(shown, ["1234", "23.6", "5.9", "0.12", "0", "-75"]);
    }

    /// Any names, any lists of suspects, any facts: never past the limit.
    #[test]
    fn no_headline_is_longer_than_the_limit() {
        let long = "x".repeat(300);
        let mut f = finding(&long, &format!("network.bandwidth.{long}"), Scope::Link);
        f.link = Some(vec![long.clone(), "é".repeat(200)]);
        f.suspect = Some(vec![long.clone(); 20]);
        let line = of(&f);
        assert_eq!(line.chars().count(), MAX, "{line}");
        assert!(line.contains("; suspect: "), "{line}");
        f.fact = Some(FactDrift {
            name: long.clone(),
            value: long.clone(),
            majority: long,
            agree: 1,
            of: 2,
        });
        assert!(of(&f).chars().count() <= MAX);
    }
}
