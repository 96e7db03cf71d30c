"""The seeded case generator: `generate(count, seed)` gives the same cases for the same arguments.

A case is 1-3 nhc.conf lines `<mask> || <check ...>`: one main check of a family chosen by weight,
sometimes a setting, variable or hardware-gathering line before it and a second check after it.
Case i draws from its own Random seeded by "<seed>:<i>", so cases do not shift when a family is
added. Every case carries the categories its parts tagged (see README.md).
"""

from dataclasses import dataclass, field

import gen_fs_file as fsf
import gen_ps_hw_cmd as phc
from gen_fs_file import Check
from gen_words import Rng, arith, conf_escape, mask, single

F = fsf.F
FAMILIES = [
    (fsf.fs_mount, 14),
    (fsf.fs_space, 12),
    (fsf.file_test, 9),
    (fsf.file_stat, 9),
    (fsf.file_contents, 9),
    (phc.ps_daemon, 7),
    (phc.ps_service, 7),
    (phc.ps_users, 4),
    (phc.loadavg, 2),
    (phc.hw_cpuinfo, 4),
    (phc.hw_mem, 4),
    (phc.hw_free, 2),
    (phc.hw_eth, 2),
    (phc.cmd, 6),
]
# With a real $SHELL in NHC (check_cmd_output), only checks that act on nothing may share the case:
# never one that creates a missing mount point or runs an action.
ACTING = ("check_fs_mount", "check_ps_service")
QUIET_FAMILIES = [fsf.fs_space, fsf.file_test, fsf.file_stat, phc.hw_eth, phc.hw_free, phc.cmd]
SETTINGS = [
    b"export MARK_OFFLINE=0",
    b"export MARK_OFFLINE=no",
    b"export MARK_OFFLINE=yes",
    b"export MARK_OFFLINE=1",
    b"export MARK_OFFLINE=01",
    b"export MARK_OFFLINE=",
    b"MARK_OFFLINE=0",
    b"export MAX_SYS_UID=20000",
    b"export MAX_SYS_UID=12345",
    b"MAX_SYS_UID=0",
    b"export NHC_AUTH_USERS='root nobody hcduser'",
    b"export NHC_AUTH_USERS=\"root nobody hcduser $(printf 'hcd\\351user')\"",
    b"NHC_AUTH_USERS=hcd",
    b"export NHC_RM=slurm RM_DAEMON_MATCH=/hcd_stepd/",
    b"export NHC_RM=slurm RM_DAEMON_MATCH='/\\bhcd_stepd\\b/'",
    b"export NHC_RM=pbs RM_DAEMON_MATCH=hcd_stepd*",
    b"export NHC_RM=slurm",
    b"export NHC_RM=none",
    b"export TIMEOUT=10",
    b"export A=1 B=2",
    b"A=plain",
]
GATHER = [b"check_hw_eth lo", b"check_hw_cpuinfo", b"check_hw_physmem_free 0", b"check_hw_mem_free 1k"]


@dataclass
class Case:
    id: str
    text: bytes
    checks: list
    cats: list
    portable: bool = True
    shell: bool = False
    hang_line: int = 0  # 1-based line NHC blocks on until its watchdog fires; 0 for none
    lines: list = field(default_factory=list)


def generate(count, seed):
    return [make_case(i, seed) for i in range(count)]


