"""The scene: a fake corner of a machine with odd bytes, built identically every time.

Everything lives under a fresh tmpfs at ROOT (a fixed path, so recorded facts replay), inside the
private mount and UTS namespaces the harness re-executes itself in: mount points holding odd bytes,
files for check_file_*, a copy of /etc bound over it whose passwd and group add two odd users
and whose login.defs is fixed, a silent `logger`, and long-running `sleep` copies with odd names as root and as
those users. `teardown` kills the processes and undoes every mount; the processes also die with
the harness (PR_SET_PDEATHSIG), so a crash leaves nothing behind.
"""

import ctypes
import os
import signal
import socket
import subprocess

ROOT = b"/tmp/hc-nhc-diff"
HOSTNAME = "n0042.cluster.example"
WORK = ROOT + b"/work"  # its own tmpfs: NHC's per-case files never change a checked file system
FILES = ROOT + b"/files"
BIN = ROOT + b"/bin"
USER1, USER2 = 12345, 12346
USER1_NAME, USER2_NAME = b"hcduser", b"hcd\xe9user"
FIXED_MTIME = 1_000_000_000  # 2001-09-09: "older than" holds, "newer than" does not

# Mount points under ROOT/m: (name, tmpfs source, options). Odd bytes in the names on purpose.
MOUNTS = [
    (b"plain", b"hcd_plain", "size=4m"),
    (b"sp ace", b"hcd src", "size=2m"),
    (b"t\tab", b"hcd_tab", "size=2m"),
    (b"back\\slash", b"hcd_bs", "size=2m"),
    (b"caf\xe9", b"hcd_caf\xe9", "size=2m"),
    (b"ff\xff", b"hcd_ff", "size=2m"),
    (b"caf\xc3\xa9", b"hcd_utf8", "size=2m"),
    (b"hash#tag", b"hcd_hash", "size=2m"),
    (b"star*", b"hcd_star", "size=2m"),
    (b"dollar$x", b"hcd_dollar", "size=2m"),
    (b"ro", b"hcd_ro", "size=2m"),
    (b"full", b"hcd_full", "size=1m"),
    (b"inodes", b"hcd_inodes", "size=2m,nr_inodes=16"),
]
BIND = b"bind"  # ROOT/m/bind: a bind mount of ROOT/files
NOT_MOUNTED = b"nomount"  # ROOT/m/nomount: a directory, no mount
MISSING = b"ro/missing"  # under the read-only mount: NHC cannot create it

# Files under ROOT/files: name -> (contents, mode, uid, gid).
_FILES = {
    b"latin1.txt": (b"caf\xe9 au lait\nna\xefve\n\xff\xfe end\n", 0o644, 0, 0),
    b"crlf.txt": (b"line one\r\nline two\r\nkey=value\r\n", 0o644, 0, 0),
    b"nofinal.txt": (b"first line\nlast line without newline", 0o644, 0, 0),
    b"empty.txt": (b"", 0o644, 0, 0),
    b"long.txt": (b"x" * 70000 + b" needle\nshort tail\n", 0o644, 0, 0),
    b"patterns.txt": (
        (
            b"/regex/\n*glob*\n!negated\n{n0042}\n   leading spaces\ntrailing spaces   \n"
            b"back\\slash\n$HOME and ${HOSTNAME}\ntab\there\nvers=3,rw,hard\n#comment\n\n"
        ),
        0o644,
        0,
        0,
    ),
    b"m0644": (b"mode 0644\n", 0o644, 0, 0),
    b"m0600": (b"mode 0600\n", 0o600, 0, 0),
    b"m4755": (b"mode 4755\n", 0o4755, 0, 0),
    b"m0000": (b"mode 0000\n", 0o000, 0, 0),
    b"m0755": (b"#!/bin/sh\n", 0o755, 0, 0),
    b"user1": (b"owned by hcduser\n", 0o640, USER1, USER1),
    b"user2": (b"owned by hcd\xe9user\n", 0o660, USER2, USER2),
    b"caf\xe9.txt": (b"latin-1 name\n", 0o644, 0, 0),
    b"sp ace.txt": (b"space in name\n", 0o644, 0, 0),
}
_DIRS = {b"dir": 0o755, b"d1777": 0o1777, b"d0700": 0o700}
_LINKS = {b"link": b"latin1.txt", b"dangling": b"no-such-target", b"dirlink": b"dir"}
FIFO = b"fifo"

