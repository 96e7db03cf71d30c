"""A fleet on this machine: N hosts as network namespaces on a Linux bridge, each with its own sshd,
reached by the controller (the root namespace) through an address on the bridge. Used by
tests/python/test_fleet_ansible.py and benchmarks/fleet_scale.py to run ansible/fleet.yml for real.

    with Fleet(4, workdir) as fleet:          # everything is removed on exit, also on errors
        fleet.shape_all("1gbit")
        proc = fleet.playbook(mode="mesh", args="--only system,network")

Each host: namespace `hcf<tag>-<i>`, a veth pair (`eth0` inside, `hcf<tag>v<i>` on the bridge),
address 10.231.<subnet>.<10+i>/24, sshd on that address (root login with a key made for the run,
host key in the work dir, a test-only config passed with -f) under a small subreaper of its own, so
the responders the playbook daemonizes are reaped as an init would (this machine's pid 1 does not
reap). Traffic stays on this machine. Needs root, iproute2, openssh-server and openssh-client, and
ansible-core (ansible-playbook beside this Python, or on PATH).
"""

import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "ansible" / "fleet.yml"
ANSIBLE_CFG = REPO / "ansible" / "ansible.cfg"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"

# Runs sshd as its child and reaps every orphan below it (PR_SET_CHILD_SUBREAPER), like an init.
# On SIGTERM it kills everything below it, waits for it and exits.
REAPER = r"""
import ctypes, os, signal, socket, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
if os.environ.get("HC_HOSTNAME"):  # in a UTS namespace of its own: the host's name
    socket.sethostname(os.environ.pop("HC_HOSTNAME"))
# In a mount namespace of its own: the shell start-up file sshd's sessions read (the ssh user's
# ~/.bashrc) shows empty. The controller's own (here pyenv's set-up, some twenty processes for
# every command of every task) is not a fleet host's, and was a sixth of the fleet tests' CPU.
rc, empty = os.environ.pop("HC_HIDE", ""), os.environ.pop("HC_EMPTY", "")
if rc and os.path.isfile(rc):
    if ctypes.CDLL(None, use_errno=True).mount(empty.encode(), rc.encode(), None, 4096, None):  # MS_BIND
        sys.exit(f"cannot hide {rc}: errno {ctypes.get_errno()}")
child = os.fork()
if child == 0:
    os.execv(sys.argv[1], sys.argv[1:])
class Stop(Exception):
    pass
def stop(signum, frame):
    raise Stop()
def children():
    me, out = str(os.getpid()), []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                if d.isdigit() and f.read().rsplit(")", 1)[1].split()[1] == me:
                    out.append(int(d))
        except (OSError, IndexError):
            pass
    return out
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
try:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            sys.exit(0)
except Stop:
    pass
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
# Kill everything below (orphans of killed processes come back to us), reap it, then exit.
while True:
    for pid in children():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        break
    time.sleep(0.02)
"""

SSHD_CONFIG = """\
ListenAddress {address}:22
HostKey {work}/ssh_host_ed25519_key
PidFile {work}/sshd-{name}.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile {work}/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
MaxStartups 200
MaxSessions 200
LogLevel ERROR
Subsystem sftp internal-sftp
"""