def make_case(i, seed):
    rng = Rng(f"{seed}:{i}")
    if rng.chance(0.06):
        checks = shell_misc(rng)
    elif rng.chance(0.05):
        checks = variables(rng)
    else:
        checks = [_pick_family(rng, FAMILIES)(rng)]
        if checks[0].name == "check_ps_userproc_lineage" and rng.chance(0.7):
            rng.tag("setting.NHC_RM")
            checks.insert(0, Check("setting", rng.pick([s for s in SETTINGS if b"RM_DAEMON" in s])))
        elif rng.chance(0.2):
            text = rng.pick(SETTINGS)
            rng.tag("setting." + text.split(b"=")[0].split()[-1].decode())
            checks.insert(0, Check("setting", text))
        if any(b"HW_" in c.text for c in checks) and rng.chance(0.5):
            rng.tag("var.hw_after_gather")
            gather = rng.pick(GATHER)
            checks.insert(0, Check(gather.split()[0].decode(), gather))
        if rng.chance(0.25) and len(checks) < 3:
            pool = QUIET_FAMILIES if checks[-1].shell else [f for f, _ in FAMILIES]
            checks.append(_pick_family(rng, [(f, 1) for f in pool])(rng))
            if checks[-1].shell and any(c.name.startswith(ACTING) for c in checks):
                checks.pop()
    lines = [_line(rng, c) for c in checks]
    hang = next((n + 1 for n, c in enumerate(checks) if c.hang), 0)
    if hang:
        lines[hang - 1] = b"* || " + conf_escape(checks[hang - 1].text) + b"\n"
        del lines[hang:], checks[hang:]
    rng.tag(f"lines.{len(lines)}")
    return Case(
        id=f"c{i:05d}",
        text=b"".join(lines),
        checks=sorted({c.name for c in checks if c.name.startswith("check_")}),
        cats=sorted(rng.cats),
        portable=all(c.portable for c in checks),
        shell=any(c.shell for c in checks),
        hang_line=hang,
    )


def _pick_family(rng, families):
    total = sum(w for _, w in families)
    roll = rng.randrange(total)
    for family, weight in families:
        if roll < weight:
            return family
        roll -= weight
    raise AssertionError("unreachable")


def _line(rng, check):
    """The file line for a check: a mask, `||`, the check with `read`'s backslashes doubled."""
    text = check.text
    if check.raw:
        return text
    body = conf_escape(text)
    if rng.chance(0.03):
        rng.tag("read.raw_backslash")
        body = text
    sep = b" || " if rng.chance(0.85) else rng.pick([b"||", b"\t||\t", b"  ||", b"|| "])
    lead = b"" if rng.chance(0.9) else rng.pick([b"  ", b"\t", b" \t "])
    end = b"\n"
    if rng.chance(0.02):
        rng.tag("line.crlf")
        end = b"\r\n"
    elif rng.chance(0.02):
        rng.tag("line.trailing_ws")
        end = b"  \t\n"
    return lead + mask(rng) + sep + body + end


def _raw(name, text):
    return Check(name, text, raw=True)


def shell_misc(rng):
    """Lines that are more (or less) than one check: compound commands, substitutions, syntax
    errors, a run-stopping expansion, comments, lines without a mask or check, continuations."""
    kind = rng.randrange(14)
    nosuch = b"check_hw_eth no-such-dev0"
    if kind == 0:
        rng.tag("shell.compound")
        sep = rng.pick([b" ; ", b" && ", b" || "])
        return [Check("check_hw_eth", b"check_hw_eth lo" + sep + rng.pick([nosuch, b"check_hw_eth lo"]))]
    if kind == 1:
        rng.tag("shell.cmdsubst")
        return [
            Check(
                "check_hw_eth",
                rng.pick([b'check_hw_eth "$(echo lo)"', b"check_hw_eth `echo lo`", b"check_hw_eth $(echo no such)"]),
            )
        ]
    if kind == 2:
        rng.tag("shell.cmdsubst")
        return [Check("check_file_test", b"check_file_test -f $(printf '" + F + b"m0644')")]
    if kind == 3:
        rng.tag("syntax.error")
        text = rng.pick(
            [
                b"check_hw_eth 'lo",
                b'check_hw_eth "lo',
                b"check_hw_eth lo )",
                b"check_fs_mount -o /(^|,)rw($|,)/ -f " + fsf.M + b"plain",
            ]
        )
        return [Check("check_hw_eth", text), Check("check_hw_eth", nosuch)]
    if kind == 4:
        rng.tag("shell.stop")
        first = [Check("check_hw_eth", nosuch)] if rng.chance(0.5) else []
        return first + [
            Check("check_hw_eth", b"check_hw_eth ${NOPE:?no such variable}"),
            Check("check_hw_eth", b"check_hw_eth lo"),
        ]
    if kind == 5:
        rng.tag("shell.unknown_command")
        return [Check("other", rng.pick([b"check_no_such_thing arg", b"true", b"false", b":", b"check_hw_eth"]))]
    if kind == 6:
        rng.tag("line.no_bar")
        return [_raw("check_hw_eth", rng.pick([nosuch + b"\n", b"*\n", b"check_hw_eth lo\n"]))]
    if kind == 7:
        rng.tag("line.comment")
        text = rng.pick([b"# * || " + nosuch + b"\n", b"  #* || " + nosuch + b"\n", b"* || # " + nosuch + b"\n", b"\n"])
        return [_raw("check_hw_eth", text), Check("check_hw_eth", b"check_hw_eth lo")]
    if kind == 8:
        rng.tag("line.empty_part")
        return [_raw("check_hw_eth", rng.pick([b"* ||\n", b"|| " + nosuch + b"\n", b" || \n", b"||\n"]))]
    if kind == 9:
        rng.tag("line.continuation")
        return [
            _raw(
                "check_hw_eth",
                rng.pick(
                    [b"* || check_hw_eth \\\nno-such-dev1\n", b"* || check_hw_eth \\\n\n", b"* || check_hw_eth lo\\\n"]
                ),
            )
        ]
    if kind == 10:
        rng.tag("quote.ansi")
        return [
            Check(
                "check_fs_mount",
                b"check_fs_mount_rw -f "
                + rng.pick([b"$'" + fsf.M + b"t\\tab'", b"$'" + fsf.M + b"caf\\xe9'", b"$'" + fsf.M + b"ff\\377'"]),
            )
        ]
    if kind == 11:
        rng.tag("mask.bar_in_mask")
        return [_raw("check_hw_eth", b"'*||x' || " + nosuch + b"\n"), _raw("check_hw_eth", b"*|| |" + nosuch + b"\n")]
    if kind == 12:
        rng.tag("quote.whitespace_collapse")
        return [
            Check(
                "check_file_contents",
                b"check_file_contents "
                + F
                + b"patterns.txt "
                + single(rng.pick([b"trailing  spaces", b"tab\there", b"leading spaces  "])),
            )
        ]
    rng.tag("shell.pipe")
    return [
        Check(
            "check_hw_eth", b"check_hw_eth " + rng.pick([b"lo", b"no-such-dev0"]) + b" | " + rng.pick([b"cat", b"true"])
        )
    ]


