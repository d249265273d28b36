"""kubelet Topology Manager admission for one container's devices and CPUs (R10.2).

A pure reproduction of kubelet's ``pkg/kubelet/cm/topologymanager`` (scope ``container``) with the hint
providers that matter for GPU pods: the device manager (``devicemanager/topology_hints.go``
``generateDeviceTopologyHints``) and, when the container gets exclusive CPUs, the CPU manager's static
policy (``cpumanager/policy_static.go`` ``generateCPUTopologyHints``).

Hints. For every non-empty set of NUMA nodes (a bitmask), a provider offers the hint when enough free
devices (CPUs) lie on those nodes; a hint is *preferred* when its node count equals the fewest nodes that
could hold the request on an empty node (counted over all devices, free or not). A resource whose devices
carry no NUMA node at all gives no preference (nil hints: "don't care"); a request larger than what is
free gives an empty hint list (not preferred anywhere).

Merging (``policy.go``). Every combination of one hint per resource is AND-ed into one affinity
(``mergePermutation``; "don't care" is all nodes); it is preferred when every hint in it is preferred and
all their affinities are equal (GPUs preferring node 0 and CPUs preferring nodes 0+1 are not aligned). The best
merged hint is chosen by ``HintMerger.compare``: a preferred hint beats a non-preferred one; between
preferred hints the narrower affinity wins (fewer nodes, then the lower bitmask); between non-preferred
ones kubelet steers towards ``maxOfMinAffinityCounts``. No admissible combination gives the default
affinity (all nodes), not preferred.

Policies: ``none`` admits without a hint; ``best-effort`` admits with the best hint; ``restricted`` admits
only a preferred hint; ``single-numa-node`` first keeps only single-node (or don't-care) preferred hints,
and admits only a preferred result. A refusal is kubelet's ``TopologyAffinityError``: the pod fails with
reason ``TopologyAffinityError`` and message "Resources cannot be allocated with Topology locality"
(``topology_manager.go``; the pod status says "Pod was rejected: " before it), and is not retried.

Not modelled: the memory manager's hints, policy options (``prefer-closest-numa-nodes``,
``max-allowable-numa-nodes``), scope ``pod``, devices already assigned to a restarting container.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kubegpu.errors import InputError

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"
_Count = Callable[[frozenset[int]], int]  # a NUMA mask → how many devices (CPUs) it holds
MAX_NUMA_NODES = 8  # kubelet refuses to start the Topology Manager on more NUMA nodes (maxAllowableNUMANodes)


@dataclass(frozen=True, slots=True)
class Hint:
    """A ``TopologyHint``: NUMA affinity (``None`` = don't care) and whether it is preferred."""

    affinity: frozenset[int] | None
    preferred: bool


@dataclass(frozen=True, slots=True)
class CpuRequest:
    """Exclusive CPUs for a Guaranteed container with an integer CPU request (static CPU manager)."""

    count: int
    total_per_numa: Mapping[int, int]  # CPUs on each NUMA node
    free_per_numa: Mapping[int, int]  # CPUs not yet assigned exclusively


@dataclass(frozen=True, slots=True)
class NumaDecision:
    """The Topology Manager's verdict for one container."""

    policy: str
    admit: bool
    affinity: frozenset[int] | None  # the merged best hint's NUMA nodes; None under policy none / don't care
    preferred: bool
    hints: Mapping[str, tuple[Hint, ...] | None] = field(default_factory=dict)  # per resource (and "cpu")
    aligned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # free devices inside the affinity

    @property
    def reason(self) -> str:
        return "" if self.admit else TOPOLOGY_AFFINITY_ERROR

    @property
    def message(self) -> str:
        return "" if self.admit else TOPOLOGY_AFFINITY_MESSAGE

    def explain(self) -> str:
        """One line a person can act on."""
        nodes = "any" if self.affinity is None else ",".join(str(n) for n in sorted(self.affinity))
        if self.admit:
            return f"topology manager ({self.policy}) admits with NUMA affinity {nodes}" + (
                "" if self.preferred else " (not preferred: the request spans more NUMA nodes than it needs)"
            )
        return (
            f"{TOPOLOGY_AFFINITY_ERROR}: {TOPOLOGY_AFFINITY_MESSAGE} (policy {self.policy}; best NUMA "
            f"affinity {nodes} is not preferred)"
        )


def admit_container(
    policy: str,
    devices: Mapping[str, Mapping[str, int | None]],
    available: Mapping[str, Sequence[str]],
    requests: Mapping[str, int],
    numa_nodes: Sequence[int],
    cpus: CpuRequest | None = None,
) -> NumaDecision:
    """Topology Manager admission of one container.

    ``devices``: per resource, every device id the plugin advertises → its NUMA node (None when the plugin
    reports none). ``available``: per resource, the free ids. ``requests``: per resource, how many the
    container asks for. ``numa_nodes``: the node's NUMA node ids. ``cpus``: exclusive CPUs, if any.
    """
    if policy not in POLICIES:
        raise InputError(f"unknown topology manager policy {policy!r} (policies: {', '.join(POLICIES)})")
    nodes = sorted(set(numa_nodes))
    if len(nodes) > MAX_NUMA_NODES:
        raise InputError(
            f"{len(nodes)} NUMA nodes: kubelet's topology manager supports at most {MAX_NUMA_NODES}"
        )
    hints: dict[str, tuple[Hint, ...] | None] = {}
    for resource, n in sorted(requests.items()):
        if n > 0:
            hints[resource] = device_hints(devices.get(resource, {}), available.get(resource, ()), n, nodes)
    if cpus is not None and cpus.count > 0:
        hints["cpu"] = cpu_hints(cpus, nodes)
    if policy == "none" or not nodes:
        # no NUMA information at all: every provider answers "don't care", which every policy admits
        return NumaDecision(policy, True, None, True, hints, _aligned(devices, available, requests, None))
    providers = [_filtered(h) for h in hints.values()]
    if policy == "single-numa-node":
        providers = [
            tuple(h for h in hs if h.preferred and (h.affinity is None or len(h.affinity) == 1))
            for hs in providers
        ]
    best = _merge(providers, frozenset(nodes))
    affinity: frozenset[int] | None = best.affinity
    if policy == "single-numa-node" and affinity == frozenset(nodes):
        affinity = None  # kubelet reports the default affinity as "no affinity" under single-numa-node
    admit = policy == "best-effort" or best.preferred
    return NumaDecision(
        policy, admit, affinity, best.preferred, hints, _aligned(devices, available, requests, affinity)
    )


def device_hints(
    devices: Mapping[str, int | None], available: Sequence[str], request: int, nodes: Sequence[int]
) -> tuple[Hint, ...] | None:
    """The device manager's hints for one resource (``generateDeviceTopologyHints``)."""
    if not any(numa is not None for numa in devices.values()):
        return None  # no topology information: no preference
    free = [d for d in available if d in devices]
    if len(free) < request:
        return ()
    return _hints(
        nodes,
        request,
        lambda mask: sum(1 for numa in devices.values() if numa in mask),
        lambda mask: sum(1 for d in free if devices[d] in mask),
    )


def cpu_hints(cpus: CpuRequest, nodes: Sequence[int]) -> tuple[Hint, ...]:
    """The static CPU manager's hints (``generateCPUTopologyHints``)."""
    return _hints(
        nodes,
        cpus.count,
        lambda mask: sum(cpus.total_per_numa.get(n, 0) for n in mask),
        lambda mask: sum(cpus.free_per_numa.get(n, 0) for n in mask),
    )


def _masks(nodes: Sequence[int]) -> Iterator[frozenset[int]]:
    """Every non-empty set of NUMA nodes, smallest first (``bitmask.IterateBitMasks``)."""
    for k in range(1, len(nodes) + 1):
        for combo in itertools.combinations(nodes, k):
            yield frozenset(combo)


def _hints(nodes: Sequence[int], request: int, total: _Count, free: _Count) -> tuple[Hint, ...]:
    min_size = len(nodes)
    found: list[frozenset[int]] = []
    for mask in _masks(nodes):
        if total(mask) >= request and len(mask) < min_size:
            min_size = len(mask)
        if free(mask) >= request:
            found.append(mask)
    return tuple(Hint(m, len(m) == min_size) for m in found)


def _filtered(hints: tuple[Hint, ...] | None) -> tuple[Hint, ...]:
    """``filterProvidersHints``: nil → one preferred don't-care; empty → one non-preferred don't-care."""
    if hints is None:
        return (Hint(None, True),)
    if not hints:
        return (Hint(None, False),)
    return hints


def _merge(providers: Sequence[tuple[Hint, ...]], default: frozenset[int]) -> Hint:
    """``HintMerger.Merge``: the best AND of one hint per provider."""
    best_non_preferred = max(
        (min((len(h.affinity) for h in hs if h.affinity is not None), default=0) for hs in providers),
        default=0,
    )
    best: Hint | None = None
    for permutation in itertools.product(*providers):
        masks = [h.affinity for h in permutation if h.affinity is not None]
        affinity = default.intersection(*masks)
        # mergePermutation: preferred only if every hint is preferred and all their affinities are equal.
        preferred = all(h.preferred for h in permutation) and all(m == masks[0] for m in masks)
        candidate = Hint(affinity, preferred)
        best = _compare(best, candidate, best_non_preferred)
    return best if best is not None else Hint(default, False)


def _narrower(a: frozenset[int], b: frozenset[int]) -> bool:
    """``BitMask.IsNarrowerThan``: fewer nodes, then the smaller bitmask value."""
    if len(a) == len(b):
        return sum(1 << n for n in a) < sum(1 << n for n in b)
    return len(a) < len(b)


def _fitter(current: Hint, candidate: Hint) -> Hint:
    assert current.affinity is not None and candidate.affinity is not None
    if candidate.affinity == current.affinity or not _narrower(candidate.affinity, current.affinity):
        return current
    return candidate


def _compare(current: Hint | None, candidate: Hint, best_count: int) -> Hint | None:
    """``HintMerger.compare`` (policy.go), case by case."""
    assert candidate.affinity is not None
    if not candidate.affinity:
        return current
    if current is None:
        return candidate
    assert current.affinity is not None
    if current.preferred != candidate.preferred:
        return current if current.preferred else candidate
    if current.preferred:
        return _fitter(current, candidate)
    cur, cand = len(current.affinity), len(candidate.affinity)
    if cur > best_count:
        return _fitter(current, candidate)
    if cur == best_count:
        return _fitter(current, candidate) if cand == best_count else current
    if cand > best_count:
        return current
    if cand == best_count:
        return candidate
    if cand != cur:
        return candidate if cand > cur else current
    return _fitter(current, candidate)


def _aligned(
    devices: Mapping[str, Mapping[str, int | None]],
    available: Mapping[str, Sequence[str]],
    requests: Mapping[str, int],
    affinity: frozenset[int] | None,
) -> dict[str, tuple[str, ...]]:
    """Per resource, the free devices kubelet's device manager takes first: those inside the affinity."""
    out: dict[str, tuple[str, ...]] = {}
    for resource in requests:
        numa = devices.get(resource, {})
        free = tuple(d for d in available.get(resource, ()) if d in numa)
        out[resource] = free if affinity is None else tuple(d for d in free if numa[d] in affinity)
    return out
