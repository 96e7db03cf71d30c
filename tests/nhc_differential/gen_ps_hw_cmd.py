"""Generated check lines for NHC's process, hardware and command checks.

Process patterns name only the scene's sleepers (durations 86401-86407, names with odd bytes) or
nothing at all, never NHC's own processes (`sleep 30`, `bash .../nhc`, ps) or the harness, so a
verdict is the same for NHC (one run per case) and for health_check (one run for all).
Hardware bounds hold on any machine (0, 1k, an exabyte, or NHC's own $HW_* values); a case whose
message names this machine's figures is marked not portable. Actions that would do something
(kill, restart) run only in NHC's test mode (SHELL=':') and are never `kill` for the user checks,
which kill whatever the shell.
"""

from gen_fs_file import Check
from gen_words import arith, arith_expr, single, spaced, word

PS_NAMES = [
    b"hcd-sleep",
    b"hcd?sleep",
    b"hcd*sleep",
    b"hcd\xffsleep",
    b"hcd\xe9sleep",
    b"hcd sleep",
    b"hcd-userjob",
    b"hcd-userjob 86405",
    b"86401",
    b"86404",
    b"sleep 86403",
    b"hcd_stepd",
    b"[h]cd-sleep",
    b"no-such-daemon",
    b"hcd-sleep 8640[0-9]",
]
OWNERS = [b"root", b"hcduser", b"hcd\xe9user", b"hcd?user", b"12345", b"0", b"nobody", b"/^hcd/", b"!root", b"hcd*"]


def ps_daemon(rng):
    name = rng.pick(["check_ps_daemon", "check_ps_blacklist"])
    words = [name.encode(), word(rng, rng.pick(PS_NAMES), ("single", "double", "bare", "ansi"))]
    if rng.chance(0.5):
        words.append(word(rng, rng.pick(OWNERS + [b""]), ("single", "bare")))
        if rng.chance(0.3):
            words.append(word(rng, rng.pick([b"86404", b"1", b"864", b"86405 1"]), ("single", "bare")))
    return Check(name, spaced(rng, words))


SERVICES = [b"hcd-sleep", b"sleep", b"hcd_stepd", b"hcd?sleep", b"no-such-svc", b"86401", b"hcd-userjob"]
MATCHES = [b"*hcd-sleep", b"/sleep$/", b"*86405*", b"*", b"hcd\xffsleep", b"*\xe9*", b"/^hcd/", b"!*sleep", b"*/hcd"]


def ps_service(rng):
    words = [b"check_ps_service"]
    portable = True
    for _ in range(rng.randrange(0, 4)):
        opt = rng.pick([b"-u", b"-d", b"-m", b"-f", b"-0", b"-S", b"-r", b"-c", b"-s", b"-k", b"-e", b"-E", b"-q"])
        rng.tag("ps_service.opt" + opt.decode())
        words.append(opt)
        if opt == b"-k":
            portable = False  # the message names the PID it (pretends to have) killed
        value = {
            b"-u": lambda: rng.pick(OWNERS),
            b"-d": lambda: rng.pick(SERVICES),
            b"-m": lambda: rng.pick(MATCHES),
            b"-e": lambda: b"echo hcd-start",
            b"-E": lambda: b"echo hcd-stop",
        }.get(opt)
        if value:
            words.append(word(rng, value(), ("single", "double", "bare")))
    if rng.chance(0.95):
        words.append(word(rng, rng.pick(SERVICES), ("bare", "single", "double")))
        if rng.chance(0.05):
            words.append(b"extra")
    return Check("check_ps_service", spaced(rng, words), portable)


IGNORES = {
    b"-c": [b"hcd?sleep", b"hcd-userjob", b"hcd", b"/tmp/hc-nhc-diff/bin/hcd-sleep"],
    b"-u": [b"12345", b"1234", b"123456", b"12346"],
    b"-n": [b"hcduser", b"hcd", b"hcd?user", b"hcd\xe9user"],
    b"-p": [b"1", b"99999999"],
}


def ps_users(rng):
    name = rng.pick(["check_ps_unauth_users", "check_ps_unauth_users", "check_ps_userproc_lineage"])
    words = [name.encode()]
    for _ in range(rng.randrange(0, 3)):
        opt = rng.pick(list(IGNORES))
        rng.tag("ps_users.opt" + opt.decode())
        words += [opt, word(rng, rng.pick(IGNORES[opt]), ("single", "double", "bare"))]
    actions = rng.pick(
        [[], [b"die"], [b"log"], [b"syslog"], [b"ignore"], [b"log", b"die"], [b"syslog", b"log"], [b"bogus"]]
    )
    words += actions
    # The message names a PID; the verdict holds while only root owns this machine's processes.
    return Check(name, spaced(rng, words), portable=False)


def loadavg(rng):
    limits = [rng.pick([b"1000000", b"1000000", b"0", b"''", b"abc", b"1e6", b"-1"]) for _ in range(rng.randrange(4))]
    if rng.chance(0.2):
        # Not HW_CORES: it is 0 until a hardware check ran, which made a limit of 1 and a
        # verdict of the moment's load.
        limits.append(arith(rng, rng.pick([b"10**6", b"1000000/0", b"(1<<20)+1"])))
    portable = all(x in (b"1000000", b"''", b"1e6") for x in limits)  # `abc` is 0: always exceeded
    return Check("check_ps_loadavg", spaced(rng, [b"check_ps_loadavg"] + limits), portable)