LOGIN_DEFS = b"# fixed for the differential runs\nUID_MIN\t\t\t 1000\n#SYS_UID_MAX\t\t  100\n"

# Sleepers: (file name under BIN, argv, uid, parent). Durations are distinct and unlike NHC's
# own `sleep 30`, so a process pattern names exactly the sleepers it means.
SLEEP_COPIES = [b"hcd-sleep", b"hcd\xffsleep", b"hcd\xe9sleep", b"hcd sleep"]
SLEEPERS = [
    (b"hcd-sleep", [b"hcd-sleep", b"86401"], 0),
    (b"hcd\xffsleep", [b"hcd\xffsleep", b"86402"], 0),
    (b"hcd sleep", [BIN + b"/hcd sleep", b"86403"], 0),
    (b"hcd\xe9sleep", [b"hcd\xe9sleep", b"86404"], USER1),
    (b"hcd-sleep", [b"hcd-userjob", b"86405", b"1"], USER1),
    (b"hcd\xffsleep", [b"hcd\xffsleep", b"86406"], USER2),
]
STEPD = b"hcd_stepd"  # a copy of bash, root, whose child runs as USER1 (lineage checks)


def _run(*argv):
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


def _mount_tmpfs(source, target, options):
    _run("mount", "-t", "tmpfs", "-o", f"{options},mode=0755", source, target)


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _write(path, data, mode=0o644, uid=0, gid=0):
    with open(path, "wb") as f:
        f.write(data)
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    os.utime(path, (FIXED_MTIME, FIXED_MTIME))


