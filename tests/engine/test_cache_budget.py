"""The caches' budget follows the memory limit of the control group the process runs in,
wherever in the hierarchy that limit is set (tmp dirs laid out as /sys/fs/cgroup is)."""

from __future__ import annotations

import os
from pathlib import Path

from engine.cache_budget import B64_SHARE, CANVAS_SHARE, available_memory, cache_budgets

_MACHINE = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
_NO_LIMIT_V1 = "9223372036854771712"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_a_limit_on_a_nested_v2_group_counts(tmp_path: Path) -> None:
    """A Slurm job or a systemd service (cgroup v2): the root has no memory.max, the job's
    scope says "max", and the limit is on the group above it."""
    cgroups, membership = tmp_path / "cgroup", tmp_path / "self-cgroup"
    _write(membership, "0::/system.slice/job_7.scope")
    _write(cgroups / "system.slice" / "job_7.scope" / "memory.max", "max")
    _write(cgroups / "system.slice" / "memory.max", str(_MACHINE // 4))
    assert available_memory(cgroups, membership) == _MACHINE // 4


def test_a_limit_on_a_nested_v1_group_counts(tmp_path: Path) -> None:
    cgroups, membership = tmp_path / "cgroup", tmp_path / "self-cgroup"
    _write(membership, "5:cpu,cpuacct:/slurm/uid_1/job_2\n4:memory:/slurm/uid_1/job_2\n0::/")
    _write(cgroups / "memory" / "memory.limit_in_bytes", _NO_LIMIT_V1)
    _write(cgroups / "memory" / "slurm" / "memory.limit_in_bytes", _NO_LIMIT_V1)
    _write(cgroups / "memory" / "slurm" / "uid_1" / "job_2" / "memory.limit_in_bytes",
           str(_MACHINE // 8))
    _write(cgroups / "cpu,cpuacct" / "slurm" / "memory.limit_in_bytes", str(1 << 20))  # not memory's
    assert available_memory(cgroups, membership) == _MACHINE // 8


def test_a_container_sees_its_limit_at_the_root_whatever_its_membership_says(
        tmp_path: Path) -> None:
    """Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names the container's
    group on the host, which this mount does not hold; its root is the container's group."""
    cgroups, membership = tmp_path / "cgroup", tmp_path / "self-cgroup"
    _write(membership, "4:memory:/docker/0123abcd\n0::/../../elsewhere")
    _write(cgroups / "memory" / "memory.limit_in_bytes", str(_MACHINE // 2))
    assert available_memory(cgroups, membership) == _MACHINE // 2


def test_no_limit_unreadable_files_and_no_membership_leave_the_machine(tmp_path: Path) -> None:
    cgroups, membership = tmp_path / "cgroup", tmp_path / "self-cgroup"
    assert available_memory(cgroups, membership) == _MACHINE  # nothing there at all
    (cgroups / "memory.max").mkdir(parents=True)  # cannot be read as a file
    _write(cgroups / "memory" / "memory.limit_in_bytes", str(_MACHINE * 2))  # above the machine
    _write(membership, "0::/a\n4:memory:/b")
    _write(cgroups / "a" / "memory.max", "max")
    _write(cgroups / "memory" / "b" / "memory.limit_in_bytes", "0")  # not a limit
    assert available_memory(cgroups, membership) == _MACHINE


def test_the_floor_never_takes_a_small_share_past_half_of_itself() -> None:
    """8 workers in a 4 GiB container have 512 MiB each: 256 MiB of canvases and 256 MiB of
    base64 strings apiece would let their caches alone fill the container."""
    memory = available_memory()
    for share in (512 << 20, 100 << 20, 1 << 20):
        canvases, b64 = cache_budgets(share / memory)
        assert canvases + b64 <= share // 2 + 2, share
        assert canvases >= int(share * CANVAS_SHARE) - 1 and b64 >= int(share * B64_SHARE) - 1
