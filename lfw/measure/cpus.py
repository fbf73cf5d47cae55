"""The machine's CPUs as this process may use them (:class:`CpuFacts`: what is read, and how
:attr:`CpuFacts.usable_cores` follows: docs/methodology.md, "The machine"), read once per process
(:func:`cpu_facts`) and recorded with every run (``machine_info``, keys declared in :mod:`lfw.results.keys`).

Every path is read under ``root`` (``/`` on a machine; a fake tree in tests). A file that cannot be read falls back
to what the others say, and the fallback is named in :attr:`CpuFacts.fallbacks`; nothing here raises."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lfw.results import keys as K


def parse_cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a kernel CPU list (``0-3,8,10-11``); empty text is no CPU."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return frozenset(cpus)


def cpu_list_text(cpus: frozenset[int] | set[int]) -> str:
    """The kernel's CPU list form of ``cpus`` (``0-3,8``)."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _under(root: Path, absolute: str) -> Path:
    return root / absolute.lstrip("/")


@dataclass(frozen=True)
class Quota:
    """The tightest CPU limit found: ``cores`` (quota over period), the scheduler's accounting ``period_s`` (the
    group runs at most ``cores x period_s`` CPU seconds each period) and where it was read (``source``)."""

    cores: float
    period_s: float
    source: str


OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a path as \040


def _mounts(root: Path) -> list[tuple[str, str, str]] | None:
    """The cgroup mounts of ``/proc/self/mountinfo``: (version ``v1``/``v2``, the mount's root in its hierarchy,
    the mount point), v1 only where it holds the ``cpu`` controller; None where the table cannot be read."""
    text = _read(_under(root, "/proc/self/mountinfo"))
    if text is None:
        return None
    found = []
    for line in text.splitlines():  # ID parent major:minor root mount-point options [optional...] - type source super
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        hier_root, point = (OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), f) for f in fields[3:5])
        if tail[0] == "cgroup2":
            found.append(("v2", hier_root, point))
        elif tail[0] == "cgroup" and "cpu" in tail[2].split(","):
            found.append(("v1", hier_root, point))
    return found


def _memberships(root: Path) -> dict[str, str] | None:
    """The process's group per hierarchy of ``/proc/self/cgroup``: ``v2`` and ``v1`` (the cpu controller's)."""
    text = _read(_under(root, "/proc/self/cgroup"))
    if text is None:
        return None
    groups: dict[str, str] = {}
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            groups["v2"] = path
        elif "cpu" in controllers.split(","):
            groups["v1"] = path
    return groups


def _limit(version: str, group: Path) -> tuple[float, float] | None:
    """The CPU limit ``group`` sets itself, (cores, period in seconds); None where it sets none or its files cannot
    be read."""
    if version == "v2":  # cpu.max: "<quota> <period>" in microseconds, or "max <period>"
        quota, _, period = (_read(group / "cpu.max") or "max").strip().partition(" ")
        if quota == "max":
            return None
        microseconds = int(period or 100_000)
        return int(quota) / microseconds, microseconds / 1e6
    quota_text, period_text = _read(group / "cpu.cfs_quota_us"), _read(group / "cpu.cfs_period_us")
    if quota_text is None or period_text is None or int(quota_text) < 0:  # -1: no limit
        return None
    return int(quota_text) / int(period_text), int(period_text) / 1e6