def ansible_playbook():
    """The ansible-playbook to use: beside this Python (the test venv), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / "ansible-playbook"
    return str(beside) if beside.exists() else shutil.which("ansible-playbook")


def missing_prerequisite(binary=None):
    """One line saying what is missing, or None."""
    if os.geteuid() != 0:
        return "the fleet tests need root (network namespaces, a bridge, tc, sshd)"
    for tool, package in [
        ("ip", "iproute2"),
        ("tc", "iproute2"),
        ("ss", "iproute2"),
        ("ssh", "openssh-client"),
        ("ssh-keygen", "openssh-client"),
    ]:
        if not shutil.which(tool):
            return f"'{tool}' is missing: apt-get install -y --no-install-recommends {package}"
    if not os.access(SSHD, os.X_OK):
        return "'sshd' is missing: apt-get install -y --no-install-recommends openssh-server"
    if not ansible_playbook():
        return "ansible-playbook is missing: pip install ansible-core (into target/test-venv)"
    if binary is not None and not os.access(binary, os.X_OK):
        return f"{binary} is missing: cargo build --release --locked"
    return None


def run(argv, check=True, **kw):
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def free_subnet():
    """A 10.231.X.0/24 that no interface of the root namespace uses."""
    used = run(["ip", "-4", "-o", "addr", "show"]).stdout + run(["ip", "-4", "route", "show"]).stdout
    for x in range(os.getpid() % 200, os.getpid() % 200 + 250):
        net = f"10.231.{x % 250}."
        if net not in used:
            return net
    raise RuntimeError("no free 10.231.X.0/24 subnet")


class Host:
    def __init__(self, fleet, index):
        self.index = index
        self.name = f"h{index}"
        self.ns = f"hcf{fleet.tag}-{index}"
        self.veth = f"hcf{fleet.tag}v{index}"  # bridge side (at most 15 characters)
        self.address = f"{fleet.net}{10 + index}"
        self.reaper = None

    def __repr__(self):
        return f"{self.name}({self.address})"


class Fleet:
    """N hosts; use as a context manager (or call close()): it removes everything it made."""

    def __init__(self, n, workdir, binary=None):
        self.work = pathlib.Path(workdir)
        self.release_binary = binary or str(REPO / "target" / "release" / "health_check")
        self.binary = self.release_binary
        self.tag = f"{os.getpid() % 100000}"
        self.net = free_subnet()
        self.bridge = f"hcfb{self.tag}"
        self.controller = f"{self.net}1"
        self.hosts = [Host(self, i) for i in range(1, n + 1)]
        self._made_bridge = False

    # ---- life cycle
    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def up(self):
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "hosts").mkdir(exist_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.work / "id_ed25519")])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.work / "ssh_host_ed25519_key")])
        shutil.copy(self.work / "id_ed25519.pub", self.work / "authorized_keys")
        # The release build keeps line tables (about 40 MB); a stripped copy (about 8 MB) is what a
        # fleet operator would push, and it makes each run's copy step a few seconds shorter here.
        if shutil.which("strip"):
            stripped = self.work / "health_check"
            run(["strip", "-o", str(stripped), self.release_binary])
            self.binary = str(stripped)
        if not os.path.isdir("/run/sshd"):  # sshd's privilege separation directory
            os.makedirs("/run/sshd", mode=0o755)
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        self._made_bridge = True
        run(["ip", "addr", "add", f"{self.controller}/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        for h in self.hosts:
            run(["ip", "netns", "add", h.ns])
            # Each host is a machine of its own, as a fleet's are: `ip netns exec` binds
            # /etc/netns/NS/machine-id over /etc/machine-id, and sshd runs in a UTS namespace
            # named after the host (compare counts one vote per machine id and host name).
            etc = pathlib.Path("/etc/netns") / h.ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "machine-id").write_text(hashlib.md5(f"hc-fleet-{h.name}".encode()).hexdigest() + "\n")
            run(["ip", "link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns])
            run(["ip", "link", "set", h.veth, "master", self.bridge])
            run(["ip", "link", "set", h.veth, "up"])
            run(["ip", "-n", h.ns, "addr", "add", f"{h.address}/24", "dev", "eth0"])
            run(["ip", "-n", h.ns, "link", "set", "eth0", "up"])
            run(["ip", "-n", h.ns, "link", "set", "lo", "up"])
            self.start_sshd(h)
        for h in self.hosts:
            self.wait_sshd(h)

    def close(self):
        for h in self.hosts:
            self.stop_sshd(h)
        for h in self.hosts:
            # Anything else still running in the namespace (e.g. a responder under a killed reaper).
            for pid in self.namespace_pids(h):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            run(["ip", "netns", "del", h.ns], check=False)
            shutil.rmtree(pathlib.Path("/etc/netns") / h.ns, ignore_errors=True)
            run(["ip", "link", "del", h.veth], check=False)  # gone with the namespace normally
        if self._made_bridge:
            run(["ip", "link", "del", self.bridge], check=False)
            self._made_bridge = False
        # /run/sshd, if this fleet made it, stays: another fleet (the suite runs two pytest
        # processes at once) may still run its sshds, which need it for every connection; it is
        # the directory openssh-server's own service makes, empty.
        shutil.rmtree(self.work, ignore_errors=True)

    # ---- sshd
    def start_sshd(self, h):
        config = self.work / f"sshd_config-{h.name}"
        config.write_text(SSHD_CONFIG.format(address=h.address, work=self.work, name=h.name))
        empty = self.work / "empty"
        empty.touch()
        with open(self.work / f"sshd-{h.name}.log", "ab") as log:
            h.reaper = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    h.ns,
                    "unshare",
                    "--uts",
                    "--mount",
                    sys.executable,
                    "-c",
                    REAPER,
                    SSHD,
                    "-D",
                    "-e",
                    "-f",
                    str(config),
                ],
                env={
                    **os.environ,
                    "HC_HOSTNAME": h.name,
                    "HC_HIDE": os.path.expanduser("~root/.bashrc"),
                    "HC_EMPTY": str(empty),
                },
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def wait_sshd(self, h, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((h.address, 22), timeout=1) as s:
                    if s.recv(4).startswith(b"SSH"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd of {h} does not answer: {(self.work / f'sshd-{h.name}.log').read_text()}")

    def stop_sshd(self, h):
        """Stops the host's sshd and everything started below it (the host is then unreachable)."""
        if h.reaper is None:
            return
        h.reaper.send_signal(signal.SIGTERM)
        try:
            h.reaper.wait(10)
        except subprocess.TimeoutExpired:
            h.reaper.kill()
            h.reaper.wait()
        h.reaper = None
        # A reaper killed before it finished (a loaded machine) leaves sshd running, reparented
        # away from it: the "down" host would still answer. Whatever runs in the namespace goes.
        deadline = time.monotonic() + 10
        while pids := self.namespace_pids(h):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{h} keeps processes after its sshd was stopped: {pids}")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def namespace_pids(self, h):
        out = run(["ip", "netns", "pids", h.ns], check=False).stdout.split()
        return [int(p) for p in out if p.isdigit()]

    # ---- links
    def shape(self, h, rate):
        """A token bucket of `rate` on both ends of the host's veth: both directions limited."""
        tbf = ["root", "tbf", "rate", rate, "burst", "256kb", "latency", "100ms"]
        run(["ip", "netns", "exec", h.ns, "tc", "qdisc", "replace", "dev", "eth0", *tbf])
        run(["tc", "qdisc", "replace", "dev", h.veth, *tbf])

    def shape_all(self, rate):
        for h in self.hosts:
            self.shape(h, rate)

    def warm(self):
        """One ping from every host to every other: neighbour discovery is not part of a run."""
        for h in self.hosts:
            for other in self.hosts:
                if other is not h:
                    self.exec(h, ["ping", "-c", "1", "-W", "1", other.address], check=False)

    # ---- inside a host
    def exec(self, h, argv, check=True):
        return run(["ip", "netns", "exec", h.ns, *argv], check=check)

    def listening_ports(self, h):
        out = self.exec(h, ["ss", "-Hltn"]).stdout
        return sorted({int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines() if line.strip()})

    def remote_dir(self, h):
        return self.work / "hosts" / h.name

    @staticmethod
    def premade_dir(path, uid, gid, mode):
        """A directory made beforehand as another user would: owned by uid:gid, with `mode`."""
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, uid, gid)
        os.chmod(path, mode)
        return path

    # ---- ansible
    def inventory(self, groups=None, hosts=None, host_vars=None):
        """An INI inventory of the hosts (group `fleet`, plus `groups` {name: [Host]}; `host_vars`
        {host name: {var: value}})."""
        hosts = hosts or self.hosts
        lines = ["[fleet]"]
        for h in hosts:
            own = " ".join(f"{k}={v}" for k, v in (host_vars or {}).get(h.name, {}).items())
            lines.append(f"{h.name} ansible_host={h.address} {own}".rstrip())
        for group, members in (groups or {}).items():
            lines += ["", f"[{group}]"] + [h.name for h in members]
        lines += [
            "",
            "[fleet:vars]",
            "ansible_user=root",
            f"ansible_ssh_private_key_file={self.work / 'id_ed25519'}",
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'",
            f"ansible_control_path_dir={self.work / 'cp'}",
            "ansible_python_interpreter=/usr/bin/python3",
            # Work directories inside this fleet's directory: removed with it, never shared.
            f"health_check_remote_dir={self.work / 'hosts'}/{{{{ inventory_hostname }}}}",
            f"ansible_remote_tmp={self.work / 'hosts'}/{{{{ inventory_hostname }}}}/.ansible-tmp",
        ]
        path = self.work / "inventory.ini"
        path.write_text("\n".join(lines) + "\n")
        return path

    def env(self):
        env = dict(os.environ)
        env.update(
            {
                # The controller's compare and report: the test hosts are namespaces of one VM,
                # so every host's peers and neighbours are "other processes" on its CPUs (a
                # fleet's are other machines); that interference limit is lifted, and so is the
                # hypervisor's steal, which would turn the slow host inconclusive instead of
                # failed. ssh does not pass this to the hosts' runs.
                "HEALTH_CHECK_OPTS": (
                    "--threshold interference.other_cpu_pct=100 --threshold interference.steal_pct=100"
                ),
                "ANSIBLE_CONFIG": str(ANSIBLE_CFG),
                "ANSIBLE_HOME": str(self.work / "ansible-home"),
                "ANSIBLE_LOCAL_TEMP": str(self.work / "ansible-local"),
                "ANSIBLE_HOST_KEY_CHECKING": "False",
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                "ANSIBLE_PLAYBOOK": ansible_playbook(),  # for ansible/fleet-run.sh
            }
        )
        return env

    def playbook_argv(
        self,
        *extra,
        mode="pairs",
        args="",
        run_id=None,
        groups=None,
        hosts=None,
        host_vars=None,
        extra_vars=None,
        playbook=None,
    ):
        """The command line of a run of ansible/fleet.yml (or of `playbook`, e.g. fleet-run.sh,
        which takes the same arguments without the playbook's path)."""
        inventory = self.inventory(groups=groups, hosts=hosts, host_vars=host_vars)
        ev = {
            "health_check_mode": mode,
            "health_check_args": args,
            "health_check_binary": self.binary,
            "health_check_results_dir": str(self.work / "results"),
        }
        if run_id:
            ev["health_check_run_id"] = run_id
        ev.update(extra_vars or {})
        head = [str(playbook)] if playbook else [ansible_playbook(), str(PLAYBOOK)]
        return [*head, "-i", str(inventory), "-f", str(max(10, len(self.hosts) * 2)), "-e", json.dumps(ev), *extra]

    def playbook(self, *extra, timeout=600, **kw):
        """Runs ansible/fleet.yml (see playbook_argv); returns the CompletedProcess (text)."""
        return subprocess.run(
            self.playbook_argv(*extra, **kw),
            check=False,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            cwd=self.work,
        )

    def run_dirs(self):
        results = self.work / "results"
        return sorted(results.iterdir(), key=lambda p: p.stat().st_mtime) if results.exists() else []


