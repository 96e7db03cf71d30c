//! What NHC's checks look at, read from this machine as bytes (mount points, user names and
//! process arguments are bytes on Linux: one undecodable byte must never hide a mount, a user or
//! a process): the mount table, file system space, memory, CPUs, processes, load, network
//! devices, users. Behind a trait so the checks are tested on machines made up in the tests.
//! Every file is read with a bound.

use super::bytes::{number, words};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One line of the mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// What is mounted (device, `server:/export`, `tmpfs`).
    pub source: Vec<u8>,
    /// Where.
    pub point: Vec<u8>,
    /// File system type.
    pub fstype: Vec<u8>,
    /// Options, comma-separated.
    pub options: Vec<u8>,
}

/// Space and inodes of a mounted file system, in kB and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Size, kB.
    pub size_kb: u64,
    /// Used, kB.
    pub used_kb: u64,
    /// Available to users, kB.
    pub avail_kb: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Inodes free.
    pub inodes_free: u64,
}

impl Space {
    /// df's `Use%`: used over used and available, rounded up.
    pub fn used_pct(&self) -> u64 {
        let whole = self.used_kb.saturating_add(self.avail_kb);
        if whole == 0 {
            0
        } else {
            (u128::from(self.used_kb) * 100).div_ceil(u128::from(whole)) as u64
        }
    }

    /// df's `IUse%`.
    pub fn inodes_used_pct(&self) -> u64 {
        let used = self.inodes.saturating_sub(self.inodes_free);
        if self.inodes == 0 {
            0
        } else {
            (u128::from(used) * 100).div_ceil(u128::from(self.inodes)) as u64
        }
    }
}

/// One process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Its id.
    pub pid: u32,
    /// Its parent's id (0 for the first process).
    pub ppid: u32,
    /// Its owner's uid.
    pub uid: u32,
    /// Its owner's name (the uid where it has none).
    pub user: Vec<u8>,
    /// Its command line, words joined by spaces (`[name]` for a kernel thread, as `ps` shows).
    pub args: Vec<u8>,
}

/// One InfiniBand port (`/sys/class/infiniband/<hca>/ports/<n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbPort {
    /// `<hca>:<port>`.
    pub dev: Vec<u8>,
    /// The state's word (`ACTIVE`).
    pub state: Vec<u8>,
    /// The physical state's word (`LinkUp`).
    pub phys_state: Vec<u8>,
    /// The rate's number (`40`, `100`).
    pub rate: Vec<u8>,
}

