"""Helpers shared by the benchmark scripts in scripts/ (not a benchmark itself).

Each benchmark prints the command line that reproduces it and a one-line description of the
machine, and reports medians (the machines these run on are shared and noisy).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command_line() -> str:
    """``cd <repo> && <python> scripts/<script> <args>``, shell-quoted."""
    exe = sys.executable
    if exe.startswith(REPO + os.sep):
        exe = os.path.relpath(exe, REPO)
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return f"cd {shlex.quote(REPO)} && {shlex.join([exe, script, *sys.argv[1:]])}"


def git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    return (f"python {platform.python_version()}, {platform.system()} {platform.release()},"
            f" {os.cpu_count()} CPUs ({cpu_model()}), git {git_rev()}")


def block_queue_setting(path: str, name: str) -> str:
    """A ``/sys/block/<dev>/queue/<name>`` value for the device holding ``path``."""
    try:
        dev = os.stat(path).st_dev
        sysdir = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        for d in (sysdir, os.path.dirname(sysdir)):  # a partition's queue is its disk's
            p = os.path.join(d, "queue", name)
            if os.path.exists(p):
                with open(p) as f:
                    return f.read().strip()
    except OSError:
        pass
    return "unknown"


def fs_type(path: str) -> str:
    """Filesystem type of the mount holding ``path`` (from /proc/self/mounts)."""
    try:
        best, kind = "", "unknown"
        real = os.path.realpath(path)
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    mnt = parts[1]
                    if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                        best, kind = mnt, parts[2]
        return kind
    except OSError:
        return "unknown"


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of process ``pid`` (all its threads; ``/proc/PID/stat``
    counts in ticks of 1/``SC_CLK_TCK`` s). (0.0, 0.0) once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0, 0.0
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``proc_cpu_split`` summed)."""
    return sum(proc_cpu_split(pid))


def child_pids(pid: int) -> list[int]:
    """The live children of ``pid`` (``/proc/*/stat`` whose parent is ``pid``)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(name))
    return out
