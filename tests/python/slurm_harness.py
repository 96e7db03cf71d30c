"""A real one-node Slurm cluster for tests, entirely under a temporary directory: munged (as the
munge user, a fresh key, its socket in a world-readable directory), slurmctld and `slurmd -N`, with
their own slurm.conf (free ports, SlurmUser=root, no cgroups, no accounting). Debian's slurmctld,
slurmd, slurm-client and munge packages; root.

The node's HealthCheckProgram is a script written here that runs deploy/slurm/health_check-slurm
with HEALTH_CHECK_DEFAULTS pointing at a file the test rewrites (`set_options`), so the options of
every later run change without touching slurmd; each run's exit code and output are appended to
`runs.log`.

Everything started is stopped by `stop()` (process groups: SIGTERM, then SIGKILL), including any
health check still running and anything else whose command line or environment names the
cluster's directory, which is then removed. Facts learnt bringing it up on Debian bookworm's Slurm
22.05 are in deploy/slurm/README.md ("Testing")."""

import os
import pathlib
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
WRAPPER = REPO / "deploy" / "slurm" / "health_check-slurm"
SBIN_PATH = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/local/sbin:/usr/sbin:/sbin"
# Program: the Debian package that installs it.
TOOLS = {
    "munged": "munge",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "scontrol": "slurm-client",
    "sinfo": "slurm-client",
    "sbatch": "slurm-client",
    "scancel": "slurm-client",
    "unshare": "util-linux",
}


def tool(name):
    return shutil.which(name, path=SBIN_PATH)


def missing_prerequisite():
    """None when a cluster can start here, else one line naming what is missing."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (slurmd runs its HealthCheckProgram as root; munged runs as munge)")
    packages = sorted({pkg for name, pkg in TOOLS.items() if tool(name) is None})
    if packages:
        missing.append(f"{', '.join(n for n in TOOLS if tool(n) is None)} (apt-get install {' '.join(packages)})")
    try:
        pwd.getpwnam("munge")
    except KeyError:
        if "munge" not in packages:
            missing.append("the munge user (apt-get install munge)")
    return "needs " + "; ".join(missing) if missing else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeState:
    """What `scontrol show node` says: the state words (IDLE, DRAIN, ...) and the reason, without
    the " [user@time]" that scontrol appends."""

    def __init__(self, text):
        self.text = text
        m = re.search(r"\bState=(\S+)", text)
        self.state = m.group(1) if m else ""
        self.flags = set(self.state.split("+"))
        m = re.search(r"^\s*Reason=(.*?)(?: \[[^\]]*@[^\]]*\])?\s*$", text, re.MULTILINE)
        self.reason = m.group(1) if m else ""

    @property
    def drained(self):
        """DRAIN is the flag scontrol shows (IDLE+DRAIN); sinfo calls it drained or draining."""
        return "DRAIN" in self.flags

    def __repr__(self):
        return f"NodeState({self.state!r}, reason={self.reason!r})"


class Cluster:
    def __init__(self, binary, node="hcnode", interval=5, nodes=None):
        """A cluster of `nodes` (one slurmd each, on this host), or of the one `node`; `node` is
        the first of them either way."""
        self.binary = binary
        self.nodes = list(nodes or [node])
        self.node = self.nodes[0]
        self.interval = interval
        # Not under pytest's tmp_path: that is 0700 root, and munged (the munge user) must reach its
        # key and socket directory through every parent.
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="health_check-slurm-"))
        self.root.chmod(0o755)
        self.conf = self.root / "slurm.conf"
        self.defaults = self.root / "health_check.defaults"
        self.runs_log = self.root / "runs.log"
        self.fake_sys = self.root / "fake-sys"
        self.procs = {}
        self.env = dict(os.environ, SLURM_CONF=str(self.conf), PATH=SBIN_PATH)
        self.started_at = None
        self.timings = {}

    # ------------------------------------------------------------ start

    def start(self, options):
        t0 = time.monotonic()
        self.started_at = t0
        self.set_options(options)
        self._write_health_check_program()
        self._start_munged()
        self._write_conf()
        self._spawn("slurmctld", [tool("slurmctld"), "-D", "-c", "-f", str(self.conf)])
        self.wait(lambda: self.scontrol("ping", check=False).returncode == 0, 20, "slurmctld to answer")
        self.timings["slurmctld"] = time.monotonic() - t0
        for name in self.nodes:
            self._spawn(f"slurmd-{name}", [tool("slurmd"), "-D", "-N", name, "-f", str(self.conf)])
        for name in self.nodes:
            self.wait_node(
                lambda n: n.state.startswith("IDLE") and not n.flags & {"NOT_RESPONDING", "DRAIN"},
                30,
                "IDLE",
                name=name,
            )
        self.timings["idle"] = time.monotonic() - t0
        return self

    def _start_munged(self):
        munge = pwd.getpwnam("munge")
        d = self.root / "munge"
        d.mkdir()
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        # munged refuses a key that others can read or that it does not own, and a socket
        # directory it cannot write; the directory stays readable by all, for the clients.
        for path, mode in ((d, 0o755), (key, 0o400)):
            os.chown(path, munge.pw_uid, munge.pw_gid)
            path.chmod(mode)
        self.munge_socket = d / "munge.socket.2"
        self._spawn(
            "munged",
            [
                tool("munged"),
                "--foreground",
                f"--key-file={key}",
                f"--socket={self.munge_socket}",
                f"--pid-file={d / 'munged.pid'}",
                f"--seed-file={d / 'munged.seed'}",
                f"--log-file={d / 'munged.log'}",
            ],
            user=munge.pw_uid,
            group=munge.pw_gid,
            extra_groups=[],
        )
        self.wait(self.munge_socket.exists, 10, "munged's socket")

    def _write_conf(self):
        host = socket.gethostname().split(".")[0]
        # Several slurmd on one host: each its own port (and its own spool, pid and log by %n).
        nodes = "\n".join(
            f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={free_port()} CPUs=1 "
            "RealMemory=100 State=UNKNOWN"
            for name in self.nodes
        )
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir()
        for name in self.nodes:
            (self.root / "spool" / name).mkdir()
        r = self.root
        self.conf.write_text(
            f"""# A one-node cluster for health_check's tests (tests/python/slurm_harness.py).