/// The machine the checks look at. What a made-up machine leaves out is empty.
pub trait Machine {
    /// The mount table, in order.
    fn mounts(&self) -> Vec<Mount> {
        Vec::new()
    }
    /// Space and inodes of the file system mounted at `point`.
    fn space(&self, _point: &[u8]) -> Option<Space> {
        None
    }
    /// /proc/meminfo, kB per field.
    fn meminfo(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
    /// /proc/cpuinfo.
    fn cpuinfo(&self) -> String {
        String::new()
    }
    /// Every process.
    fn processes(&self) -> Vec<Process> {
        Vec::new()
    }
    /// The 1-, 5- and 15-minute load averages.
    fn loadavg(&self) -> Option<[f64; 3]> {
        None
    }
    /// Network devices (/proc/net/dev), `lo` included.
    fn net_devices(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    /// The user-space MAD ABI version (0: none) and the InfiniBand ports.
    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        (0, Vec::new())
    }
    /// What `dmidecode` prints, or why there is nothing (not installed, no DMI tables).
    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        Err("dmidecode is not installed".into())
    }
    /// The highest uid of a system account (`/etc/login.defs` `SYS_UID_MAX`, else `UID_MIN`
    /// less one, else 99, as NHC reads it).
    fn max_sys_uid(&self) -> u32 {
        99
    }
    /// The users with jobs of the resource manager `rm` (NHC's `NHC_RM`: `slurm`, `pbs`, ...)
    /// on the node named `host`, `None` where its commands are not installed, an error where it
    /// did not answer (or is not one health_check can ask).
    fn job_users(&self, _host: &[u8], _rm: &[u8]) -> Option<Result<Vec<Vec<u8>>, String>> {
        None
    }
    /// The name of the user `uid` (/etc/passwd).
    fn user_name(&self, _uid: u32) -> Option<Vec<u8>> {
        None
    }
    /// The name of the group `gid` (/etc/group).
    fn group_name(&self, _gid: u32) -> Option<Vec<u8>> {
        None
    }
    /// The environment NHC would inherit.
    fn environment(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        Vec::new()
    }
    /// What `df ARGS...` prints, or why it printed nothing (not installed, timed out).
    fn df(&self, _args: &[Vec<u8>]) -> Result<Vec<u8>, String> {
        Err("df is not installed".into())
    }
    /// The file systems as NHC's `df $DF_FLAGS` (`inodes`: `df $DFI_FLAGS`) lists them, where
    /// the site's flags are not NHC's defaults (`-Tka`, `-Tia`: every file system, which the
    /// mount table and statvfs give without df); `None` with the defaults. NHC runs df once, at
    /// the first check that needs it, with the flags of that moment: [`super::Once`] keeps the
    /// first answer.
    fn df_rows(&self, inodes: bool, flags: &[u8]) -> DfListing {
        let default: &[u8] = if inodes { b"-Tia" } else { b"-Tka" };
        if flags.is_empty() || flags == default {
            return None;
        }
        let args: Vec<Vec<u8>> = words(flags).map(<[u8]>::to_vec).collect();
        Some(self.df(&args).map(|out| parse_df(&out)))
    }
}

/// What `df $DF_FLAGS` listed, or why nothing; `None` where NHC's own flags need no df.
pub type DfListing = Option<Result<Vec<DfRow>, String>>;

/// One file system as NHC reads a line of df's output (`nhc_fs_df_gather_data`): device, type,
/// then size, used, free (1K blocks, or inodes) and use %, and the mount point, by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfRow {
    /// The device (first field).
    pub device: Vec<u8>,
    /// The mount point (seventh field).
    pub point: Vec<u8>,
    /// Size, used, free (kB or inodes): `None` where df printed no number there (`-` is 0).
    pub numbers: [Option<u64>; 3],
}

/// df's output read as NHC reads it: the first line skipped, each line split on blanks, a line
/// of one field (a long device name) joined with the next, `-` read as 0, the mount point the
/// seventh field (a blank in it cuts it, as it cuts NHC's).
pub fn parse_df(out: &[u8]) -> Vec<DfRow> {
    let lines: Vec<&[u8]> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut rows = Vec::new();
    let mut i = 1;
    while i < lines.len() {
        let mut fields: Vec<&[u8]> = words(lines[i]).collect();
        if fields.len() == 1 && i + 1 < lines.len() {
            i += 1;
            fields.extend(words(lines[i]));
        }
        i += 1;
        let field = |n: usize| fields.get(n).copied().unwrap_or_default();
        let number = |n: usize| match field(n) {
            b"-" | b"" => Some(0),
            v => number::<u64>(v),
        };
        rows.push(DfRow {
            device: field(0).to_vec(),
            point: field(6).to_vec(),
            numbers: [number(2), number(3), number(4)],
        });
    }
    rows
}

/// Where NHC looks for commands (it sets this PATH itself).
pub const COMMAND_PATH: &[u8] = b"/sbin:/usr/sbin:/bin:/usr/bin";

/// `program` found on `path` (`:`-separated), or as given when it names a path.
pub fn find_command(program: &[u8], path: &[u8]) -> Option<std::path::PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains(&b'/') {
        let p = Path::new(OsStr::from_bytes(program)).to_path_buf();
        return p.is_file().then_some(p);
    }
    path.split(|b| *b == b':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(OsStr::from_bytes(d)).join(OsStr::from_bytes(program)))
        .find(|p| p.is_file())
}

