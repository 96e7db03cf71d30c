use super::*;

fn config(args: &[&str]) -> Result<Config, ConfigError> {
    let argv = crate::cli::normalize_args(args.iter().map(std::ffi::OsString::from));
    let cli = Cli::parse_args(argv).expect("clap accepts the test argv");
    Config::from_cli(&cli, 2)
}

#[test]
fn clients_are_split_trimmed_and_deduplicated() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(split_clients(&v(&["a,,b", " c ,a"])), ["a", "b", "c"]);
    assert!(split_clients(&v(&[""])).is_empty());
}

#[test]
fn server_role_plans_all_but_storage() {
    let c = config(&["hc", "-r", "server", "-c", "h1,h2"]).unwrap();
    assert_eq!(c.mode, Mode::Server);
    assert_eq!(c.clients, ["h1", "h2"]);
    assert_eq!(
        c.plan,
        [
            Section::System,
            Section::Network,
            Section::Sleep,
            Section::Memory
        ]
    );
    assert_eq!(c.excluded[0].0, Section::Storage);
    assert_eq!(c.sleep.threads, 5);
    assert_eq!(c.sleep.duration, Duration::from_secs(30));
}

#[test]
fn only_and_skip_shape_the_plan() {
    let c = config(&[
        "hc",
        "-r",
        "server",
        "--only",
        "sleep,system",
        "--skip",
        "system",
    ])
    .unwrap();
    assert_eq!(c.plan, [Section::Sleep]);
    assert_eq!(c.excluded.len(), 4);
}

/// nhc.conf's TIMEOUT is the run's deadline; --deadline wins; under slurmd it never passes
/// slurmd's own limit.
#[test]
fn an_nhc_timeout_is_the_deadline_unless_deadline_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nhc.conf");
    std::fs::write(&conf, "* || export TIMEOUT=20\n* || check_hw_swap_free 0\n").unwrap();
    let c = conf.to_str().unwrap();
    let check = ["hc", "-r", "server", "--profile", "check", "--nhc-conf", c];
    let run = config(&check).unwrap();
    assert_eq!(run.deadline, Some(Duration::from_secs(20)));
    assert!(run.notes.is_empty(), "{:?}", run.notes);
    let given = config(&["hc", "-r", "server", "--nhc-conf", c, "--deadline", "7"]).unwrap();
    assert_eq!(given.deadline, Some(Duration::from_secs(7)));
    // Shorter than the level's budget (quick: 30 s) and its margin: raised, and said.
    let quick = config(&["hc", "-r", "server", "--profile", "quick", "--nhc-conf", c]).unwrap();
    assert_eq!(quick.deadline, Some(Duration::from_secs(35)));
    assert!(
        quick.notes.iter().any(|n| n.contains("TIMEOUT=20")),
        "{:?}",
        quick.notes
    );
    std::fs::write(&conf, "* || export TIMEOUT=300\n").unwrap();
    let slurm = config(&["hc", "slurm", "--nhc-conf", c]).unwrap();
    assert_eq!(slurm.deadline, Some(crate::profile::SLURM_DEADLINE));
    let run = config(&["hc", "-r", "server", "--nhc-conf", c]).unwrap();
    assert_eq!(run.deadline, Some(Duration::from_secs(300)));
}

/// slurm reads /etc/nhc/nhc.conf when it exists; one it cannot honour is said, not fatal;
/// a file given is read or is an error; an empty value reads none.
#[test]
fn slurm_reads_the_sites_nhc_conf_by_itself_and_survives_one_it_cannot_honour() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("nhc.conf");
    assert_eq!(nhc_config(None, Some(&default)).unwrap(), (None, None));
    std::fs::write(&default, "* || check_hw_swap_free 0\n").unwrap();
    let (conf, unread) = nhc_config(None, Some(&default)).unwrap();
    assert_eq!((conf.unwrap().lines.len(), unread), (1, None));
    assert_eq!(nhc_config(None, None).unwrap(), (None, None));
    std::fs::write(&default, "* || check_moab_sched\n").unwrap();
    let (conf, unread) = nhc_config(None, Some(&default)).unwrap();
    assert!(conf.is_none());
    assert!(unread.unwrap().contains("check_moab_sched"));
    let e = nhc_config(Some(&default), None).unwrap_err();
    assert_eq!(e.flag, "--nhc-conf");
    assert_eq!(
        nhc_config(Some(Path::new("")), Some(&default)).unwrap(),
        (None, None)
    );
}

#[test]
fn missing_role_names_the_flag() {
    let e = config(&["hc"]).unwrap_err();
    assert_eq!(e.flag, "-r");
}

#[test]
fn bad_sleep_values_name_the_flag() {
    assert_eq!(
        config(&["hc", "-r", "server", "--sleep-time", "x"])
            .unwrap_err()
            .flag,
        "--sleep-time"
    );
    assert_eq!(
        config(&["hc", "-r", "server", "--sleep-threads", "0"])
            .unwrap_err()
            .flag,
        "--sleep-threads"
    );
}

#[test]
fn quick_profile_and_overrides() {
    let c = config(&["hc", "sleep", "--profile", "quick", "--sleep-threads", "3"]).unwrap();
    assert_eq!(c.mode, Mode::Debug(Debug::Sleep));
    assert_eq!(c.plan, [Section::Sleep]);
    assert_eq!(c.sleep.duration, Duration::from_secs(3));
    assert_eq!(c.sleep.threads, 3);
}

#[test]
fn client_role_ignores_clients_with_a_note() {
    let c = config(&["hc", "-r", "client", "-c", "x"]).unwrap();
    assert_eq!(c.mode, Mode::Client);
    assert!(c.plan.is_empty());
    assert_eq!(c.notes.len(), 1);
}
