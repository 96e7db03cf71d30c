use super::*;

fn parse(text: &str, host: &str) -> Result<Conf, ConfError> {
    Conf::parse(
        text.as_bytes(),
        Path::new("nhc.conf"),
        host.as_bytes(),
        true,
    )
}

/// The arguments a line's check gets, given no variables (for lines without expansions).
fn args(line: &Line) -> Vec<String> {
    let mut vars = std::collections::BTreeMap::new();
    crate::nhc::bash::expand::args(&line.command.args, &mut vars)
        .unwrap()
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn lines_settings_and_comments_are_read_as_nhc_reads_them() {
    let text = "# comment\n   # indented\n\
        * || export MARK_OFFLINE=0\n\
        * || TIMEOUT=15\n\
        n1 || check_fs_mount_rw -f /\n\
        other || check_fs_mount_rw -f /other\n\
        * || check_file_test -r -s \\\n   /etc/passwd   # trailing comment\n\
        * || check_hw_physmem 1k 1TB\n";
    let c = parse(text, "n1").unwrap();
    assert_eq!(c.timeout_secs, Some(15));
    let got: Vec<(usize, Kind, Vec<String>)> = c
        .lines
        .iter()
        .map(|l| (l.number, l.kind.clone(), args(l)))
        .collect();
    let check = |n: &str| Kind::Check(n.to_string());
    assert_eq!(
        got,
        [
            (3, Kind::Set, vec!["MARK_OFFLINE=0".to_string()]),
            (4, Kind::Set, vec![]),
            (5, check("check_fs_mount_rw"), vec!["-f".into(), "/".into()]),
            (
                7,
                check("check_file_test"),
                vec!["-r".into(), "-s".into(), "/etc/passwd".into()]
            ),
            (
                9,
                check("check_hw_physmem"),
                vec!["1k".into(), "1TB".into()]
            ),
        ]
    );
}

/// NHC's own sample line: a `$` inside single quotes is literal, as bash reads it.
#[test]
fn single_quotes_keep_what_they_hold() {
    let c = parse(
        "* || check_fs_mount -s bluearc0:/home -t nfs -o '/(^|,)vers=3(,|$)/' -f /home\n",
        "n1",
    )
    .unwrap();
    assert_eq!(
        args(&c.lines[0]),
        [
            "-s",
            "bluearc0:/home",
            "-t",
            "nfs",
            "-o",
            "/(^|,)vers=3(,|$)/",
            "-f",
            "/home"
        ]
    );
    // NHC's `read` drops a backslash before `eval` sees the line: `\$` is a `$` to bash, which
    // keeps it before `)`.
    let c = parse(
        "* || check_fs_mount -o \"/(^|,)vers=3(,|\\$)/\" -f /home\n",
        "n1",
    )
    .unwrap();
    assert_eq!(args(&c.lines[0])[1], "/(^|,)vers=3(,|$)/");
    // `eval $CHECK` collapses blanks, inside quotes too.
    let c = parse("* || check_file_contents /f 'a    b'\n", "n1").unwrap();
    assert_eq!(args(&c.lines[0]), ["/f", "a b"]);
}

/// A site's file with many lines health_check cannot honour: every one is named at once (the
/// explaining command lists each), not one per try; a line without `||` is said.
#[test]
fn every_line_that_cannot_be_honoured_is_named_at_once() {
    let text = "* || check_fs_mount -f /\n\
                * || check_nv_retired_pages\n\
                * || check_gpu_count 8\n\
                check_fs_mount -f /home\n\
                * || source /etc/nhc/scripts/site.nhc\n";
    let c = Conf::parse_all(text.as_bytes(), Path::new("/etc/nhc/nhc.conf"), b"n1", true).unwrap();
    let refused: Vec<usize> = c.refused.iter().map(|e| e.line).collect();
    assert_eq!(refused, [2, 3, 5]);
    assert_eq!(c.lines.len(), 1);
    assert!(
        c.refused[0].message.contains("check_fs_{mount,")
            && c.refused[0].message.contains("/etc/nhc/scripts"),
        "{}",
        c.refused[0].message
    );
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("line 4: ") && n.contains("has no '||'")),
        "{:?}",
        c.notes
    );
    let e = parse(text, "n1").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("(and 2 more line(s) refused: 3, 5;"),
        "{}",
        e.message
    );
}

#[test]
fn a_line_that_cannot_be_honoured_is_an_error_naming_it() {
    let e = parse("* || check_moab_sched\n", "n1").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(
        e.message
            .contains("'check_moab_sched' is not a check health_check runs"),
        "{}",
        e.message
    );
    assert!(e.message.contains("check_fs_{mount,"), "{}", e.message);
    let e = parse("\n* || check_fs_mount -f / ; reboot\n", "n1").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message.contains("shell beyond one check"),
        "{}",
        e.message
    );
    let e = parse("* || check_ps_daemon $(id -u)\n", "n1").unwrap_err();
    assert!(e.message.contains("command substitution"), "{}", e.message);
    let e = parse("* || IFS=,\n", "n1").unwrap_err();
    assert!(e.message.contains("IFS"), "{}", e.message);
}