/// `/etc/login.defs`' text read as NHC reads it for the highest system uid.
pub fn max_sys_uid_of(login_defs: &[u8]) -> u32 {
    let value = |key: &[u8]| {
        login_defs.split(|b| *b == b'\n').find_map(|l| {
            let mut w = words(l);
            (w.next() == Some(key)).then(|| number::<i64>(w.next()?))?
        })
    };
    let uid = value(b"SYS_UID_MAX").or_else(|| value(b"UID_MIN").map(|u| u - 1));
    match uid {
        Some(u) if u > 0 => u32::try_from(u).unwrap_or(u32::MAX),
        _ => 99,
    }
}

/// How much of a system file is read: more is no file these checks are meant for.
const FILE_LIMIT: u64 = 16 << 20;
/// How much of one process's command line is kept (NHC sees it through `ps`, 1024 columns).
const ARGS_LIMIT: u64 = 64 << 10;

/// Up to `limit` bytes of `path` (nothing where it cannot be read).
fn read_bounded(path: &Path, limit: u64) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(limit).read_to_end(&mut out);
    }
    out
}

fn read(path: &str) -> Vec<u8> {
    read_bounded(Path::new(path), FILE_LIMIT)
}

/// The InfiniBand ports under `root` (`/sys/class/infiniband`) and the MAD ABI version at
/// `abi` (`/sys/class/infiniband_mad/abi_version`).
pub fn read_infiniband(root: &Path, abi: &Path) -> (u32, Vec<IbPort>) {
    let version = number(read_bounded(abi, 64).trim_ascii()).unwrap_or(0);
    let word = |p: std::path::PathBuf, n: usize| {
        words(&read_bounded(&p, 4096))
            .nth(n)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    };
    let sorted = |dir: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    };
    let mut ports = Vec::new();
    for hca in sorted(root) {
        for port in sorted(&hca.join("ports")) {
            let name = |p: &Path| p.file_name().unwrap_or_default().as_bytes().to_vec();
            let mut dev = name(&hca);
            dev.push(b':');
            dev.extend(name(&port));
            ports.push(IbPort {
                dev,
                state: word(port.join("state"), 1),
                phys_state: word(port.join("phys_state"), 1),
                rate: word(port.join("rate"), 0),
            });
        }
    }
    (version, ports)
}

/// A mount table field with its escapes (`\040` for a space) undone.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// The mount table's text as mounts (fields split on spaces and tabs, escapes undone).
pub fn parse_mounts(text: &[u8]) -> Vec<Mount> {
    text.split(|b| *b == b'\n')
        .filter_map(|l| {
            let f: Vec<&[u8]> = l
                .split(|b| *b == b' ' || *b == b'\t')
                .filter(|w| !w.is_empty())
                .collect();
            (f.len() >= 4).then(|| Mount {
                source: unescape(f[0]),
                point: unescape(f[1]),
                fstype: unescape(f[2]),
                options: unescape(f[3]),
            })
        })
        .collect()
}

/// /proc/meminfo's text as kB per field.
pub fn parse_meminfo(text: &[u8]) -> BTreeMap<String, u64> {
    text.split(|b| *b == b'\n')
        .filter_map(|l| {
            let colon = l.iter().position(|b| *b == b':')?;
            let key = std::str::from_utf8(&l[..colon]).ok()?.trim().to_string();
            Some((key, number(words(&l[colon + 1..]).next()?)?))
        })
        .collect()
}

/// `/etc/passwd` or `/etc/group` text: names by numeric id (the first entry of an id wins).
pub fn parse_ids(text: &[u8]) -> BTreeMap<u32, Vec<u8>> {
    let mut out = BTreeMap::new();
    for l in text.split(|b| *b == b'\n') {
        let f: Vec<&[u8]> = l.split(|b| *b == b':').collect();
        if let (Some(name), Some(id)) = (f.first(), f.get(2).and_then(|i| number::<u32>(i))) {
            out.entry(id).or_insert_with(|| name.to_vec());
        }
    }
    out
}

