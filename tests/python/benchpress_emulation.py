"""How benchpress turns a job into argv and wraps parser output (docs/benchpress.md
and docs/contract.md), re-implemented from our notes so the tests hold the contract without DCPerf's code."""

import importlib
import sys

import yaml


class MissingInput(Exception):
    pass


def load_job(path, name="health_check"):
    jobs = yaml.safe_load(path.read_text())
    return next(job for job in jobs if job["name"] == name)


def render_args(args):
    """A job's args: a list of strings, or a mapping rendered as --key value pairs."""
    if isinstance(args, dict):
        out = []
        for key, value in args.items():
            out.append(f"--{key}" if value is None else f"--{key} {value}")
        return out
    return list(args or [])


def role_argv(job, role, role_input):
    """(benchmark_args, argv) for `run -r ROLE -i JSON`: variables resolved, each arg filled with
    str.format, then split on any run of whitespace. No shell is involved."""
    spec = job["roles"][role]
    variables = {}
    for var in spec.get("vars", []):
        if "=" in var:
            parts = var.split("=")
            name, default = parts[0], parts[1]
        else:
            name, default = var, None
        if name in role_input:
            variables[name] = role_input[name]
        elif default is not None:
            variables[name] = default
        else:
            raise MissingInput(f"The role '{role}' needs user input parameter '{name}'")
    formatted = [arg.format(**variables) for arg in render_args(spec.get("args"))]
    argv = [piece for arg in formatted for piece in arg.split()]
    return formatted, argv


def load_parser(root):
    """HealthCheckParser imported from the DCPerf-like root, as benchpress registers it."""
    for mod in [m for m in sys.modules if m == "benchpress" or m.startswith("benchpress.")]:
        del sys.modules[mod]
    sys.path.insert(0, str(root))
    try:
        parsers = importlib.import_module("benchpress.plugins.parsers")
        base = importlib.import_module("benchpress.lib.parser").Parser
    finally:
        sys.path.remove(str(root))
    cls = parsers.HealthCheckParser
    assert issubclass(cls, base), "benchpress asserts the parser subclasses Parser"
    return cls()


def envelope(job, benchmark_args, metrics, run_id="24fa5615", timestamp=1796024219):
    """The result envelope benchpress writes around the parser's return value."""
    return {
        "benchmark_args": benchmark_args,
        "benchmark_desc": job["description"],
        "benchmark_hooks": [],
        "benchmark_name": job["benchmark"],
        "machines": [
            {
                "cpu_architecture": "x86_64",
                "cpu_model": "stand-in",
                "hostname": "vm",
                "kernel_version": "6.x",
                "mem_total_kib": "24684096 KiB",
                "num_logical_cpus": "2",
                "os_distro": "debian",
                "os_release_name": "Debian GNU/Linux 12 (bookworm)",
            }
        ],
        "metadata": {},
        "metrics": metrics,
        "run_id": run_id,
        "timestamp": timestamp,
    }