def variables(rng):
    """NHC's own variables and the file's: $HOSTNAME, set-before-use, prefix assignments."""
    kind = rng.randrange(7)
    if kind == 0:
        rng.tag("var.user")
        return [Check("setting", b"export A=m0644 B=2"), Check("check_file_test", b'check_file_test -f "' + F + b'$A"')]
    if kind == 1:
        rng.tag("var.user")
        return [Check("setting", b"A=plain"), Check("check_fs_mount", b"check_fs_mount_rw -f " + fsf.M + b"${A}")]
    if kind == 2:
        rng.tag("var.prefix")
        return [Check("check_hw_eth", b'B=3 check_hw_eth "lo${B:+x}"'), Check("check_hw_eth", b'check_hw_eth "lo$B"')]
    if kind == 3:
        rng.tag("var.prefix")
        return [
            Check(
                "check_ps_unauth_users",
                rng.pick(
                    [
                        b"MAX_SYS_UID=20000 check_ps_unauth_users",
                        b"NHC_AUTH_USERS='root hcduser hcd?user' check_ps_unauth_users log",
                    ]
                ),
            )
        ]
    if kind == 4:
        rng.tag("var.hostname")
        value = rng.pick(
            [b"$HOSTNAME", b"${HOSTNAME_S}", b'"$HOSTNAME_S"', b"${HOSTNAME%%.*}", b"${NOPE:-$HOSTNAME_S}"]
        )
        return [Check("check_hw_eth", b"check_hw_eth " + value)]
    if kind == 5:
        rng.tag("var.default")
        value = rng.pick([b"${NOPE:-lo}", b"${NOPE-lo}", b'"${A:-lo}"', b"${NOPE:+x}lo", b"${#HOSTNAME}"])
        return [Check("check_hw_eth", b"check_hw_eth " + value)]
    rng.tag("var.hw_before_gather")
    return [
        Check(
            "check_hw_cpuinfo", b"check_hw_cpuinfo " + arith(rng, b"HW_SOCKETS>0?1:HW_SOCKETS", hw=True), portable=False
        )
    ]


def describe(case):
    """One line for people: the case's id, checks and categories."""
    return f"{case.id} [{', '.join(case.checks) or '-'}] {' '.join(case.cats)}"
