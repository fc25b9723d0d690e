"""What every benchmark reports about where it ran, and its peak memory.

The benchmarks run as scripts (``python benchmarks/NAME.py``), so this folder is on ``sys.path`` and
they import it as ``machine``. Importing it loads nothing beyond ``os``: a benchmark's worker processes
import it for :func:`peak_rss_mb`, and ``importlib.metadata`` alone costs a fresh process ~27 ms, which
a whole-process timing would charge to the engine measured.
"""

from __future__ import annotations

import os


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine() or "unknown CPU"


def describe(*packages: str) -> str:
    """One line: OS, CPU model and count, RAM, Python, the given packages' versions, load average.

    The load average is there because other processes competing for the CPUs slow every figure alike.
    """
    import platform
    from importlib import metadata
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = []
    for pkg in packages:
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{pkg} (not installed)")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return " | ".join([f"{platform.system()} {platform.release()}", f"{cpu_model()} x{os.cpu_count()}",
                       f"RAM {ram:.1f} GiB", f"Python {platform.python_version()}", *versions,
                       f"load average {load}"])


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (``ru_maxrss`` is in KiB on Linux)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
