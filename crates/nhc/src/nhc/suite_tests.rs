//! NHC 1.4.3's own test suite as our conformance suite: every assertion it makes about a check
//! health_check runs (tests/fixtures/nhc-1.4.3-suite: the inputs NHC's tests set up, the check
//! calls, NHC's verdicts and messages, as facts) run through our reader and checks on a machine
//! made of those inputs. The count of assertions ported and passing is held here and said in
//! docs/nhc.md.

use super::conf::Conf;
use super::state::{IbPort, Machine, Mount, Process, Space};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nhc-1.4.3-suite")
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// A machine made of what one of NHC's tests filled in.
#[derive(Default)]
struct Suite {
    mounts: Vec<Mount>,
    spaces: BTreeMap<Vec<u8>, Space>,
    cpuinfo: String,
    meminfo: BTreeMap<String, u64>,
    ib: (u32, Vec<IbPort>),
    eth: Vec<Vec<u8>>,
    processes: Vec<Process>,
    users: BTreeMap<u32, Vec<u8>>,
    job_users: Option<Vec<Vec<u8>>>,
    load: Option<[f64; 3]>,
    dmi: Option<Vec<u8>>,
}

impl Suite {
    fn of(m: &Value) -> Suite {
        let mut s = Suite::default();
        for mt in m["mounts"].as_array().into_iter().flatten() {
            s.mounts.push(Mount {
                source: text(mt, "source").into_bytes(),
                point: text(mt, "point").into_bytes(),
                fstype: text(mt, "type").into_bytes(),
                options: text(mt, "options").into_bytes(),
            });
        }
        for d in m["df"].as_array().into_iter().flatten() {
            let sp = s
                .spaces
                .entry(text(d, "point").into_bytes())
                .or_insert(Space {
                    size_kb: 0,
                    used_kb: 0,
                    avail_kb: 0,
                    inodes: 0,
                    inodes_free: 0,
                });
            (sp.size_kb, sp.used_kb, sp.avail_kb) =
                (num(d, "size_kb"), num(d, "used_kb"), num(d, "free_kb"));
        }
        for d in m["dfi"].as_array().into_iter().flatten() {
            if let Some(sp) = s.spaces.get_mut(text(d, "point").as_bytes()) {
                (sp.inodes, sp.inodes_free) = (num(d, "inodes"), num(d, "ifree"));
            }
        }
        if let Some(c) = m.get("cpu") {
            let (sockets, cores, threads) = (num(c, "sockets"), num(c, "cores"), num(c, "threads"));
            for sock in 0..sockets {
                for t in 0..threads / sockets.max(1) {
                    s.cpuinfo.push_str(&format!(
                        "processor\t: {}\nphysical id\t: {sock}\nsiblings\t: {}\ncpu cores\t: {}\n\n",
                        sock * threads / sockets + t,
                        threads / sockets,
                        cores / sockets
                    ));
                }
            }
        }
        if let Some(mem) = m.get("mem") {
            s.meminfo = BTreeMap::from([
                ("MemTotal".to_string(), num(mem, "ram_total")),
                ("MemFree".to_string(), num(mem, "ram_free")),
                ("SwapTotal".to_string(), num(mem, "swap_total")),
                ("SwapFree".to_string(), num(mem, "swap_free")),
            ]);
        }
        if let Some(ib) = m.get("ib") {
            s.ib = (
                num(ib, "abi") as u32,
                ib["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| IbPort {
                        dev: text(p, "dev").into_bytes(),
                        state: text(p, "state").into_bytes(),
                        phys_state: text(p, "phys_state").into_bytes(),
                        rate: text(p, "rate").into_bytes(),
                    })
                    .collect(),
            );
        }
        s.eth = m["eth"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d.as_str().unwrap_or_default().as_bytes().to_vec())
            .collect();
        for p in m["processes"].as_array().into_iter().flatten() {
            s.processes.push(Process {
                pid: num(p, "pid") as u32,
                ppid: num(p, "ppid") as u32,
                uid: num(p, "uid") as u32,
                user: text(p, "user").into_bytes(),
                args: text(p, "args").into_bytes(),
            });
        }
        for u in m["passwd"].as_array().into_iter().flatten() {
            s.users
                .insert(num(u, "uid") as u32, text(u, "user").into_bytes());
        }
        s.job_users = m["job_users"].as_array().map(|a| {
            a.iter()
                .map(|u| u.as_str().unwrap_or_default().as_bytes().to_vec())
                .collect()
        });
        s.load = m["loadavg"].as_array().map(|l| {
            let f = |i: usize| l.get(i).and_then(Value::as_f64).unwrap_or(0.0);
            [f(0), f(1), f(2)]
        });
        s.dmi = m["dmi"].as_str().map(|d| d.as_bytes().to_vec());
        s
    }
}