def read_quota(root: Path = Path("/")) -> tuple[Quota | None, str | None]:
    """The tightest CPU quota along the process's visible cgroup path (its own group and each parent up to the
    mount), and a fallback in words where none could be read (``None``: read, whether or not a limit is set)."""
    mounts, groups = _mounts(root), _memberships(root)
    if mounts is None or groups is None:
        return None, "CPU quota not read (no /proc/self/mountinfo or /proc/self/cgroup): none assumed"
    tightest: Quota | None = None
    looked = False
    for version, hier_root, point in mounts:
        path = groups.get(version)
        if path is None or not (path + "/").startswith(hier_root.rstrip("/") + "/"):
            continue  # this mount shows another part of the hierarchy than the process's group
        mount = _under(root, point)
        if version == "v2" and "cpu" not in (_read(mount / "cgroup.controllers") or "").split():
            continue  # a cgroup2 mount without the cpu controller (the v1 hierarchy holds it)
        group = mount / os.path.relpath(path, hier_root)
        looked = True
        while True:
            try:
                limit = _limit(version, group)
            except (ValueError, ZeroDivisionError):
                limit = None
            if limit is not None and limit[0] > 0 and (tightest is None or limit[0] < tightest.cores):
                shown = "/" + str(group.relative_to(root)) if group.is_relative_to(root) else str(group)
                tightest = Quota(*limit, f"cgroup {version} {shown}")
            if group == mount or group.parent == group:
                break
            group = group.parent
    if not looked:
        return None, "CPU quota not read (no cgroup CPU controller mounted): none assumed"
    return tightest, None


def read_cores(root: Path, cpus: frozenset[int]) -> tuple[frozenset[int], ...] | None:
    """The physical cores among ``cpus``, each as the set of its threads in ``cpus`` (sysfs siblings lists), in the
    order of their lowest CPU; None where no CPU's topology can be read."""
    cores: set[frozenset[int]] = set()
    for cpu in cpus:
        base = _under(root, f"/sys/devices/system/cpu/cpu{cpu}/topology")
        text = _read(base / "core_cpus_list") or _read(base / "thread_siblings_list")
        if text is None:
            return None
        try:
            cores.add(parse_cpu_list(text) & cpus or frozenset({cpu}))
        except ValueError:
            return None
    return tuple(sorted(cores, key=min))


def read_numa_nodes(root: Path, cpus: frozenset[int]) -> int | None:
    """NUMA nodes holding at least one of ``cpus``; None where sysfs does not list them."""
    nodes = _under(root, "/sys/devices/system/node").glob("node[0-9]*/cpulist")
    return sum(1 for n in nodes if parse_cpu_list(_read(n) or "") & cpus) or None


