"""Filters of the health_check role: who measures whom, and the argument lists of each run.

The schedule is plain Python so it can be read (and tested, tests/python/test_fleet_ansible.py)
without Ansible. Every function returns data built from lists, dicts and strings only.

Schedules (hosts in inventory order, as Ansible lists them):
  pairs  one round: a perfect matching (h0-h1, h2-h3, ...); with an odd count the last host joins
         the last pair as a third, measured by that pair's leader too. The server role measures
         forward then reverse, so one test per pair covers both directions.
  mesh   every pair once, in rounds of a round-robin (circle method) so no host is in two tests at
         once: N-1 rounds for even N, N for odd N (each host sits one round out). The leader of a
         pair is the one that has led fewer tests so far, which keeps every host's responder
         busy every other round or so.
  star   DCPerf's layout: every host of group health_check_server measures all hosts of group
         health_check_clients (N sequential tests per server, done by the binary itself).
"""

import ipaddress
import posixpath
import shlex
import socket
import stat as statmod

# Copies of the binary's section names and of the options the playbook sets: a test
# (tests/python/test_fleet_ansible.py) checks them against `health_check --help`.
ALL_SECTIONS = ["system", "network", "sleep", "memory", "storage"]
DEFAULT_SECTIONS = ["system", "network", "sleep", "memory"]
# Options the playbook sets itself for every run: a user's copy would contradict the schedule.
RESERVED = {
    "-r",
    "--role",
    "-c",
    "--clients",
    "-o",
    "--output",
    "--port",
    "--daemon",
    "--pid-file",
    "--format",
    "--envelope",
}


def pairs_rounds(hosts):
    """One round: {leader: [peers]}."""
    hosts = list(hosts)
    if len(hosts) < 2:
        return []
    rnd = {}
    for i in range(0, len(hosts) - 1, 2):
        rnd[hosts[i]] = [hosts[i + 1]]
    if len(hosts) % 2:
        rnd[hosts[-3]].append(hosts[-1])
    return [rnd]


def mesh_rounds(hosts):
    """Round-robin by the circle method: the first host stays, the others rotate."""
    hosts = list(hosts)
    if len(hosts) < 2:
        return []
    ring = hosts + ([None] if len(hosts) % 2 else [])
    n = len(ring)
    led = {h: 0 for h in hosts}
    rounds = []
    for r in range(n - 1):
        rnd = {}
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is None or b is None:
                continue
            # Fewer tests led so far leads; on a tie, alternate by round so neither side is favoured.
            if led[a] != led[b]:
                leader, peer = (a, b) if led[a] < led[b] else (b, a)
            else:
                leader, peer = (a, b) if (r + i) % 2 == 0 else (b, a)
            led[leader] += 1
            rnd[leader] = [peer]
        rounds.append(rnd)
        ring = [ring[0], ring[-1]] + ring[1:-1]
    return rounds


def health_check_schedule(hosts, mode, servers=None, clients=None):
    """The plan: {mode, hosts, rounds: [{leader: [peers]}], star: {server: [clients]}}."""
    hosts = list(hosts)
    plan = {"mode": mode, "hosts": hosts, "rounds": [], "star": {}}
    if mode == "pairs":
        plan["rounds"] = pairs_rounds(hosts)
    elif mode == "mesh":
        plan["rounds"] = mesh_rounds(hosts)
    elif mode == "star":
        live = set(hosts)
        cl = [c for c in (clients or []) if c in live]
        plan["star"] = {s: [c for c in cl if c != s] for s in (servers or []) if s in live}
    else:
        raise ValueError(f"health_check_mode must be star, pairs or mesh, not {mode!r}")
    return plan


def health_check_plan_text(plan, addresses):
    """The schedule as lines a person reads (the dry run prints it; plan.txt keeps it)."""

    def who(h):
        return f"{h} ({addresses.get(h, h)})"

    lines = [f"mode {plan['mode']}: {len(plan['hosts'])} host(s)"]
    if plan["mode"] == "star":
        for server, cl in plan["star"].items():
            lines.append(f"server {who(server)} measures {len(cl)} client(s) one after another:")
            lines.extend(f"  -> {who(c)}" for c in cl)
        if not plan["star"]:
            lines.append("no server: put hosts in group health_check_server (and health_check_clients)")
        return lines
    for r, rnd in enumerate(plan["rounds"], 1):
        busy = {h for leader, peers in rnd.items() for h in [leader, *peers]}
        idle = [h for h in plan["hosts"] if h not in busy]
        lines.append(f"round {r}/{len(plan['rounds'])}: {len(rnd)} test(s) at once")
        for leader, peers in rnd.items():
            lines.append(f"  {who(leader)} measures {', '.join(who(p) for p in peers)} (both directions)")
        if idle:
            lines.append(f"  sitting out: {', '.join(idle)}")
    if not plan["rounds"]:
        lines.append("no network test: fewer than two hosts")
    lines.append("then every host runs its local sections, all at once")
    return lines


def health_check_address(explicit, ansible_host, name):
    """The address a peer is measured at: health_check_address, else ansible_host, else the
    inventory name; a name is resolved here on the controller, because compare maps a client to a
    machine by the IP addresses the machine's own document lists."""
    for candidate in (explicit, ansible_host, name):
        if candidate:
            break
    candidate = str(candidate)
    try:
        ipaddress.ip_address(candidate)
        return candidate
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(candidate, None, type=socket.SOCK_STREAM)
    except OSError:
        return candidate
    v4 = [i[4][0] for i in infos if i[0] == socket.AF_INET]
    return (v4 or [i[4][0] for i in infos] or [candidate])[0]


