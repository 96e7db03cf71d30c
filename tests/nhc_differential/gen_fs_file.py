"""Generated check lines for NHC's file system and file checks (check_fs_*, check_file_*).

Each generator takes the case's Rng and returns a Check: the check's name, its shell-level text
(before conf_escape), and whether its message is the same on any machine. Paths point into the
scene; the only real paths are read-only tests of /, /dev/null, /dev/zero and /etc/passwd.
"""

from dataclasses import dataclass

import scene
from gen_words import arith, arith_expr, count, single, size, spaced, word

M = scene.ROOT + b"/m/"
F = scene.FILES + b"/"


@dataclass
class Check:
    name: str
    text: bytes
    portable: bool = True
    hang: bool = False  # NHC would block on it until its watchdog fires (a FIFO, /dev/zero)
    shell: bool = False  # needs a real $SHELL in NHC (check_cmd_output runs through it)
    raw: bool = False  # `text` is the whole file line, mask and newline included


MOUNT_POINTS = [M + name for name, _, _ in scene.MOUNTS] + [M + scene.BIND]
# What NHC's own readers make of the odd names: `read` without -r turns /proc/mounts' \040 into
# 040, and df prints a tab as `?` and splits at the space.
MOUNT_LOOKALIKES = [
    M + b"sp040ace",
    M + b"t011ab",
    M + b"back134slash",
    M + b"sp",
    M + b"t?ab",
    M + b"plain/",
    M + b"plain/.",
    scene.ROOT,
    b"/etc/passwd",
]
NOT_MOUNTS = [M + scene.NOT_MOUNTED, M + scene.MISSING]
SOURCES = [b"hcd_*", b"/^hcd/", b"!tmpfs", b"hcd src", b"hcd\\040src", b"hcd_caf\xe9", b"hcd_plain", b"*", b"/^hcd_r/"]
TYPES = [b"tmpfs", b"!tmpfs", b"/^tmp/", b"ext4", b"t*", b"/fs$/", b"nfs"]
OPTIONS = [
    b"/(^|,)rw($|,)/",
    b"/(^|,)ro(,|$)/",
    b"*size=2048k*",
    b"/(^|,)vers=3(,|$)/",
    b"!/nr_inodes/",
    b"rw,*",
    b"/nr_inodes=16/",
    b"!*ro,*",
]


def _mount_point(rng):
    roll = rng.random()
    if roll < 0.7:
        return rng.pick(MOUNT_POINTS)
    if roll < 0.88:
        rng.tag("path.lookalike")
        return rng.pick(MOUNT_LOOKALIKES)
    rng.tag("path.not_mounted")
    return rng.pick(NOT_MOUNTS)


def fs_mount(rng):
    name = rng.pick(["check_fs_mount", "check_fs_mount", "check_fs_mount_rw", "check_fs_mount_ro"])
    words = [name.encode()]
    if rng.chance(0.2):
        rng.tag("fs_mount.old_form")
        words.append(word(rng, _mount_point(rng)))
        extras = [rng.pick(SOURCES), rng.pick(TYPES), rng.pick(OPTIONS)][: rng.randrange(4)]
        words += [word(rng, e, ("single", "double", "bare")) for e in extras]
        return Check(name, spaced(rng, words))
    for _ in range(rng.randrange(1, 4)):
        opt = rng.pick([b"-f", b"-f", b"-f", b"-s", b"-t", b"-o", b"-0", b"-r", b"-F", b"-e", b"-E", b"-x", b"-O"])
        rng.tag("fs_mount.opt" + opt.decode())
        words.append(opt)
        value = {
            b"-f": lambda: _mount_point(rng),
            b"-F": lambda: _mount_point(rng),
            b"-s": lambda: rng.pick(SOURCES),
            b"-t": lambda: rng.pick(TYPES),
            b"-o": lambda: rng.pick(OPTIONS),
            b"-e": lambda: b"echo hcd-action",
            b"-E": lambda: b"echo hcd-found",
            b"-O": lambda: b"size=4m",
        }.get(opt)
        if value:
            words.append(word(rng, value(), ("single", "single", "double", "bare", "ansi")))
    if rng.chance(0.1):
        words.append(b"--")
    if b"-f" not in words or rng.chance(0.2):
        words.append(word(rng, _mount_point(rng), ("single", "double", "bare", "ansi")))
    if rng.chance(0.03):
        rng.tag("fs_mount.root")
        words = [name.encode(), b"-f", b"/"]
    return Check(name, spaced(rng, words))