def read_governor(root: Path, cpus: frozenset[int]) -> str | None:
    """The frequency governor of ``cpus`` (``performance``; several joined by ``+``); None where not readable."""
    found = {text.strip() for cpu in cpus
             if (text := _read(_under(root, f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")))}
    return "+".join(sorted(found)) or None


@dataclass(frozen=True)
class CpuFacts:
    """What this process may run on (docs/methodology.md, "The machine"). ``quota``: the tightest cgroup limit (None
    where none is set or none could be read); ``fallbacks``: each fact that could not be read and what was assumed."""

    logical_cpus: int
    affinity: frozenset[int]
    quota: Quota | None
    cores: tuple[frozenset[int], ...] | None  # the physical cores of the affinity set, each its threads (read_cores)
    numa_nodes: int | None
    governor: str | None
    fallbacks: tuple[str, ...] = ()

    @classmethod
    def read(cls, root: Path = Path("/"), *, affinity: frozenset[int] | None = None,
             logical_cpus: int | None = None) -> CpuFacts:
        """The facts of this process under ``root``; ``affinity`` and ``logical_cpus`` as the OS reports them
        unless given (a test's fake machine)."""
        fallbacks: list[str] = []
        logical = logical_cpus or os.cpu_count() or 1
        if affinity is None:
            try:
                affinity = frozenset(os.sched_getaffinity(0))
            except (AttributeError, OSError):  # not Linux
                affinity = frozenset(range(logical))
                fallbacks.append(f"affinity not read (not Linux): all {logical} logical CPUs assumed")
        quota, missing = read_quota(root)
        if missing:
            fallbacks.append(missing)
        cores = read_cores(root, affinity)
        if cores is None:
            fallbacks.append("CPU topology not read (no sysfs topology): physical cores and threads per core unknown")
        return cls(logical, affinity, quota, cores, read_numa_nodes(root, affinity), read_governor(root, affinity),
                   tuple(fallbacks))

    @property
    def physical_cores(self) -> int | None:
        return len(self.cores) if self.cores is not None else None

    @property
    def threads_per_core(self) -> int | None:
        """The most threads of one core within the affinity set."""
        return max(len(c) for c in self.cores) if self.cores else None

    def spread(self, count: int) -> list[int]:
        """``count`` CPUs of the affinity set, one per core before any core's second thread (cycling where
        ``count`` is larger): where the probe's threads run (:class:`lfw.measure.ceiling.ParallelCapacity`)."""
        cores = self.cores or tuple(frozenset({cpu}) for cpu in sorted(self.affinity))
        order = [sorted(core)[i] for i in range(max(len(c) for c in cores)) for core in cores if i < len(core)]
        return [order[i % len(order)] for i in range(count)]

    @property
    def usable_cores(self) -> int:
        """The affinity set's CPUs, no more than the quota rounded up (at least 1)."""
        allowed = max(1, len(self.affinity))
        if self.quota is None:
            return allowed
        return max(1, min(allowed, math.ceil(self.quota.cores - 1e-9)))

    @property
    def smt(self) -> bool:
        """True where a core of the affinity set runs more than one of its threads."""
        return (self.threads_per_core or 1) > 1

    def limit_line(self) -> str | None:
        """One line where the usable cores differ from the logical CPUs, or a core runs several threads: ``1 usable
        core: a CPU quota of 1.0 on 2 logical CPUs``, ``16 usable CPUs on 8 cores, 2 threads each``; else None."""
        usable, allowed = self.usable_cores, len(self.affinity)
        parts = []
        if self.quota is not None and self.quota.cores < allowed:
            cores = self.quota.cores
            shown = f"{cores:.1f}" if round(cores, 1) == round(cores, 3) else f"{cores:.2f}"
            parts.append(f"a CPU quota of {shown} on {allowed} "
                         f"{'allowed' if allowed < self.logical_cpus else 'logical'} CPUs")
        if allowed < self.logical_cpus:
            parts.append(f"the affinity set holds {allowed} of {self.logical_cpus} logical CPUs "
                         f"({cpu_list_text(self.affinity)})")
        unit = "CPU" if self.smt else "core"
        text = f"{usable} usable {unit}{'s' if usable != 1 else ''}"
        if self.smt:
            text += f" on {self.physical_cores} cores, {self.threads_per_core} threads each"
        if not parts and not self.smt:
            return None
        return text + (": " + "; ".join(parts) if parts else "")

    def machine_info(self) -> dict[str, Any]:
        """The facts as ``machine_info`` keys (declared in :mod:`lfw.results.keys`)."""
        return {K.USABLE_CORES: self.usable_cores, K.LOGICAL_CPUS: self.logical_cpus,
                K.AFFINITY_CPUS: cpu_list_text(self.affinity),
                K.CPU_QUOTA: round(self.quota.cores, 3) if self.quota else None,
                K.CPU_QUOTA_SOURCE: self.quota.source if self.quota else None,
                K.PHYSICAL_CORES: self.physical_cores, K.THREADS_PER_CORE: self.threads_per_core,
                K.NUMA_NODES: self.numa_nodes, K.CPU_GOVERNOR: self.governor, K.CPU_LIMIT: self.limit_line(),
                K.CPU_FALLBACKS: list(self.fallbacks)}


@cache
def cpu_facts() -> CpuFacts:
    """This process's :class:`CpuFacts`, read on first use and kept (a run states one machine)."""
    return CpuFacts.read()


def usable_cores() -> int:
    """Cores this process may use: its affinity set, no more than its cgroup CPU quota rounded up."""
    return cpu_facts().usable_cores
