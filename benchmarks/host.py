"""What the benchmarks say about the machine they ran on: a ratio is only meaningful beside the
CPU model it was measured on (AMD and Intel differ, and sessions move between them)."""

import pathlib
import platform


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (`model name` on x86, `Model` on some Arm)."""
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("model name", "Model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"
