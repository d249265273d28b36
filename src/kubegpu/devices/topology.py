"""GPU-to-GPU link model and its scores: NVLink first, then PCIe distance, then NUMA (R9.3, R10.2).

Scores use NVIDIA go-gpuallocator's weights (``besteffort_policy.go`` ``calculateGPUPairScore``) so that
kubegpu's choices can be compared with the NVIDIA device plugin's on the same scale: 100 per NVLink
between the two GPUs, plus one PCIe term by common ancestor: same board 60, single switch (PIX) 50,
multiple switches (PXB) 40, host bridge (PHB) 30, same NUMA node (NODE) 20, across sockets (SYS) 10.

Worked example, DGX-1 (8×V100, hybrid cube-mesh): GPU0–GPU3 have two NVLinks and sit on the same socket
behind different host bridges (NODE): 2·100 + 20 = 220. GPU0–GPU4 have one NVLink across sockets (SYS):
100 + 10 = 110. GPU0–GPU5 have no NVLink (SYS): 10.

NVSwitch: go-gpuallocator counts only links whose far end is the other GPU and leaves NVSwitch as a TODO,
so on an HGX H100 every pair scores its PCIe term alone. kubegpu counts a pair of GPUs that both have
active links to NVSwitches as joined by ``min(links of a, links of b)`` NVLinks, because every such pair
talks through the switch fabric at that width. Where all GPUs are on the fabric this adds the same amount
to every pair and changes no choice; it matters only when a GPU has lost links.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubegpu.devices.inventory import NodeInventory, NvLinkRemote, PeerLevel
from kubegpu.errors import InputError

NVLINK_WEIGHT = 100


class P2PLevel(enum.IntEnum):
    """PCIe link class between two GPUs, valued by go-gpuallocator's score for it."""

    CROSS_CPU = 10
    SAME_CPU = 20
    HOST_BRIDGE = 30
    MULTI_SWITCH = 40
    SINGLE_SWITCH = 50
    SAME_BOARD = 60

    @classmethod
    def of(cls, level: PeerLevel) -> P2PLevel:
        """go-gpuallocator ``GetP2PLink``: NVML common-ancestor level → link class."""
        return _FROM_PEER_LEVEL[level]


_FROM_PEER_LEVEL = {
    PeerLevel.INTERNAL: P2PLevel.SAME_BOARD,
    PeerLevel.SINGLE: P2PLevel.SINGLE_SWITCH,
    PeerLevel.MULTIPLE: P2PLevel.MULTI_SWITCH,
    PeerLevel.HOSTBRIDGE: P2PLevel.HOST_BRIDGE,
    PeerLevel.NODE: P2PLevel.SAME_CPU,
    PeerLevel.SYSTEM: P2PLevel.CROSS_CPU,
}


@dataclass(frozen=True, slots=True)
class Link:
    """How two GPUs are connected."""

    nvlinks: int = 0
    pcie: P2PLevel | None = None  # None: the reading recorded no PCIe distance for this pair
    via_nvswitch: bool = False

    @property
    def score(self) -> int:
        return self.nvlinks * NVLINK_WEIGHT + (int(self.pcie) if self.pcie is not None else 0)


@dataclass(frozen=True, slots=True)
class Topology:
    """Links between the GPUs of one node, keyed by device id (GPU UUID)."""

    devices: tuple[str, ...]  # in NVML index order
    numa: Mapping[str, int | None]
    links: Mapping[tuple[str, str], Link]  # key (a, b) with a < b in index order

    def link(self, a: str, b: str) -> Link:
        """The link between two distinct GPUs (``Link()`` when nothing is known)."""
        ia, ib = self._index(a), self._index(b)
        key = (a, b) if ia < ib else (b, a)
        return self.links.get(key, Link())

    def pair_score(self, a: str, b: str) -> int:
        return 0 if a == b else self.link(a, b).score

    def set_score(self, ids: Iterable[str]) -> int:
        """Sum of pair scores over every pair of the set (go-gpuallocator ``calculateGPUSetScore``)."""
        ordered = list(ids)
        return sum(self.pair_score(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :])

    def _index(self, device: str) -> int:
        try:
            return self.devices.index(device)
        except ValueError:
            raise KeyError(f"device {device} is not in this topology") from None


def topology_from_inventory(inv: NodeInventory) -> Topology:
    """Build the link model of a node from its inventory; asymmetric NVLink counts raise ``InputError``."""
    if not any(d.nvlinks or d.peers for d in inv.devices):  # nothing recorded (synthesised devices): no links
        return Topology(
            devices=tuple(d.uuid for d in inv.devices),
            numa={d.uuid: d.numa_node for d in inv.devices},
            links={},
        )
    by_bus = {d.pci_bus_id.lower(): d for d in inv.devices}
    by_index = {d.index: d for d in inv.devices}
    direct: dict[tuple[int, int], int] = {}
    switch_links: dict[int, int] = {}
    for d in inv.devices:
        for nvlink in d.nvlinks:
            if nvlink.remote_type is NvLinkRemote.SWITCH:
                switch_links[d.index] = switch_links.get(d.index, 0) + 1
            elif nvlink.remote_type is NvLinkRemote.GPU:
                remote = by_bus.get(nvlink.remote_pci_bus_id.lower())
                if remote is not None:
                    direct[(d.index, remote.index)] = direct.get((d.index, remote.index), 0) + 1
    pcie: dict[tuple[int, int], PeerLevel] = {}
    for d in inv.devices:
        for peer_index, peer_level in d.peers:
            if peer_index in by_index and peer_index != d.index:
                pcie[(d.index, peer_index)] = peer_level
    links: dict[tuple[str, str], Link] = {}
    for a in inv.devices:
        for b in inv.devices:
            if a.index >= b.index:
                continue
            n_ab, n_ba = direct.get((a.index, b.index), 0), direct.get((b.index, a.index), 0)
            if n_ab != n_ba:
                # go-gpuallocator panics here; a reading like this is broken input, not a program error.
                raise InputError(
                    f"GPU {a.index} records {n_ab} NVLinks to GPU {b.index} but GPU {b.index} records {n_ba}",
                    source=inv.source,
                    field="nvlink",
                )
            via_switch = a.index in switch_links and b.index in switch_links
            n = n_ab + (min(switch_links[a.index], switch_links[b.index]) if via_switch else 0)
            level = pcie.get((a.index, b.index), pcie.get((b.index, a.index)))
            link = Link(
                nvlinks=n, pcie=P2PLevel.of(level) if level is not None else None, via_nvswitch=via_switch
            )
            if link != Link():
                links[(a.uuid, b.uuid)] = link
    return Topology(
        devices=tuple(d.uuid for d in inv.devices),
        numa={d.uuid: d.numa_node for d in inv.devices},
        links=links,
    )