SPACE_POINTS = MOUNT_POINTS + [M + b"sp", M + b"t?ab", scene.ROOT, M + scene.NOT_MOUNTED]


def fs_space(rng):
    name = rng.pick(
        ["check_fs_free", "check_fs_used", "check_fs_ifree", "check_fs_iused", "check_fs_size", "check_fs_inodes"]
    )
    point = rng.pick(SPACE_POINTS)
    if point == M + b"sp" or point == M + b"t?ab":
        rng.tag("path.df_lookalike")
    words = [name.encode(), word(rng, point, ("single", "double", "bare", "ansi"))]
    inodes = name in ("check_fs_ifree", "check_fs_iused", "check_fs_inodes")
    ranged = name in ("check_fs_size", "check_fs_inodes")
    for _ in range(rng.randrange(1, 3) if ranged else 1):
        if rng.chance(0.93):
            words.append(count(rng) if inodes else size(rng, percent=not ranged))
    if rng.chance(0.03):
        rng.tag("fs_space.root")
        words = [name.encode(), b"/", b"0" if inodes else rng.pick([b"1k", b"100%", b"1"])]
        if name in ("check_fs_used", "check_fs_iused"):
            words[2] = b"1e"
        if ranged:
            words[2:] = [b"1", b"1e"]
        return Check(name, spaced(rng, words), portable=False)  # a failure names /'s own space
    return Check(name, spaced(rng, words))


TEST_FILES = [
    F + b"m0644",
    F + b"m0600",
    F + b"m4755",
    F + b"m0000",
    F + b"m0755",
    F + b"d1777",
    F + b"d0700",
    F + b"dir",
    F + b"fifo",
    F + b"link",
    F + b"dangling",
    F + b"dirlink",
    F + b"empty.txt",
    F + b"user1",
    F + b"user2",
    F + b"caf\xe9.txt",
    F + b"sp ace.txt",
    F + b"no-such-file",
    M + b"ro/README",
    M + b"dollar$x/README",
    M + b"star*/README",
    b"/dev/null",
    b"/dev/zero",
    b"/etc/passwd",
    b"/",
]
TEST_OPS = [b"-" + bytes([c]) for c in b"abcdefghkprstuwxOGLSN"]


def file_test(rng):
    words = [b"check_file_test"]
    for _ in range(rng.randrange(1, 4)):
        roll = rng.random()
        if roll < 0.08:
            words.append(b"-!")
        elif roll < 0.12:
            rng.tag("file_test.bad_op")
            words.append(rng.pick([b"-z", b"-nt", b"-e5", b"--", b"-"]))
        else:
            words.append(rng.pick(TEST_OPS))
    for _ in range(rng.randrange(0 if rng.chance(0.05) else 1, 3)):
        words.append(word(rng, rng.pick(TEST_FILES)))
    if rng.chance(0.1):
        rng.shuffle(words[1:])
    return Check("check_file_test", spaced(rng, words))


STAT_FILES = [f for f in TEST_FILES if f != b"/"]
# -n/-o compare the fixed 2001 mtime; -N/-O the ctime of the scene's build (seconds to minutes
# ago), so only limits far from both are used.
STAT_OPTIONS = {
    b"-m": [b"0644", b"644", b"0600", b"04755", b"4755", b"01777", b"0", b"0000", b"0777", b"0x1a4", b"abc"],
    b"-M": [b"0644", b"0400", b"04000", b"01000", b"0", b"0777", b"0x100", b"7"],
    b"-u": [b"0", b"12345", b"12346", b"root", b"00"],
    b"-g": [b"0", b"12345", b"12346", b"root"],
    b"-U": [b"root", b"hcduser", b"hcd\xe9user", b"12345", b"nobody"],
    b"-G": [b"root", b"hcdgrp", b"hcd\xe9grp", b"0"],
    b"-n": [b"100", b"2000000000"],
    b"-o": [b"100", b"2000000000"],
    b"-N": [b"100000000", b"2000000000"],
    b"-O": [b"100000000", b"2000000000"],
    b"-t": [b"1", b"0", b"0x1", b"8"],
    b"-T": [b"3", b"5", b"0", b"0x3"],
    b"-d": [b"0", b"1"],
}