impl Machine for Suite {
    fn mounts(&self) -> Vec<Mount> {
        self.mounts.clone()
    }
    fn space(&self, point: &[u8]) -> Option<Space> {
        self.spaces.get(point).copied()
    }
    fn meminfo(&self) -> BTreeMap<String, u64> {
        self.meminfo.clone()
    }
    fn cpuinfo(&self) -> String {
        self.cpuinfo.clone()
    }
    fn processes(&self) -> Vec<Process> {
        self.processes.clone()
    }
    fn loadavg(&self) -> Option<[f64; 3]> {
        self.load
    }
    fn net_devices(&self) -> Vec<Vec<u8>> {
        self.eth.clone()
    }
    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        self.ib.clone()
    }
    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        self.dmi.clone().ok_or_else(|| "no DMI here".into())
    }
    fn max_sys_uid(&self) -> u32 {
        99
    }
    fn job_users(&self, _: &[u8], _: &[u8]) -> Option<Result<Vec<Vec<u8>>, String>> {
        self.job_users.clone().map(Ok)
    }
    fn user_name(&self, uid: u32) -> Option<Vec<u8>> {
        self.users.get(&uid).cloned()
    }
}

/// `'value'` as bash single-quotes it.
fn quoted(v: &str) -> String {
    format!("'{}'", v.replace('\'', "'\\''"))
}

/// The placeholders of the facts filled in for this machine and run.
struct Places {
    dir: tempfile::TempDir,
}

impl Places {
    /// `now` (seconds since the epoch) is the assertion's one moment: the line and NHC's message
    /// filled a second apart would name ages a second apart.
    fn fill(&self, s: &str, machine: &Value, line: &str, now: i64) -> String {
        use std::os::unix::fs::MetadataExt;
        let root = std::fs::symlink_metadata("/").unwrap();
        let rdev = root.rdev();
        let mut out = s.to_string();
        let stats = [
            ("{stat:%a}", format!("{:o}", root.mode() & 0o7777)),
            ("{stat:%D}", format!("{:x}", root.dev())),
            ("{stat:%g}", root.gid().to_string()),
            ("{stat:%u}", root.uid().to_string()),
            (
                "{stat:%t}",
                format!("{:x}", ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff)),
            ),
            (
                "{stat:%T}",
                format!("{:x}", (rdev & 0xff) | ((rdev >> 12) & !0xff)),
            ),
            (
                "{age:mtime:-86400}",
                (now - root.mtime() - 86400).to_string(),
            ),
            (
                "{age:mtime:+86400}",
                (now - root.mtime() + 86400).to_string(),
            ),
            (
                "{age:ctime:-86400}",
                (now - root.ctime() - 86400).to_string(),
            ),
            (
                "{age:ctime:+86400}",
                (now - root.ctime() + 86400).to_string(),
            ),
        ];
        for (k, v) in stats {
            out = out.replace(k, &v);
        }
        // A process substitution: a pipe to `check_file_test`, its contents in a file to
        // `check_file_contents` (a pipe written meanwhile would race a reader that never blocks).
        for (key, contents) in machine["files"].as_object().into_iter().flatten() {
            let place = format!("{{file:{key}}}");
            if !out.contains(&place) {
                continue;
            }
            let path = if line.starts_with("check_file_contents") {
                let p = self.dir.path().join(key);
                std::fs::write(&p, contents.as_str().unwrap_or_default()).unwrap();
                p
            } else {
                let p = self.dir.path().join(format!("{key}.fifo"));
                if !p.exists() {
                    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600))
                        .unwrap();
                }
                p
            };
            out = out.replace(&place, &path.display().to_string());
        }
        out
    }
}