/// A site shares one file between kinds of nodes: a line for other hosts that health_check
/// cannot honour is said, not an error here.
#[test]
fn a_line_for_other_hosts_is_said_not_refused() {
    let c = parse(
        "login* || check_moab_sched\n* || check_ps_loadavg 100\n",
        "n1",
    )
    .unwrap();
    assert_eq!(c.lines.len(), 1);
    assert!(
        c.notes[0].contains("line 1 (for 'login*', not this host)"),
        "{:?}",
        c.notes
    );
    // Settings of NHC's own are said; a last line without a newline is never run, and said.
    let c = parse("* || DEBUG=1\n* || check_ps_loadavg 100", "n1").unwrap();
    assert_eq!(c.lines.len(), 1);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("DEBUG is a setting of NHC's own"))
    );
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("line 2") && n.contains("no newline"))
    );
}

/// Bytes are bytes: a Latin-1 comment, a Latin-1 argument, CRLF line ends (kept, as NHC keeps
/// them: the `\r` is part of the last word).
#[test]
fn any_byte_is_read_never_refused() {
    let c = Conf::parse(
        b"# caf\xe9 \xff\n* || check_fs_mount_rw -f /caf\xe9\r\n",
        Path::new("nhc.conf"),
        b"n1",
        true,
    )
    .unwrap();
    let args = crate::nhc::bash::expand::args(
        &c.lines[0].command.args,
        &mut std::collections::BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(args[1], b"/caf\xe9\r");
}

/// Programs run only from a file nobody but root can change: a check_cmd_* line, or a setting
/// naming a program, whether exported, set before a check, or set alone.
#[test]
fn programs_run_only_from_a_file_only_root_can_change() {
    for text in [
        "* || check_cmd_status true\n",
        "* || MCELOG=/tmp/x\n",
        "* || export PATH=/tmp\n",
        "* || MCELOG=/tmp/x check_hw_mcelog\n",
    ] {
        let e = Conf::parse(text.as_bytes(), Path::new("c"), b"n1", false).unwrap_err();
        assert!(
            e.message.contains("nobody but root"),
            "{text}: {}",
            e.message
        );
        assert!(Conf::parse(text.as_bytes(), Path::new("c"), b"n1", true).is_ok());
    }
    // The file on disk: another owner, or others able to write, refuses such a line by file
    // and line; without one the same file is read.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nhc.conf");
    std::fs::write(
        &path,
        "* || check_ps_loadavg 100\n* || check_cmd_status true\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = Conf::load(&path, "n1", READ_DEADLINE).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("nobody but root"), "{}", e.message);
    std::fs::write(&path, "* || check_ps_loadavg 100\n").unwrap();
    assert!(Conf::load(&path, "n1", READ_DEADLINE).is_ok());
}

/// A FIFO or a device as nhc.conf is refused at once (it never blocks the run); a huge file is
/// refused by its size.
#[test]
fn a_file_of_the_wrong_kind_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("nhc.conf");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = std::time::Instant::now();
    let e = Conf::load(&fifo, "n1", READ_DEADLINE).unwrap_err();
    assert!(e.message.contains("not a regular file"), "{}", e.message);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(Conf::load(Path::new("/dev/zero"), "n1", READ_DEADLINE).is_err());
}

#[test]
fn timeout_is_taken_when_written_out() {
    assert_eq!(
        parse("* || export TIMEOUT=0x20\n", "n1")
            .unwrap()
            .timeout_secs,
        Some(32)
    );
    let c = parse("* || TIMEOUT=$((HW_CORES*2))\n", "n1").unwrap();
    assert_eq!(c.timeout_secs, None);
    assert!(c.notes[0].contains("computed"), "{:?}", c.notes);
    let c = parse("* || TIMEOUT=30s\n", "n1").unwrap();
    assert!(c.notes[0].contains("no number"), "{:?}", c.notes);
}

/// A line that is not one check names the byte of the file's line where the fault starts,
/// blanks and all (an editor's `path:line:column`); a fault of the whole check has no column.
#[test]
fn a_parse_error_names_its_column_in_the_line_as_written() {
    let line = "*  ||   check_fs_mount   -f /    ;   reboot";
    let e = parse(&format!("# first\n{line}\n"), "n1").unwrap_err();
    assert_eq!((e.line, e.column), (2, Some(line.find(';').unwrap() + 1)));
    assert!(e.to_string().starts_with("nhc.conf:2:34: "), "{e}");
    let line = "* || check_file_contents /f \"unclosed   $x";
    let e = parse(&format!("{line}\n"), "n1").unwrap_err();
    assert_eq!(e.column, Some(line.find('"').unwrap() + 1), "{e}");
    let line = "* || x=1   for i in 1 2";
    let e = parse(&format!("{line}\n"), "n1").unwrap_err();
    assert_eq!(e.column, Some(line.find("for").unwrap() + 1), "{e}");
    let e = parse("* || check_moab_sched\n", "n1").unwrap_err();
    assert_eq!(e.column, None);
    assert_eq!(e.to_string(), format!("nhc.conf:1: {}", e.message));
    // On a line for another host, the note says where too.
    let line = "other || check_fs_mount -f / | tee";
    let c = parse(&format!("{line}\n"), "n1").unwrap();
    let at = format!(
        "line 1, column {} (for 'other'",
        line.rfind('|').unwrap() + 1
    );
    assert!(c.notes[0].starts_with(&at), "{:?}", c.notes);
}