ClusterName=hctest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=300
HealthCheckProgram={r}/health_check_program
HealthCheckInterval={self.interval}
HealthCheckNodeState=ANY
{nodes}
PartitionName=debug Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
"""
        )

    def _write_health_check_program(self):
        # slurmd gives its HealthCheckProgram SLURMD_NODENAME and nothing else: no PATH, no
        # SLURM_CONF. The wrapper must cope without PATH; SLURM_CONF is this cluster's own.
        program = self.root / "health_check_program"
        # With a directory fake-sys/ beside it, the wrapper runs in a mount namespace of its own
        # where that directory lies over /sys/devices/system (overlayfs; the real tree stays as
        # it is beneath): the error counters of the run are the test's.
        program.write_text(
            f"""#!/bin/sh
# Written by tests/python/slurm_harness.py: Slurm's HealthCheckProgram for this test cluster.
SLURM_CONF={self.conf}
HEALTH_CHECK_DEFAULTS={self.defaults}
export SLURM_CONF HEALTH_CHECK_DEFAULTS
echo "run started" >> {self.runs_log}
if [ -d {self.fake_sys} ]; then
    unshare -m sh -c 'mount -t overlay overlay -o "lowerdir=$1:/sys/devices/system" /sys/devices/system && shift && exec "$@"' \
        sh {self.fake_sys} {WRAPPER} >> {self.runs_log}.out 2>&1
else
    {WRAPPER} >> {self.runs_log}.out 2>&1