/// What happened to NHC's assertions in one file: (ported, passed, not ported, failures).
#[derive(Default, Debug)]
struct Tally {
    ported: usize,
    passed: usize,
    not_ported: usize,
    failures: Vec<String>,
}

fn run_file(path: &Path, tally: &mut Tally) {
    let suite: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let places = Places {
        dir: tempfile::tempdir().unwrap(),
    };
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let assertions = suite["assertions"].as_array().unwrap();
    assert_eq!(
        assertions.len() as u64,
        suite["planned"].as_u64().unwrap(),
        "{name}: every assertion NHC plans is accounted for"
    );
    for a in assertions {
        let kind = text(a, "kind");
        if kind == "not_ported" {
            tally.not_ported += 1;
            continue;
        }
        tally.ported += 1;
        let n = a["n"].as_u64().unwrap_or(0);
        match check_assertion(a, &kind, &suite, &places) {
            Ok(()) => tally.passed += 1,
            Err(why) => tally
                .failures
                .push(format!("{name} #{n} ({}): {why}", text(a, "what"))),
        }
    }
}

fn check_assertion(a: &Value, kind: &str, suite: &Value, places: &Places) -> Result<(), String> {
    let rc0 = a["rc"].as_i64() == Some(0);
    let expect = |got: String| {
        let want = match &a["expect"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        if got == want {
            Ok(())
        } else {
            Err(format!("got {got}, NHC {want}"))
        }
    };
    match kind {
        "loaded" => super::checks::SUPPORTED
            .contains(&text(a, "check").as_str())
            .then_some(())
            .ok_or_else(|| "not a check health_check runs".into()),
        "mcheck" => {
            let hit =
                super::matching::mcheck(text(a, "pattern").as_bytes(), text(a, "text").as_bytes());
            (hit == rc0)
                .then_some(())
                .ok_or_else(|| format!("matched: {hit}"))
        }
        "parse_size" | "parse_count" => {
            let vars = super::verdict::Settings::default();
            let input = text(a, "input");
            let held = if kind == "parse_size" {
                super::size::parse_size(input.as_bytes(), &vars)
            } else {
                super::size::parse_count(input.as_bytes(), &vars)
            }
            .map_err(|e| format!("{e:?}"))?
            .ok_or("no value")?;
            expect(held.value.map_err(|e| e.0)?.to_string())
        }
        "unparse_size" | "unparse_count" => {
            let input: i64 = text(a, "input").parse().map_err(|e| format!("{e}"))?;
            expect(if kind == "unparse_size" {
                super::size::show_size(input)
            } else {
                super::size::show_count(input)
            })
        }
        "max_sys_uid" => {
            let defs = a["login_defs"].as_str().unwrap_or_default();
            expect(super::state::max_sys_uid_of(defs.as_bytes()).to_string())
        }
        "rc" => check_line(a, suite, places),
        other => Err(format!("unknown kind {other}")),
    }
}

/// An `rc` assertion: the line run (as an nhc.conf line, after the machine's settings) on the
/// machine; NHC's verdict and, where it failed, its message.
fn check_line(a: &Value, suite: &Value, places: &Places) -> Result<(), String> {
    let machine = a["machine"]
        .as_str()
        .map_or(Value::Null, |m| suite["machines"][m].clone());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let line = places.fill(&text(a, "line"), &machine, &text(a, "line"), now);
    let mut conf = String::new();
    for (k, v) in machine["settings"].as_object().into_iter().flatten() {
        let v = quoted(v.as_str().unwrap_or_default()).replace('\\', "\\\\");
        conf.push_str(&format!("* || export {k}={v}\n"));
    }
    // The GPU tool NHC's test stood in for: a stand-in on the PATH, printing its lines.
    if let Some(nv) = machine.get("nv_healthmon") {
        use std::os::unix::fs::PermissionsExt;
        let tool = places.dir.path().join("nvidia-healthmon");
        let lines: Vec<String> = nv["lines"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| format!("printf '%s\\n' {}", quoted(l.as_str().unwrap_or_default())))
            .collect();
        let script = format!("#!/bin/sh\n{}\nexit {}\n", lines.join("\n"), nv["rc"]);
        std::fs::write(&tool, script).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        conf.push_str(&format!(
            "* || export PATH={}:$PATH\n",
            places.dir.path().display()
        ));
    }
    // NHC's read drops backslashes: the test's own words are written as bash takes them from
    // eval, so each backslash is doubled for the file.
    conf.push_str(&format!("* || {}\n", line.replace('\\', "\\\\")));
    let parsed = Conf::parse(conf.as_bytes(), Path::new("nhc.conf"), b"n0018", true)
        .map_err(|e| format!("not read: {e}"))?;
    let outcome = super::run(&parsed, &Suite::of(&machine));
    let last = outcome.last().ok_or("no outcome")?;
    if let Some(why) = &last.stopped {
        return Err(format!("stopped: {why}"));
    }
    let failures: Vec<&str> = last
        .checks
        .iter()
        .filter(|c| matches!(c.status.as_str(), "fail" | "warn"))
        .map(|c| c.message.as_str())
        .collect();
    let rc0 = a["rc"].as_i64() == Some(0);
    match (&a["message"], rc0) {
        (Value::Null, true) => failures
            .is_empty()
            .then_some(())
            .ok_or_else(|| format!("NHC passed, we failed: {failures:?}")),
        (Value::Null, false) => Err(format!(
            "NHC failed without a message; we said {failures:?}"
        )),
        (Value::String(msg), _) => {
            let msg = places.fill(msg, &machine, &text(a, "line"), now);
            // Where NHC acted (created a directory, started or killed a service), its message
            // ends with what it did; ours says what NHC would have done instead.
            let said = nhc_said_before_acting(&msg);
            let same = failures
                .iter()
                .any(|f| *f == msg || f.starts_with(&format!("{said}; NHC would")));
            same.then_some(())
                .ok_or_else(|| format!("NHC said {msg:?}; we said {failures:?}"))
        }
        (other, _) => Err(format!("unexpected message {other}")),
    }
}

/// An NHC message without the tail that says what NHC did (` (auto-fixed)`, `; restart in
/// progress`, `; killed process ID 1351 (test mode)`, `; "true" in progress.`).
fn nhc_said_before_acting(msg: &str) -> &str {
    if let Some(head) = msg.strip_suffix(" (auto-fixed)") {
        return head;
    }
    let acted = msg.ends_with("in progress")
        || msg.ends_with("in progress.")
        || msg.ends_with("(test mode)");
    match msg.rfind("; ") {
        Some(at) if acted => &msg[..at],
        _ => msg,
    }
}

/// NHC's own suite: every ported assertion passes, and the counts are the ones docs/nhc.md
/// gives.
#[test]
fn nhcs_own_test_suite_passes() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut tally = Tally::default();
    for f in &files {
        run_file(f, &mut tally);
    }
    assert!(
        tally.failures.is_empty(),
        "{} of {} ported assertions fail:\n{}",
        tally.failures.len(),
        tally.ported,
        tally.failures.join("\n")
    );
    assert_eq!(
        (tally.ported, tally.passed, tally.not_ported),
        (461, 461, 182),
        "docs/nhc.md gives these counts"
    );
}