/// One process read from `/proc/<pid>`: its status (`Uid:`, `PPid:`, as bytes: the `Name:`
/// line may hold any byte) and its command line (NUL-separated arguments joined by spaces, or
/// `[name]` for a kernel thread).
pub fn read_process(dir: &Path, pid: u32, users: &BTreeMap<u32, Vec<u8>>) -> Option<Process> {
    let status = read_bounded(&dir.join("status"), 64 << 10);
    let field = |name: &[u8]| -> Option<u32> {
        status
            .split(|b| *b == b'\n')
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| number(words(v).next()?))
    };
    let uid = field(b"Uid:")?;
    let cmdline = read_bounded(&dir.join("cmdline"), ARGS_LIMIT);
    let parts: Vec<&[u8]> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .collect();
    let args = if parts.is_empty() {
        let comm = read_bounded(&dir.join("comm"), 256);
        let mut a = b"[".to_vec();
        a.extend_from_slice(comm.strip_suffix(b"\n").unwrap_or(&comm));
        a.push(b']');
        a
    } else {
        parts.join(&b' ')
    };
    Some(Process {
        pid,
        ppid: field(b"PPid:").unwrap_or(0),
        uid,
        user: users
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string().into_bytes()),
        args,
    })
}

/// This machine.
pub struct Host;

impl Machine for Host {
    fn mounts(&self) -> Vec<Mount> {
        parse_mounts(&read("/proc/self/mounts"))
    }

    fn space(&self, point: &[u8]) -> Option<Space> {
        let s = nix::sys::statvfs::statvfs(Path::new(OsStr::from_bytes(point))).ok()?;
        let frag = s.fragment_size() as u64;
        let kb = |blocks: u64| blocks.saturating_mul(frag) / 1024;
        let (blocks, free, avail) = (
            s.blocks() as u64,
            s.blocks_free() as u64,
            s.blocks_available() as u64,
        );
        Some(Space {
            size_kb: kb(blocks),
            used_kb: kb(blocks.saturating_sub(free)),
            avail_kb: kb(avail),
            inodes: s.files() as u64,
            inodes_free: s.files_free() as u64,
        })
    }

    fn meminfo(&self) -> BTreeMap<String, u64> {
        parse_meminfo(&read("/proc/meminfo"))
    }

    fn cpuinfo(&self) -> String {
        String::from_utf8_lossy(&read("/proc/cpuinfo")).into_owned()
    }

