"""The machine's CPUs read from fake /proc and /sys trees: cgroup v1 and v2 quotas (a parent's limit binding), no
cgroup, unreadable files, one and two threads per core, and the usable cores and the one line that follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from lfw.measure.cpus import CpuFacts, cpu_list_text, parse_cpu_list, read_quota
from lfw.results import keys as K

V1_MOUNTS = ("29 23 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
             "30 23 0:27 / /sys/fs/cgroup/cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpuacct\n"
             "35 23 0:32 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw\n")
V2_MOUNTS = "35 23 0:32 / /sys/fs/cgroup rw,nosuid shared:15 - cgroup2 cgroup2 rw,nsdelegate\n"


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def topology(root: Path, siblings: dict[int, str]) -> None:
    for cpu, text in siblings.items():
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", text + "\n")


def v1_machine(root: Path, group: str, limits: dict[str, tuple[int, int]]) -> None:
    write(root, "/proc/self/mountinfo", V1_MOUNTS)
    write(root, "/proc/self/cgroup", f"2:cpuacct:/\n1:cpu:{group}\n0::/\n")
    for path, (quota, period) in limits.items():
        write(root, f"/sys/fs/cgroup/cpu{path}/cpu.cfs_quota_us", f"{quota}\n")
        write(root, f"/sys/fs/cgroup/cpu{path}/cpu.cfs_period_us", f"{period}\n")


def test_cpu_lists_read_and_write_the_kernels_form() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("") == frozenset()
    assert cpu_list_text(frozenset({0, 1, 2, 3, 8, 10, 11})) == "0-3,8,10-11"


def test_a_v1_quota_set_on_a_parent_binds_the_process_in_its_child_group(tmp_path: Path) -> None:
    v1_machine(tmp_path, "/bench/job", {"": (-1, 100000), "/bench": (100000, 100000), "/bench/job": (-1, 100000)})
    topology(tmp_path, {0: "0", 1: "1"})
    facts = CpuFacts.read(tmp_path, affinity=frozenset({0, 1}), logical_cpus=2)
    assert facts.quota is not None and facts.quota.cores == 1.0
    assert facts.quota.source == "cgroup v1 /sys/fs/cgroup/cpu/bench"
    assert facts.usable_cores == 1 and facts.fallbacks == ()
    assert facts.limit_line() == "1 usable core: a CPU quota of 1.0 on 2 logical CPUs"
    info = facts.machine_info()
    assert info[K.USABLE_CORES] == 1 and info[K.CPU_QUOTA] == 1.0 and info[K.LOGICAL_CPUS] == 2
    assert info[K.PHYSICAL_CORES] == 2 and info[K.THREADS_PER_CORE] == 1


def test_the_tightest_limit_along_the_path_wins_and_a_fraction_rounds_up(tmp_path: Path) -> None:
    write(tmp_path, "/proc/self/mountinfo", V2_MOUNTS)
    write(tmp_path, "/proc/self/cgroup", "0::/kubepods/pod1/app\n")
    write(tmp_path, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory\n")
    write(tmp_path, "/sys/fs/cgroup/cpu.max", "max 100000\n")
    write(tmp_path, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n")
    write(tmp_path, "/sys/fs/cgroup/kubepods/pod1/app/cpu.max", "300000 100000\n")
    quota, missing = read_quota(tmp_path)
    assert missing is None and quota is not None
    assert quota.cores == 1.5 and quota.source == "cgroup v2 /sys/fs/cgroup/kubepods/pod1"
    topology(tmp_path, {cpu: str(cpu) for cpu in range(4)})
    facts = CpuFacts.read(tmp_path, affinity=frozenset(range(4)), logical_cpus=4)
    assert facts.usable_cores == 2
    assert facts.limit_line() == "2 usable cores: a CPU quota of 1.5 on 4 logical CPUs"


def test_no_quota_set_reads_as_none_with_no_fallback(tmp_path: Path) -> None:
    v1_machine(tmp_path, "/", {"": (-1, 100000)})
    topology(tmp_path, {0: "0", 1: "1"})
    facts = CpuFacts.read(tmp_path, affinity=frozenset({0, 1}), logical_cpus=2)
    assert facts.quota is None and facts.usable_cores == 2 and facts.fallbacks == ()
    assert facts.limit_line() is None


def test_two_threads_per_core_are_counted_within_the_affinity_set(tmp_path: Path) -> None:
    v1_machine(tmp_path, "/", {"": (-1, 100000)})
    topology(tmp_path, {cpu: f"{cpu % 8},{cpu % 8 + 8}" for cpu in range(16)})
    facts = CpuFacts.read(tmp_path, affinity=frozenset(range(16)), logical_cpus=16)
    assert (facts.physical_cores, facts.threads_per_core, facts.usable_cores) == (8, 2, 16)
    assert facts.limit_line() == "16 usable CPUs on 8 cores, 2 threads each"
    # One thread of each core allowed: eight cores of one thread, and the affinity set named.
    half = CpuFacts.read(tmp_path, affinity=frozenset(range(8)), logical_cpus=16)
    assert (half.physical_cores, half.threads_per_core) == (8, 1)
    assert half.limit_line() == "8 usable cores: the affinity set holds 8 of 16 logical CPUs (0-7)"


def test_newer_kernels_core_cpus_list_is_read_first(tmp_path: Path) -> None:
    for cpu in range(4):
        write(tmp_path, f"/sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list", "0-1\n" if cpu < 2 else "2-3\n")
        write(tmp_path, f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", f"{cpu}\n")
    facts = CpuFacts.read(tmp_path, affinity=frozenset(range(4)), logical_cpus=4)
    assert (facts.physical_cores, facts.threads_per_core) == (2, 2)


@pytest.mark.parametrize("missing", ["/proc/self/mountinfo", "/proc/self/cgroup"])
def test_an_unreadable_cgroup_table_falls_back_to_no_quota_and_names_it(tmp_path: Path, missing: str) -> None:
    v1_machine(tmp_path, "/bench", {"/bench": (50000, 100000)})
    (tmp_path / missing.lstrip("/")).unlink()
    (tmp_path / missing.lstrip("/")).mkdir()  # a directory where the file should be: unreadable as text
    facts = CpuFacts.read(tmp_path, affinity=frozenset({0, 1}), logical_cpus=2)
    assert facts.quota is None and facts.usable_cores == 2
    assert facts.fallbacks[0].startswith("CPU quota not read (no /proc/self/mountinfo or /proc/self/cgroup)")
    assert facts.fallbacks[1].startswith("CPU topology not read")
    assert facts.machine_info()[K.CPU_FALLBACKS] == list(facts.fallbacks)


def test_a_machine_without_a_cgroup_cpu_controller_says_so(tmp_path: Path) -> None:
    write(tmp_path, "/proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n")
    write(tmp_path, "/proc/self/cgroup", "0::/\n")
    facts = CpuFacts.read(tmp_path, affinity=frozenset({0}), logical_cpus=1)
    assert facts.quota is None and facts.usable_cores == 1
    assert facts.fallbacks[0] == "CPU quota not read (no cgroup CPU controller mounted): none assumed"
    assert facts.physical_cores is None and facts.machine_info()[K.THREADS_PER_CORE] is None


def test_numa_nodes_and_the_governor_are_read_where_sysfs_has_them(tmp_path: Path) -> None:
    topology(tmp_path, {0: "0", 1: "1", 2: "2", 3: "3"})
    write(tmp_path, "/sys/devices/system/node/node0/cpulist", "0-1\n")
    write(tmp_path, "/sys/devices/system/node/node1/cpulist", "2-3\n")
    for cpu in range(4):
        write(tmp_path, f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", "performance\n")
    facts = CpuFacts.read(tmp_path, affinity=frozenset({0, 1}), logical_cpus=4)
    assert facts.numa_nodes == 1 and facts.governor == "performance"
    assert CpuFacts.read(tmp_path, affinity=frozenset({1, 2}), logical_cpus=4).numa_nodes == 2


def test_this_machine_reads_without_an_error() -> None:
    facts = CpuFacts.read()
    assert 1 <= facts.usable_cores <= facts.logical_cpus
    assert set(facts.machine_info()) <= set(K.FACTS)
