"""Which pod and container a process belongs to, from its cgroup path (R13.4, beyond dcgm-exporter).

kubelet puts every container in a cgroup whose path names the pod UID and the container ID, in one of
the layouts its cgroup drivers and the runtimes produce (one line of ``/proc/<pid>/cgroup``):

* cgroupfs driver:  ``0::/kubepods/burstable/pod<uid>/<64-hex container id>`` (v1: ``<n>:<controllers>:`` + the same)
* systemd driver:   ``0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/
  cri-containerd-<id>.scope`` (``crio-<id>.scope`` for CRI-O, ``docker-<id>.scope`` for dockershim)

The pod UID is matched as a full UUID (dashes, or the underscores systemd needs), stricter than
dcgm-exporter's ``pod([a-f0-9_-]+)`` which only checks a length of 32; the container ID is the last path
element's 64 hex digits. Guaranteed-QoS pods have no QoS level in the path.

Must not: read anything but ``<proc root>/<pid>/cgroup``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?/"
)
_CONTAINER_ID = re.compile(r"^(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?$")


@dataclass(frozen=True, slots=True)
class CgroupOwner:
    """The pod (by UID) and container (by runtime ID) a process runs in."""

    pod_uid: str
    container_id: str  # "" when the process sits in the pod's cgroup but in no container's


def owner_of_cgroup(text: str) -> CgroupOwner | None:
    """The pod and container named by the contents of a ``/proc/<pid>/cgroup`` file; None outside pods."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        match = _POD_UID.search(path + "/")
        if match is None:
            continue
        container = _CONTAINER_ID.match(path.rsplit("/", 1)[-1])
        return CgroupOwner(match.group(1).replace("_", "-"), container.group(1) if container else "")
    return None


def owner_of_pid(proc_root: Path, pid: int) -> CgroupOwner | None:
    """The pod and container of a live process; None when it has exited or runs outside any pod."""
    try:
        text = (proc_root / str(pid) / "cgroup").read_text(encoding="utf-8")
    except OSError:
        # The process may have exited between NVML's list and this read; it then owns no memory either.
        return None
    return owner_of_cgroup(text)
