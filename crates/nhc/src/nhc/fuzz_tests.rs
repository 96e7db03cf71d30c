//! Property tests (the fuzz targets) over everything that reads what a site or a machine gives
//! the NHC layer: nhc.conf's reader and its bash (words, expansions, arithmetic, braces), the
//! match strings, and the system texts (mount table, meminfo, passwd, login.defs, dmidecode,
//! /proc/PID files). Whatever the bytes, each returns a value or an error, never panics, and
//! returns within a bound. CI runs them for a fixed budget of cases (`PROPTEST_CASES` raises
//! it for a longer hunt).

use super::conf::Conf;
use super::state::{Machine, Mount, Process, Space};
use proptest::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long one case may take, on a busy 2-CPU machine.
const CASE_LIMIT: Duration = Duration::from_secs(2);

/// A machine with a little of everything, so a generated line reaches every check.
struct Small;

impl Machine for Small {
    fn mounts(&self) -> Vec<Mount> {
        super::state::parse_mounts(b"/dev/x / ext4 rw 0 0\ntmpfs /tmp tmpfs rw,nosuid 0 0\n")
    }
    fn space(&self, _: &[u8]) -> Option<Space> {
        Some(Space {
            size_kb: 1000,
            used_kb: 500,
            avail_kb: 400,
            inodes: 100,
            inodes_free: 50,
        })
    }
    fn processes(&self) -> Vec<Process> {
        vec![Process {
            pid: 2,
            ppid: 1,
            uid: 1000,
            user: b"u\xff".to_vec(),
            args: b"sleep \xff 1".to_vec(),
        }]
    }
    fn loadavg(&self) -> Option<[f64; 3]> {
        Some([1.0, 2.0, 3.0])
    }
    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        Ok(b"Handle 0x0000, DMI type 0, 24 bytes\nBIOS Information\n\tVendor: X\n".to_vec())
    }
}

/// Pieces of bash and of NHC's lines, to build lines that reach deep into the reader.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("$".to_string()),
        Just("$((".to_string()),
        Just("))".to_string()),
        Just("${".to_string()),
        Just("}".to_string()),
        Just("{".to_string()),
        Just(",".to_string()),
        Just("..".to_string()),
        Just(":-".to_string()),
        Just("$'\\x".to_string()),
        Just("||".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("#".to_string()),
        Just("=".to_string()),
        Just("export ".to_string()),
        Just("HW_CORES".to_string()),
        Just("MARK_OFFLINE".to_string()),
        Just("*".to_string()),
        Just("/".to_string()),
        Just("!".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("-".to_string()),
        Just("**".to_string()),
        Just("/0".to_string()),
        Just("9223372036854775807".to_string()),
        Just("010".to_string()),
        Just("0x1f".to_string()),
        Just("64#@".to_string()),
        Just("~".to_string()),
        Just("\u{e9}".to_string()),
        prop::sample::select(super::checks::SUPPORTED).prop_map(|c| format!(" {c} ")),
        prop::sample::select(vec![
            "-f", "-t", "-m", "-o", "-u", "-0", "-e", "1k", "3%", "1.5g"
        ])
        .prop_map(|o| format!(" {o} ")),
        "[a-z0-9]{1,6}",
    ]
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    assert!(
        started.elapsed() < CASE_LIMIT,
        "{what} took {:?}",
        started.elapsed()
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Any bytes as nhc.conf: read to lines or an error naming one, and the lines run.
    #[test]
    fn any_bytes_as_nhc_conf_end_in_a_verdict_or_an_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..800),
    ) {
        timed("any bytes", || {
            if let Ok(conf) = Conf::parse(&bytes, Path::new("c"), b"n1", false) {
                let _ = super::run(&conf, &Small);
            }
        });
    }

    /// Lines built from bash's and NHC's own pieces: the same, deeper.
    #[test]
    fn lines_of_bash_pieces_end_in_a_verdict_or_an_error(
        lines in proptest::collection::vec(proptest::collection::vec(token(), 0..24), 1..6),
    ) {
        let text: String = lines
            .iter()
            .map(|l| format!("* || {}\n", l.concat()))
            .collect();
        timed(&text, || {
            if let Ok(conf) = Conf::parse(text.as_bytes(), Path::new("c"), b"n1", false) {
                let _ = super::run(&conf, &Small);
            }
        });
    }

    /// NHC's settings file of any bytes, or of bash's pieces: its settings taken or said, then
    /// an nhc.conf run after it.
    #[test]
    fn any_settings_file_is_taken_or_said(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        lines in proptest::collection::vec(proptest::collection::vec(token(), 0..16), 1..5),
    ) {
        let pieces: String = lines.iter().map(|l| format!("{}\n", l.concat())).collect();
        for text in [&bytes[..], pieces.as_bytes()] {
            timed(&String::from_utf8_lossy(text), || {
                let mut conf =
                    Conf::parse(b"* || check_hw_swap_free $X\n", Path::new("c"), b"n1", false)
                        .unwrap();
                conf.source(text, Path::new("/etc/default/nhc"), false);
                let _ = super::run(&conf, &Small);
            });
        }
    }

    /// Arithmetic of any bytes: a number or bash's error.
    #[test]
    fn any_arithmetic_ends(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut vars = std::collections::BTreeMap::new();
        timed("arithmetic", || super::bash::arith::eval(&bytes, &mut vars).ok());
    }

    /// Match strings and texts of any bytes, through the C library's matchers.
    #[test]
    fn any_pattern_matches_or_not(
        pattern in proptest::collection::vec(any::<u8>(), 0..120),
        text in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        timed("mcheck", || super::matching::mcheck(&pattern, &text));
        let _ = super::matching::take_problems();
    }

    /// The system texts of any bytes: mount table, meminfo, passwd, login.defs, dmidecode.
    #[test]
    fn any_system_text_is_read(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        timed("system texts", || {
            let _ = super::state::parse_mounts(&bytes);
            let _ = super::state::parse_meminfo(&bytes);
            let _ = super::state::parse_ids(&bytes);
            let _ = super::state::max_sys_uid_of(&bytes);
            let _ = super::state::parse_df(&bytes);
            let _ = super::checks::hardware::parse_dmi(&bytes);
            let _ = super::checks::cpu_counts(&String::from_utf8_lossy(&bytes));
            let lines: Vec<_> = super::bash::read::Lines::new(&bytes[..], 1 << 20).collect();
            lines.len()
        });
    }

    /// A process's /proc files of any bytes.
    #[test]
    fn any_proc_files_are_read(
        status in proptest::collection::vec(any::<u8>(), 0..400),
        cmdline in proptest::collection::vec(any::<u8>(), 0..400),
        comm in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("status"), &status).unwrap();
        std::fs::write(dir.path().join("cmdline"), &cmdline).unwrap();
        std::fs::write(dir.path().join("comm"), &comm).unwrap();
        let _ = super::state::read_process(dir.path(), 7, &Default::default());
    }
}