class Scene:
    """The scene, built on `build()` and undone by `teardown()` (also as a context manager)."""

    def __init__(self):
        self.mounted = []  # in mount order; unmounted in reverse
        self.procs = []
        self.made_root = False

    def __enter__(self):
        try:
            self.build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()

    def build(self):
        if os.geteuid() != 0:
            raise SystemExit("the scene needs root")
        socket.sethostname(HOSTNAME)
        self.made_root = not os.path.exists(ROOT)  # an empty directory in the real /tmp, removed after
        os.makedirs(ROOT, exist_ok=True)
        self._mount(ROOT, b"hcd_root", "size=16m")
        os.makedirs(WORK)
        self._mount(WORK, b"hcd_work", "size=64m")
        self._files()
        self._mounts()
        self._processes()
        self._etc()
        # Read-only from here on, so that nothing NHC does can add a directory to the scene.
        _run("mount", "-o", "remount,bind,ro", ROOT)

    def _mount(self, target, source, options):
        _mount_tmpfs(source, target, options)
        self.mounted.append(target)

    def _bind(self, source, target):
        _run("mount", "--bind", source, target)
        self.mounted.append(target)

    def _files(self):
        os.makedirs(FILES)
        for name, (data, mode, uid, gid) in _FILES.items():
            _write(FILES + b"/" + name, data, mode, uid, gid)
        for name, mode in _DIRS.items():
            os.mkdir(FILES + b"/" + name)
            os.chmod(FILES + b"/" + name, mode)
        for name, target in _LINKS.items():
            os.symlink(target, FILES + b"/" + name)
            os.utime(FILES + b"/" + name, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
        os.mkfifo(FILES + b"/" + FIFO, 0o644)
        for path in [FILES + b"/" + n for n in list(_DIRS) + [FIFO]]:
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))

    def _mounts(self):
        base = ROOT + b"/m"
        os.makedirs(base + b"/" + NOT_MOUNTED)
        for name, source, options in MOUNTS:
            target = base + b"/" + name
            os.mkdir(target)
            self._mount(target, source, options)
            _write(target + b"/README", b"scene mount " + name + b"\n")
        _write(base + b"/full/filler", b"\0" * (900 * 1024))
        for i in range(8):
            _write(base + b"/inodes/f%d" % i, b"")
        os.mkdir(base + b"/" + BIND)
        self._bind(FILES, base + b"/" + BIND)
        for name in [NOT_MOUNTED, BIND] + [m[0] for m in MOUNTS]:
            os.utime(base + b"/" + name, (FIXED_MTIME, FIXED_MTIME))
        _run("mount", "-o", "remount,ro", base + b"/ro")

    def _etc(self):
        """A copy of /etc on a tmpfs of its own, bound over /etc, with the odd users added. A bind
        over the file /etc/passwd would be dropped the moment the machine rewrites its passwd
        (apt adding a user renames a new file over it); a bind over /etc is not."""
        etc = ROOT + b"/etc"
        os.makedirs(etc)
        self._mount(etc, b"hcd_etc", "size=32m")
        _run("cp", "-a", "--one-file-system", "/etc/.", etc)
        with open(etc + b"/passwd", "rb") as f:
            passwd = f.read()
        with open(etc + b"/group", "rb") as f:
            group = f.read()
        passwd += b"hcduser:x:%d:%d:Ren\xe9e Fa\xefence,Room \xff:/nonexistent:/usr/sbin/nologin\n" % (USER1, USER1)
        passwd += USER2_NAME + b":x:%d:%d:second user:/nonexistent:/usr/sbin/nologin\n" % (USER2, USER2)
        group += b"hcdgrp:x:%d:\n" % USER1 + b"hcd\xe9grp:x:%d:\n" % USER2
        _write(etc + b"/passwd", passwd)
        _write(etc + b"/group", group)
        _write(etc + b"/login.defs", LOGIN_DEFS)
        self._bind(etc, b"/etc")
        _write(BIN + b"/logger", b"#!/bin/sh\nexit 0\n", 0o755)
        self._bind(BIN + b"/logger", os.path.realpath(b"/usr/bin/logger"))

    def _processes(self):
        os.makedirs(BIN)  # its own tmpfs: the size of this machine's sleep and bash stays out of ROOT's df
        self._mount(BIN, b"hcd_bin", "size=8m")
        with open("/bin/sleep", "rb") as f:
            sleep = f.read()
        for name in SLEEP_COPIES:
            _write(BIN + b"/" + name, sleep, 0o755)
        with open("/bin/bash", "rb") as f:
            _write(BIN + b"/" + STEPD, f.read(), 0o755)
        for exe, argv, uid in SLEEPERS:
            self._spawn(BIN + b"/" + exe, argv, uid)
        child = b"setpriv --reuid %d --regid %d --clear-groups --pdeathsig KILL %s/hcd-sleep 86407 & wait" % (
            USER1,
            USER1,
            BIN,
        )
        self._spawn(BIN + b"/" + STEPD, [STEPD, b"-c", child], 0)

    def _spawn(self, exe, argv, uid):
        ids = {} if uid == 0 else {"user": uid, "group": uid, "extra_groups": []}
        proc = subprocess.Popen(
            argv,
            executable=exe,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 (the scene is built before any thread starts)
            **ids,
        )
        self.procs.append(proc)

    def teardown(self):
        for proc in self.procs:
            if _kill_children(proc.pid):  # the stepd's child first: the stepd reaps it and ends
                try:
                    proc.wait(2)
                except subprocess.TimeoutExpired:
                    pass
            proc.kill()
            proc.wait()
        self.procs = []
        for target in reversed(self.mounted):
            subprocess.run(["umount", "-l", target], check=False)
        self.mounted = []
        if self.made_root:
            os.rmdir(ROOT)
            self.made_root = False


def _kill_children(pid):
    """SIGKILL the children of `pid` (the stepd's sleeper), found through /proc; how many."""
    killed = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
    return killed