# ---- what the playbook tests share

# Seconds per run, not minutes: three sections, 3 pings, 2 s per bandwidth direction.
# This 2-CPU VM fails DCPerf's absolute limits (15,000 calls/s per thread, busy CPU under 50 %,
# 10 Gbit/s to each client on a 1 Gbit/s test network); the fleet tests are about comparison.
VM_LIMITS = (
    "--threshold sleepbench.calls_per_thread=100 --threshold sleepbench.total_cpu_pct=101"
    " --threshold network.min_bandwidth_gbps=0.01"
)
QUICK_ARGS = f"--only system,network,sleep --sleep-time 1 --ping-count 3 --iperf-time 1 {VM_LIMITS}"
QUICK = {"health_check_profile": "quick"}


def output(proc):
    return f"status {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-3000:]}"


def last_run(fleet):
    runs = fleet.run_dirs()
    assert runs, "no results directory"
    run = runs[-1]
    return run, json.loads((run / "fleet.json").read_text())


def health_check_pids(fleet, h):
    pids = run(["ip", "netns", "pids", h.ns], check=False).stdout.split()
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                comm, rest = stat.read().rsplit(")", 1)
            if comm.endswith("(health_check") and rest.split()[0] != "Z":
                found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def assert_no_responder_left(fleet):
    for h in fleet.hosts:
        ports = [p for p in fleet.listening_ports(h) if p != 22]
        assert ports == [], f"{h} still listens on {ports}"
        assert health_check_pids(fleet, h) == [], f"health_check still runs on {h}"