    fn processes(&self) -> Vec<Process> {
        let users = parse_ids(&read("/etc/passwd"));
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let pid = number::<u32>(e.file_name().as_bytes())?;
                read_process(&e.path(), pid, &users)
            })
            .collect()
    }

    fn loadavg(&self) -> Option<[f64; 3]> {
        let t = read("/proc/loadavg");
        let v: Vec<f64> = words(&t).take(3).filter_map(number).collect();
        Some([*v.first()?, *v.get(1)?, *v.get(2)?])
    }

    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        read_infiniband(
            Path::new("/sys/class/infiniband"),
            Path::new("/sys/class/infiniband_mad/abi_version"),
        )
    }

    fn net_devices(&self) -> Vec<Vec<u8>> {
        read("/proc/net/dev")
            .split(|b| *b == b'\n')
            .filter_map(|l| {
                let colon = l.iter().position(|b| *b == b':')?;
                Some(super::bytes::trim(&l[..colon]).to_vec())
            })
            .collect()
    }

    fn dmidecode(&self) -> Result<Vec<u8>, String> {
        let program =
            find_command(b"dmidecode", COMMAND_PATH).ok_or("dmidecode is not installed")?;
        let out = crate::command::run::<&str>(&program, &[], std::time::Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(format!("dmidecode failed: {}", out.stderr_text()))
        }
    }

    fn max_sys_uid(&self) -> u32 {
        max_sys_uid_of(&read("/etc/login.defs"))
    }

    fn job_users(&self, host: &[u8], rm: &[u8]) -> Option<Result<Vec<Vec<u8>>, String>> {
        if rm != b"slurm" {
            return Some(Err(format!(
                "health_check asks Slurm for the users with jobs here, not NHC_RM={}",
                super::bytes::show(rm)
            )));
        }
        let squeue = find_command(b"squeue", COMMAND_PATH)?;
        let host = String::from_utf8_lossy(host).into_owned();
        let args = ["-w", host.as_str(), "--noheader", "-o", "%u"];
        Some(
            crate::command::run(&squeue, &args, std::time::Duration::from_secs(10))
                .map_err(|e| e.to_string())
                .and_then(|out| {
                    if out.success() {
                        Ok(words(&out.stdout).map(<[u8]>::to_vec).collect())
                    } else {
                        Err(format!("squeue failed: {}", out.stderr_text()))
                    }
                }),
        )
    }

    fn user_name(&self, uid: u32) -> Option<Vec<u8>> {
        parse_ids(&read("/etc/passwd")).remove(&uid)
    }

    fn group_name(&self, gid: u32) -> Option<Vec<u8>> {
        parse_ids(&read("/etc/group")).remove(&gid)
    }

    fn environment(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        std::env::vars_os()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn df(&self, args: &[Vec<u8>]) -> Result<Vec<u8>, String> {
        let program = find_command(b"df", COMMAND_PATH).ok_or("df is not installed")?;
        let args: Vec<&OsStr> = args.iter().map(|a| OsStr::from_bytes(a)).collect();
        // A remote file system that hangs hangs df: bounded, as NHC's own timeout bounds it.
        let out = crate::command::run(&program, &args, std::time::Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        // df lists what it can and exits 1 when one file system could not be read: NHC reads
        // the list either way.
        if out.stdout.is_empty() && !out.success() {
            return Err(format!("df failed: {}", out.stderr_text()));
        }
        Ok(out.stdout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_keep_every_byte() {
        let m = parse_mounts(
            b"tmpfs /tmp/caf\xe9 tmpfs rw 0 0\n\
              tmpfs /tmp/a\\040b\\011c\\134d tmpfs ro,nosuid 0 0\n\
              /dev/x /\xff\xfe ext4 rw 0 0\n",
        );
        assert_eq!(m[0].point, b"/tmp/caf\xe9");
        assert_eq!(m[1].point, b"/tmp/a b\tc\\d");
        assert_eq!(m[1].options, b"ro,nosuid");
        assert_eq!(m[2].point, b"/\xff\xfe");
    }

    #[test]
    fn users_and_groups_with_any_bytes_are_found() {
        let ids = parse_ids(
            b"root:x:0:0:root:/root:/bin/bash\n\
              jos\xe9:x:12346:100:Jos\xe9 Garc\xeda,,,:/home/j:/bin/bash\n\
              broken line\n\
              dup:x:0:0::/:/bin/sh\n",
        );
        assert_eq!(ids.get(&0).map(Vec::as_slice), Some(&b"root"[..]));
        assert_eq!(ids.get(&12346).map(Vec::as_slice), Some(&b"jos\xe9"[..]));
        assert_eq!(max_sys_uid_of(b"UID_MIN\t\t\t  500\n"), 499);
        assert_eq!(max_sys_uid_of(b"SYS_UID_MAX 199\n\xff\n"), 199);
        assert_eq!(max_sys_uid_of(b"2345"), 99);
    }

    #[test]
    fn a_process_whose_name_holds_any_byte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("status"),
            b"Name:\tev\xffil\nUmask:\t0022\nPPid:\t1\nUid:\t12345\t12345\t12345\t12345\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("cmdline"), b"./ev\xffil\0--flag\0").unwrap();
        let users = BTreeMap::from([(12345, b"jos\xe9".to_vec())]);
        let p = read_process(dir.path(), 77, &users).unwrap();
        assert_eq!(
            (p.pid, p.ppid, p.uid, p.user.as_slice(), p.args.as_slice()),
            (77, 1, 12345, &b"jos\xe9"[..], &b"./ev\xffil --flag"[..])
        );
        std::fs::write(dir.path().join("cmdline"), b"").unwrap();
        std::fs::write(dir.path().join("comm"), b"kw\xff\n").unwrap();
        assert_eq!(
            read_process(dir.path(), 77, &users).unwrap().args,
            b"[kw\xff]"
        );
    }
}