def file_stat(rng):
    words = [b"check_file_stat"]
    portable = True
    for _ in range(rng.randrange(1, 4)):
        opt = rng.pick(list(STAT_OPTIONS) + [b"-x"])
        rng.tag("file_stat.opt" + opt.decode())
        words.append(opt)
        if opt == b"-x":
            continue
        if opt == b"-d":
            portable = False  # tmpfs device numbers differ between machines and boots
        if rng.chance(0.1) and opt in (b"-m", b"-M", b"-u"):
            words.append(arith(rng, rng.pick([b"8#644", b"0644", b"420", b"0x1a4+0"])))
        else:
            words.append(word(rng, rng.pick(STAT_OPTIONS[opt]), ("bare", "single", "double")))
    # /dev/null's times are the machine's boot: no time limit is far from them everywhere.
    timed = any(w in (b"-n", b"-o", b"-N", b"-O") for w in words)
    files = [f for f in STAT_FILES if not (timed and f.startswith(b"/dev/"))]
    for _ in range(rng.randrange(0 if rng.chance(0.05) else 1, 3)):
        words.append(word(rng, rng.pick(files)))
    return Check("check_file_stat", spaced(rng, words), portable)


CONTENT_FILES = [
    F + b"latin1.txt",
    F + b"crlf.txt",
    F + b"nofinal.txt",
    F + b"empty.txt",
    F + b"long.txt",
    F + b"patterns.txt",
    F + b"link",
    F + b"dir",
    F + b"no-such-file",
    F + b"m0000",
    F + b"user2",
    b"/etc/passwd",
]
PATTERNS = [
    b"*caf*",
    b"caf\xe9*",
    b"caf\xc3\xa9*",
    b"*\xe9*",
    b"/^na.ve$/",
    b"line one",
    b"*line one*",
    b"key=value",
    b"*key=value*",
    b"/value$/",
    b"/^line/",
    b"first line",
    b"last line*",
    b"*needle",
    b"short tail",
    b"/regex/",
    b"//regex//",
    b"*glob*",
    b"\\*glob\\*",
    b"!negated",
    b"!!negated",
    b"{n0042}",
    b"   leading spaces",
    b"leading spaces",
    b"trailing spaces",
    b"back\\slash",
    b"backslash",
    b"$HOME and ${HOSTNAME}",
    b"tab?here",
    b"tab here",
    b"*vers=3*",
    b"root:*",
    b"hcduser:*",
    b"/^hcd.user:/",
    b"",
    b"*",
    b"#comment",
]


def file_contents(rng):
    if rng.chance(0.02):
        rng.tag("file_contents.hang")
        target = rng.pick([F + b"fifo", b"/dev/zero"])
        return Check("check_file_contents", b"check_file_contents " + target + b" " + single(b"*x*"), hang=True)
    words = [b"check_file_contents", word(rng, rng.pick(CONTENT_FILES), ("bare", "single", "double"))]
    for _ in range(rng.randrange(0 if rng.chance(0.05) else 1, 4)):
        pattern = rng.pick(PATTERNS)
        if rng.chance(0.2) and not pattern.startswith(b"!"):
            rng.tag("file_contents.negated")
            pattern = b"!" + pattern
        words.append(word(rng, pattern, ("single", "single", "double", "ansi", "bare")))
    if rng.chance(0.05):
        rng.tag("file_contents.var")
        words.append(b'"*${HOSTNAME_S}*"')
    if rng.chance(0.03):
        rng.tag("arith")
        words.append(b'"*$((' + arith_expr(rng) + b'))*"')
    return Check("check_file_contents", spaced(rng, words))
