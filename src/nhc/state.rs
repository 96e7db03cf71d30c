//! What NHC's checks look at, read from this machine: the mount table, file system space,
//! memory, CPUs, processes, load, network devices. Behind a trait so the checks are tested on
//! machines made up in the tests.

use std::collections::BTreeMap;

/// One line of the mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// What is mounted (device, `server:/export`, `tmpfs`).
    pub source: String,
    /// Where.
    pub point: String,
    /// File system type.
    pub fstype: String,
    /// Options, comma-separated.
    pub options: String,
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
        let whole = self.used_kb + self.avail_kb;
        if whole == 0 {
            0
        } else {
            (self.used_kb * 100).div_ceil(whole)
        }
    }

    /// df's `IUse%`.
    pub fn inodes_used_pct(&self) -> u64 {
        let used = self.inodes.saturating_sub(self.inodes_free);
        if self.inodes == 0 {
            0
        } else {
            (used * 100).div_ceil(self.inodes)
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
    pub user: String,
    /// Its command line, words joined by spaces.
    pub args: String,
}

/// One InfiniBand port (`/sys/class/infiniband/<hca>/ports/<n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbPort {
    /// `<hca>:<port>`.
    pub dev: String,
    /// The state's word (`ACTIVE`).
    pub state: String,
    /// The physical state's word (`LinkUp`).
    pub phys_state: String,
    /// The rate's number (`40`, `100`).
    pub rate: String,
}

/// The machine the checks look at.
pub trait Machine {
    /// The mount table, in order.
    fn mounts(&self) -> Vec<Mount>;
    /// Space and inodes of the file system mounted at `point`.
    fn space(&self, point: &str) -> Option<Space>;
    /// /proc/meminfo, kB per field.
    fn meminfo(&self) -> BTreeMap<String, u64>;
    /// /proc/cpuinfo.
    fn cpuinfo(&self) -> String;
    /// Every process.
    fn processes(&self) -> Vec<Process>;
    /// The 1-, 5- and 15-minute load averages.
    fn loadavg(&self) -> Option<[f64; 3]>;
    /// Network devices (/proc/net/dev), `lo` included.
    fn net_devices(&self) -> Vec<String>;
    /// The user-space MAD ABI version (0: none) and the InfiniBand ports.
    fn infiniband(&self) -> (u32, Vec<IbPort>);
    /// What `dmidecode` prints, or why there is nothing (not installed, no DMI tables).
    fn dmidecode(&self) -> Result<String, String>;
    /// The highest uid of a system account (`/etc/login.defs` `SYS_UID_MAX`, else `UID_MIN`
    /// less one, else 99, as NHC reads it).
    fn max_sys_uid(&self) -> u32;
    /// The users with Slurm jobs on the node named `host` (`squeue -w`), `None` where Slurm's
    /// commands are not installed, an error where Slurm did not answer.
    fn job_users(&self, host: &str) -> Option<Result<Vec<String>, String>>;
}

/// Where NHC looks for commands (it sets this PATH itself).
pub const COMMAND_PATH: &[&str] = &["/sbin", "/usr/sbin", "/bin", "/usr/bin"];

/// `program` found on NHC's PATH, or as given when it names a path.
pub fn find_command(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    COMMAND_PATH
        .iter()
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// `/etc/login.defs`' text read as NHC reads it for the highest system uid.
pub fn max_sys_uid_of(login_defs: &str) -> u32 {
    let value = |key: &str| {
        login_defs.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(key)).then(|| w.next()?.parse::<i64>().ok())?
        })
    };
    let uid = value("SYS_UID_MAX").or_else(|| value("UID_MIN").map(|u| u - 1));
    match uid {
        Some(u) if u > 0 => u as u32,
        _ => 99,
    }
}

/// The InfiniBand ports under `root` (`/sys/class/infiniband`) and the MAD ABI version at
/// `abi` (`/sys/class/infiniband_mad/abi_version`).
pub fn read_infiniband(root: &std::path::Path, abi: &std::path::Path) -> (u32, Vec<IbPort>) {
    let version = std::fs::read_to_string(abi)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let word = |p: std::path::PathBuf, n: usize| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| t.split_whitespace().nth(n).map(str::to_string))
            .unwrap_or_default()
    };
    let mut ports = Vec::new();
    let mut hcas: Vec<_> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    hcas.sort();
    for hca in hcas {
        let mut nums: Vec<_> = std::fs::read_dir(hca.join("ports"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        nums.sort();
        for port in nums {
            let name = |p: &std::path::Path| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            };
            ports.push(IbPort {
                dev: format!("{}:{}", name(&hca), name(&port)),
                state: word(port.join("state"), 1),
                phys_state: word(port.join("phys_state"), 1),
                rate: word(port.join("rate"), 0),
            });
        }
    }
    (version, ports)
}

