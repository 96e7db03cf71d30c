//! Two test hosts: network namespaces joined by a veth pair (10.0.0.1 <-> 10.0.0.2), created for
//! one test and removed when it ends, with optional `tc tbf` shaping for a known link rate. Needs
//! root and iproute2: without them [`NetPair::new`] skips the test (fails it in CI).

use crate::util::{Need, needs};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Address of host A.
pub const ADDR_A: &str = "10.0.0.1";
/// Address of host B.
pub const ADDR_B: &str = "10.0.0.2";

/// Which host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// A pair of namespaces and the processes started in them (killed on drop).
pub struct NetPair {
    a: String,
    b: String,
    children: Vec<Child>,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {cmd:?}: {e} (install iproute2 and run the tests as root)")
    });
    assert!(
        out.status.success(),
        "{cmd:?} failed: {} (the network tests need root)",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl NetPair {
    /// Creates both namespaces, the veth pair and the addresses, with loopback up; `None` (the
    /// test skips) without root or iproute2.
    pub fn new(test: &str) -> Option<NetPair> {
        if !needs(test, &[Need::Root, Need::Tool("ip", "iproute2")]) {
            return None;
        }
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let pair = NetPair {
            a: format!("hc{pid}x{n}a"),
            b: format!("hc{pid}x{n}b"),
            children: Vec::new(),
        };
        run(Command::new("ip").args(["netns", "add", &pair.a]));
        run(Command::new("ip").args(["netns", "add", &pair.b]));
        run(Command::new("ip").args([
            "link", "add", "hca", "netns", &pair.a, "type", "veth", "peer", "name", "hcb", "netns",
            &pair.b,
        ]));
        for (ns, dev, addr) in [(&pair.a, "hca", ADDR_A), (&pair.b, "hcb", ADDR_B)] {
            run(Command::new("ip").args([
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                dev,
            ]));
            run(Command::new("ip").args(["-n", ns, "link", "set", dev, "up"]));
            run(Command::new("ip").args(["-n", ns, "link", "set", "lo", "up"]));
        }
        Some(pair)
    }

    /// The namespace's name (for `ip -n`).
    pub fn ns_name(&self, side: Side) -> &str {
        self.ns(side)
    }

    fn ns(&self, side: Side) -> &str {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    /// Limits the egress of `side`'s veth to `rate` (e.g. `1gbit`) with a token bucket; again
    /// with another rate, changes it.
    pub fn shape(&self, side: Side, rate: &str) {
        let dev = if side == Side::A { "hca" } else { "hcb" };
        run(Command::new("ip").args([
            "netns",
            "exec",
            self.ns(side),
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            "256kb",
            "latency",
            "100ms",
        ]));
    }

    /// Sets a sysctl inside one namespace.
    pub fn sysctl(&self, side: Side, setting: &str) {
        run(Command::new("ip").args([
            "netns",
            "exec",
            self.ns(side),
            "sysctl",
            "-q",
            "-w",
            setting,
        ]));
    }

    /// A command that runs `program` inside `side`.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.ns(side), program]);
        cmd.env_remove("HEALTH_CHECK_OPTS");
        cmd
    }

    /// Starts `program args` in `side` in the background; it is killed when the pair drops.
    pub fn spawn(&mut self, side: Side, program: &str, args: &[&str]) -> u32 {
        let child = self
            .command(side, program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        self.children.push(child);
        pid
    }

    /// Waits until something listens on `port` in `side` (at most 5 s).
    pub fn wait_listening(&self, side: Side, port: u16) {
        for _ in 0..100 {
            let out = self
                .command(side, "ss")
                .args(["-Hltn", &format!("sport = :{port}")])
                .output()
                .unwrap();
            if !out.stdout.is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("nothing listens on port {port} in {:?}", side);
    }
}

impl Drop for NetPair {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.a, &self.b] {
            // Processes started with `ip netns exec` may have children of their own.
            let _ = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| {
                    for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                        let _ = Command::new("kill").args(["-9", pid]).status();
                    }
                });
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