def health_check_addresses(hosts, hostvars):
    """{host: address} for every host (see health_check_address)."""
    out = {}
    for h in hosts:
        hv = hostvars[h]
        out[h] = health_check_address(hv.get("health_check_address"), hv.get("ansible_host"), h)
    return out


def health_check_split_args(args):
    """The user's extra arguments as a list, and the sections they plan:
    {"args": [...without --only/--skip...], "sections": [...], "storage": bool, "reserved": [...]}.
    A string is split like a shell would (no expansion)."""
    if args is None:
        args = []
    tokens = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
    rest, only, skip, reserved = [], None, [], []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, value = tok.partition("=")
        if name in ("--only", "--skip"):
            if not eq:
                i += 1
                value = tokens[i] if i < len(tokens) else ""
            values = [v.strip() for v in value.split(",") if v.strip()]
            if name == "--only":
                only = values
            else:
                skip.extend(values)
        else:
            if name in RESERVED:
                reserved.append(name)
            elif len(tok) > 2 and tok[0] == "-" and tok[1] != "-" and tok[:2] in RESERVED:
                reserved.append(tok[:2])  # a short option with its value attached: -ofile
            rest.append(tok)
        i += 1
    storage = any(t == "--storage" or t.startswith("--storage=") for t in rest)
    planned = only if only is not None else DEFAULT_SECTIONS + (["storage"] if storage else [])
    sections = [s for s in ALL_SECTIONS if s in planned and s not in skip]
    return {
        "args": rest,
        "sections": sections,
        "storage": storage,
        "reserved": reserved,
        "unknown_sections": [s for s in (only or []) + skip if s not in ALL_SECTIONS],
    }


def health_check_path_chain(path):
    """Every directory from / down to `path`: ['/', '/var', '/var/lib', ...]. An empty list when
    `path` is not an absolute, normalized path below / (health_check_unsafe_dirs says why)."""
    path = str(path or "")
    if not path.startswith("/") or path == "/" or posixpath.normpath(path) != path or path.startswith("//"):
        return []
    parts = path.strip("/").split("/")
    return ["/"] + ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def health_check_unsafe_dirs(stats, path, uid, created=False):
    """Why the work directory `path` cannot be trusted, from what the role's health_check_lstat
    module found at each of health_check_path_chain(path) (a later entry for a path replaces an
    earlier one): a list of reasons, empty when it is safe.

    Safe means nobody but the connecting user (`uid`) and root can change what is at `path`: the
    work directory, when it exists, is a real directory owned by `uid` that no group or other user
    can write; every directory above it is owned by root or `uid` and writable by no one else
    unless it is sticky (like /tmp: others can add entries there but not rename or remove ours);
    none of them is a symbolic link (its target's parents would be out of sight). `created`: the
    role has just created what was missing, so every directory must now exist."""
    uid = int(uid)
    chain = health_check_path_chain(path)
    if not chain:
        return [f"health_check_remote_dir must be an absolute, normalized path below /, not {path!r}"]
    found = {st["path"]: st for st in stats or []}
    if set(chain) - set(found):
        return [f"the directories above {path} were not all looked at"]

    def owner(st):
        name = st.get("pw_name")
        return f"uid {st.get('uid')}" + (f" ({name})" if name else "")

    reasons = []
    for d in chain:
        st = found[d]
        what = "the work directory " + d if d == path else d + " (above the work directory)"
        if not st.get("exists"):
            if created:
                reasons.append(f"{what} is missing right after it was created")
            continue
        if st.get("islnk"):
            reasons.append(
                f"{what} is a symbolic link (to {st.get('lnk_target')}): set health_check_remote_dir to a path without links"
            )
            continue
        if not st.get("isdir"):
            reasons.append(f"{what} exists and is not a directory")
            continue
        mode = int(st.get("mode", "0"), 8)
        if d == path:
            if st.get("uid") != uid:
                reasons.append(f"{what} is owned by {owner(st)}, not by uid {uid} that the play connects as")
            if mode & 0o022:
                reasons.append(f"{what} is writable by group or others (mode {mode:04o})")
        else:
            if st.get("uid") not in (0, uid):
                reasons.append(f"{what} is owned by {owner(st)}, neither root nor uid {uid} that the play connects as")
            if mode & 0o022 and not mode & statmod.S_ISVTX:
                reasons.append(f"{what} is writable by group or others and not sticky (mode {mode:04o})")
    if reasons:
        reasons.append(
            "another user could swap what the play copies there and runs: "
            "remove or fix it, or set health_check_remote_dir"
        )
    return reasons


def health_check_missing_dirs(stats):
    """The paths health_check_lstat found missing (the ones the role is about to create)."""
    return [st["path"] for st in stats or [] if not st.get("exists")]


class FilterModule:
    def filters(self):
        return {
            "health_check_schedule": health_check_schedule,
            "health_check_plan_text": health_check_plan_text,
            "health_check_address": health_check_address,
            "health_check_addresses": health_check_addresses,
            "health_check_split_args": health_check_split_args,
            "health_check_path_chain": health_check_path_chain,
            "health_check_unsafe_dirs": health_check_unsafe_dirs,
            "health_check_missing_dirs": health_check_missing_dirs,
        }