fi
rc=$?
echo "run rc=$rc" >> {self.runs_log}
exit $rc
"""
        )
        program.chmod(0o755)

    def set_options(self, options):
        """The options of every health check run from now on (the defaults file, replaced
        atomically: a run never reads half of it)."""
        # Each node's own streaks and history ($SLURMD_NODENAME, as slurmd sets it): the nodes
        # share this host's files.
        text = (
            f"HEALTH_CHECK_BIN={self.binary}\n"
            f"HEALTH_CHECK_HISTORY={self.root}/history-$SLURMD_NODENAME.sqlite\n"
            f'HEALTH_CHECK_SLURM_OPTS="--state {self.root}/state-$SLURMD_NODENAME.json {" ".join(options)}"\n'
        )
        tmp = self.defaults.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.rename(self.defaults)

    def _spawn(self, name, argv, **kw):
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 (closed with the process)
        self.procs[name] = (
            subprocess.Popen(
                argv,
                cwd=self.root,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kw,
            ),
            log,
        )

    # ------------------------------------------------------------ talk to it

    def scontrol(self, *args, timeout=15, check=True):
        r = subprocess.run(
            [tool("scontrol"), *args], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and r.returncode != 0:
            raise AssertionError(f"scontrol {' '.join(args)}: {r.stderr.strip()}\n{self.diagnostics()}")
        return r

    def node_state(self, name=None):
        return NodeState(self.scontrol("show", "node", name or self.node).stdout)

    def drain(self, reason, name=None):
        self.scontrol("update", f"NodeName={name or self.node}", "State=DRAIN", f"Reason={reason}")

    def resume(self, name=None):
        if self.node_state(name).drained:
            self.scontrol("update", f"NodeName={name or self.node}", "State=RESUME")

    def runs_started(self):
        """How many health check runs have started so far."""
        if not self.runs_log.exists():
            return 0
        return self.runs_log.read_text().count("run started\n")

    def submit(self, script):
        """Submits a batch job running `script` (sh) on the node; returns its id."""
        r = subprocess.run(
            [tool("sbatch"), "--parsable", "-N", "1", "-t", "5", "-o", "/dev/null", "--wrap", script],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
        if r.returncode != 0:
            raise AssertionError(f"sbatch: {r.stderr.strip()}\n{self.diagnostics()}")
        return r.stdout.strip().split(";")[0]

    def cancel(self, job):
        subprocess.run([tool("scancel"), job], env=self.env, capture_output=True, timeout=15, check=False)

    def runs(self):
        """The exit codes of the health check runs so far, oldest first."""
        if not self.runs_log.exists():
            return []
        return [int(m) for m in re.findall(r"^run rc=(\d+)$", self.runs_log.read_text(), re.MULTILINE)]

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            for name, (proc, _) in self.procs.items():
                if proc.poll() is not None:
                    raise AssertionError(f"{name} exited ({proc.returncode}) waiting for {what}\n{self.diagnostics()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout} s\n{self.diagnostics()}")
            time.sleep(0.2)

    def wait_node(self, predicate, timeout, what, name=None):
        """Polls `scontrol show node` until predicate(NodeState) holds; returns that state."""
        last = []

        def check():
            state = self.node_state(name)
            last[:] = [state]
            return state if predicate(state) else None

        try:
            return self.wait(check, timeout, f"node {what}")
        except AssertionError as e:
            raise AssertionError(f"{e}\nlast: {last}") from None

    def wait_runs(self, count, timeout):
        """Waits until `count` more health check runs have ended; returns their exit codes."""
        before = len(self.runs())
        self.wait(lambda: len(self.runs()) >= before + count, timeout, f"{count} more health check runs")
        return self.runs()[before:]

    def diagnostics(self):
        parts = []
        logs = ["log/slurmctld.log", "runs.log.out", "munged.out"]
        logs += [f"log/slurmd-{n}.log" for n in self.nodes] + [f"slurmd-{n}.out" for n in self.nodes]
        for name in logs:
            path = self.root / name
            if path.exists():
                lines = path.read_text(errors="replace").splitlines()[-15:]
                parts.append(f"--- {name} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(parts)

    # ------------------------------------------------------------ stop

    def pause_controller(self):
        os.kill(self.procs["slurmctld"][0].pid, signal.SIGSTOP)

    def continue_controller(self):
        proc = self.procs.get("slurmctld")
        if proc and proc[0].poll() is None:
            os.kill(proc[0].pid, signal.SIGCONT)

    def strays(self):
        """Processes other than ours whose command line or environment names the cluster's
        directory: a health check run slurmd started (in its own process group), an scontrol."""
        ours = {p.pid for p, _ in self.procs.values()} | {os.getpid()}
        needle = str(self.root).encode()
        found = []
        for entry in pathlib.Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in ours:
                continue
            try:
                if needle in (entry / "cmdline").read_bytes() or needle in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def stop(self):
        """Stops everything (slurmd first, munged last) and removes the directory. Returns the
        pids that were still running after SIGKILL (none, normally)."""
        self.continue_controller()
        for name in [*(f"slurmd-{n}" for n in self.nodes), "slurmctld", "munged"]:
            if name not in self.procs:
                continue
            proc, log = self.procs[name]
            for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                if proc.poll() is not None:
                    break
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    pass
            log.close()
        for pid in self.strays():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self.strays() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = self.strays()
        shutil.rmtree(self.root, ignore_errors=True)
        return left