def hw_cpuinfo(rng):
    words = [b"check_hw_cpuinfo"]
    for var in [b"HW_SOCKETS", b"HW_CORES", b"HW_THREADS"][: rng.randrange(4)]:
        roll = rng.random()
        if roll < 0.5:
            rng.tag("var.hw")
            words.append(rng.pick([b"$" + var, b"${" + var + b"}", b'"$' + var + b'"']))
        elif roll < 0.75:
            words.append(arith(rng, rng.pick([var, var + b"+0", var + b"*1", var + b"/1", var + b"+1"]), hw=True))
        elif roll < 0.85:
            words.append(arith(rng, hw=True))
        else:
            words.append(rng.pick([b"''", b"0", b"100000", b"x", b"010"]))
    # The message names this machine's counts whenever the check fails.
    return Check("check_hw_cpuinfo", spaced(rng, words), portable=False)


MEM_MINS = [b"0", b"1k", b"1m", b"010m", b"0x10m", b"1.5g", b"1mb", b"16M", b"1 m", b"08m", b"-1g", b"''"]
MEM_MAXES = [b"1e", b"1E", b"1024P", b"8e", b"16E", b"9e", b"1eB", b"0x10p", b"1.5e", b"1k"]


def hw_mem(rng):
    """Bounds whose verdict holds on any machine: RAM is above 16 MB and below an exabyte."""
    name = rng.pick(["check_hw_physmem", "check_hw_swap", "check_hw_mem"])
    args = [rng.pick(MEM_MINS), rng.pick(MEM_MAXES)][: rng.randrange(1, 3) if rng.chance(0.2) else 2]
    if name == "check_hw_swap":
        args[0] = rng.pick([b"0", b"''", b"-1", b"0k"])
    elif rng.chance(0.2):
        rng.tag("var.hw")
        if name == "check_hw_physmem":
            args = [b"${HW_RAM_TOTAL}k", rng.pick([b"$HW_RAM_TOTAL", b'"$HW_RAM_TOTAL"K'])]
        else:
            args = [b"$((HW_RAM_TOTAL+HW_SWAP_TOTAL))", b'"$((HW_RAM_TOTAL + HW_SWAP_TOTAL))"kb']
    if rng.chance(0.3):
        args.append(rng.pick([b"5%", b"1k", b"0", b"''", b"100%", b"x%"]))
    return Check(name, spaced(rng, [name.encode()] + args), portable=False)


def hw_free(rng):
    name = rng.pick(["check_hw_physmem_free", "check_hw_swap_free", "check_hw_mem_free"])
    safe = [b"0", b"''", b"-1", b"1e", b"9e"] + ([b"1k", b"1K", b"1kb"] if name != "check_hw_swap_free" else [])
    args = [rng.pick(safe + [b"1.5g", b"x", b"010"])] if rng.chance(0.95) else []
    return Check(name, spaced(rng, [name.encode()] + args), portable=args[:1] in ([b"0"], [b"''"], [b"-1"], []))


def hw_eth(rng):
    dev = rng.pick([b"lo", b"l?", b"[l]o", b"*", b"no-such-dev0", b"lo:", b"LO", b"lo*", b"$HOSTNAME_S"])
    words = [b"check_hw_eth"] + ([word(rng, dev, ("bare", "single", "double"))] if rng.chance(0.95) else [])
    return Check("check_hw_eth", spaced(rng, words))


COMMANDS = [
    [b"true"],
    [b"false"],
    [b"/bin/true"],
    [b"echo", b"hello", b"world"],
    [b"printf", b"caf\\351\\n"],
    [b"printf", b"a\\nb\\nc\\n"],
    [b"printf", b"\\377\\n"],
    [b"no-such-command-hcd"],
    [b"sh", b"-c", b"exit 3"],
]
OUTPUT_MATCHES = [b"hello*", b"*world", b"/^caf/", b"caf\xe9", b"!*x*", b"!hello*", b"b", b"/^[abc]$/", b"*\xff*", b""]


def cmd(rng):
    name = rng.pick(["check_cmd_status", "check_cmd_output", "check_cmd_output"])
    words = [name.encode()]
    if rng.chance(0.3):
        words += [b"-t", rng.pick([b"1", b"5", b"40", b"30"])]
    if rng.chance(0.3):
        words += [b"-r", rng.pick([b"0", b"1", b"3", b"127"])]
    argv = rng.pick(COMMANDS)
    if rng.chance(0.006):
        rng.tag("cmd.timeout")
        words = [name.encode(), b"-t", b"1", b"sleep", b"3"]
        return Check(name, spaced(rng, words), shell=name == "check_cmd_output")
    if name == "check_cmd_output":
        for _ in range(rng.randrange(3)):
            words += [b"-m", word(rng, rng.pick(OUTPUT_MATCHES), ("single", "double", "ansi"))]
        if rng.chance(0.4):
            rng.tag("cmd.e")
            words += [b"-e", single(b" ".join(argv))]
            argv = []
    words += [word(rng, a, ("bare", "single")) if a.isalnum() else single(a) for a in argv]
    if rng.chance(0.05):
        words.append(arith(rng, arith_expr(rng)))
    return Check(name, spaced(rng, words), shell=name == "check_cmd_output")