/// This machine.
pub struct Host;

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The mount table's escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(b) => {
                out.push(b as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The mount table's text as mounts.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| Mount {
                source: unescape(f[0]),
                point: unescape(f[1]),
                fstype: f[2].to_string(),
                options: f[3].to_string(),
            })
        })
        .collect()
}

/// /proc/meminfo's text as kB per field.
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((
                k.trim().to_string(),
                v.split_whitespace().next()?.parse().ok()?,
            ))
        })
        .collect()
}

fn users() -> BTreeMap<u32, String> {
    read("/etc/passwd")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.get(2)?.parse().ok()?, f.first()?.to_string()))
        })
        .collect()
}

impl Machine for Host {
    fn mounts(&self) -> Vec<Mount> {
        parse_mounts(&read("/proc/self/mounts"))
    }

    fn space(&self, point: &str) -> Option<Space> {
        let s = nix::sys::statvfs::statvfs(point).ok()?;
        let kb = |blocks: u64| blocks.saturating_mul(s.fragment_size() as u64) / 1024;
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
        read("/proc/cpuinfo")
    }

    fn processes(&self) -> Vec<Process> {
        let users = users();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter_map(|e| {
                let p = e.path();
                let cmdline = std::fs::read(p.join("cmdline")).ok()?;
                let args: Vec<String> = cmdline
                    .split(|&b| b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect();
                let args = if args.is_empty() {
                    format!("[{}]", std::fs::read_to_string(p.join("comm")).ok()?.trim())
                } else {
                    args.join(" ")
                };
                let status = std::fs::read_to_string(p.join("status")).ok()?;
                let field = |name: &str| -> Option<u32> {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))?
                        .split_whitespace()
                        .next()?
                        .parse()
                        .ok()
                };
                let uid = field("Uid:")?;
                let user = users.get(&uid).cloned().unwrap_or_else(|| uid.to_string());
                Some(Process {
                    pid: e.file_name().to_string_lossy().parse().ok()?,
                    ppid: field("PPid:").unwrap_or(0),
                    uid,
                    user,
                    args,
                })
            })
            .collect()
    }

    fn loadavg(&self) -> Option<[f64; 3]> {
        let t = read("/proc/loadavg");
        let v: Vec<f64> = t
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        Some([*v.first()?, *v.get(1)?, *v.get(2)?])
    }

    fn infiniband(&self) -> (u32, Vec<IbPort>) {
        read_infiniband(
            std::path::Path::new("/sys/class/infiniband"),
            std::path::Path::new("/sys/class/infiniband_mad/abi_version"),
        )
    }

    fn net_devices(&self) -> Vec<String> {
        read("/proc/net/dev")
            .lines()
            .filter_map(|l| Some(l.split_once(':')?.0.trim().to_string()))
            .collect()
    }

    fn dmidecode(&self) -> Result<String, String> {
        let program = find_command("dmidecode").ok_or("dmidecode is not installed")?;
        let out = crate::command::run(&program, &[], std::time::Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        if out.success() {
            Ok(out.stdout_text())
        } else {
            Err(format!("dmidecode failed: {}", out.stderr_text()))
        }
    }

    fn max_sys_uid(&self) -> u32 {
        max_sys_uid_of(&read("/etc/login.defs"))
    }

    fn job_users(&self, host: &str) -> Option<Result<Vec<String>, String>> {
        let squeue = find_command("squeue")?;
        let args = ["-w", host, "--noheader", "-o", "%u"];
        Some(
            crate::command::run(&squeue, &args, std::time::Duration::from_secs(10))
                .map_err(|e| e.to_string())
                .and_then(|out| {
                    if out.success() {
                        Ok(out
                            .stdout_text()
                            .split_whitespace()
                            .map(str::to_string)
                            .collect())
                    } else {
                        Err(format!("squeue failed: {}", out.stderr_text()))
                    }
                }),
        )
    }
}
