"""Which devices to give a container: the pure choice behind ``GetPreferredAllocation`` (R3.2, R9.1, R9.3).

Kubelet asks the device plugin for ``size`` devices out of ``available`` that must contain
``must_include``; the scheduler's device model asks the same question when it places a multi-GPU pod.
Both call these functions, so the node agent and the scheduler can never disagree on the choice.

``preferred_allocation`` (whole GPUs) maximises the set score of ``topology`` (NVLink, then PCIe, see
``kubegpu.devices.topology``) over every set of the requested size, which is exact for the node sizes
that exist (at most 16 GPUs: C(16, 8) = 12 870 sets). Ties are broken, in order, by the fewest NUMA nodes
the set spans (R10.2), by the best-connected *remaining* devices (so the next request still finds a good
set: the fragmentation concern of go-gpuallocator's partition search), then by the lowest indexes.
NVIDIA go-gpuallocator's best-effort policy instead picks the best set inside the best *partition* of the
available GPUs, which can return a set that scores lower than the best one; maximising the set score
directly is never worse on its own scale.

``distributed_allocation`` (time-sliced replicas ``<uuid>::<n>``) mirrors the NVIDIA device plugin's
distributed policy: take replicas one at a time from the GPU with the fewest replicas in use, so that
shared pods spread across GPUs instead of piling onto one.

The whole-GPU choice depends only on the topology's *shape* (pair scores and NUMA nodes by index) and on
which indexes are offered, so it is memoised on exactly that: a 5,000-node fleet of one server type asks
the same few hundred questions, and replaying the devices of 20,000 running pods costs a dict lookup each.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Mapping, Sequence

from kubegpu.devices.sharing import strip_annotation
from kubegpu.devices.topology import Topology


def preferred_allocation(
    available: Sequence[str], must_include: Sequence[str], size: int, topology: Topology
) -> list[str]:
    """The best ``size`` whole GPUs out of ``available`` ∪ ``must_include``, in index order.

    Returns ``[]`` where go-gpuallocator does (``size <= 0``, fewer devices than ``size``, more
    ``must_include`` than ``size``). Raises ``KeyError`` for an id the topology does not know.
    """
    must = _unique(must_include)
    pool = _unique([*must, *available])
    if size <= 0 or len(pool) < size or len(must) > size:
        return []
    shape_id, order = _shape(topology)
    for d in pool:
        if d not in order:
            raise KeyError(f"device {d} is not in this topology")
    pool.sort(key=order.__getitem__)
    key = (shape_id, tuple(order[d] for d in pool), tuple(sorted(order[d] for d in must)), size)
    best = _CHOICES.get(key)
    if best is None:
        if len(_CHOICES) >= _MEMO_LIMIT:
            _CHOICES.clear()
        best = _CHOICES[key] = _best_set(pool, must, size, topology)
    return [pool[i] for i in best]


# topology (by identity, kept alive beside its entry) → (shape id, device → index); shape → shape id;
# (shape id, offered indexes, required indexes, size) → chosen positions in the offered pool
_TOPOLOGIES: dict[int, tuple[Topology, int, dict[str, int]]] = {}
_SHAPE_IDS: dict[tuple[tuple[tuple[int, int, int], ...], tuple[int | None, ...]], int] = {}
_CHOICES: dict[tuple[int, tuple[int, ...], tuple[int, ...], int], tuple[int, ...]] = {}
_MEMO_LIMIT = 65536  # bounded: a hostile snapshot of distinct topologies cannot grow these without end


def _shape(topology: Topology) -> tuple[int, dict[str, int]]:
    hit = _TOPOLOGIES.get(id(topology))
    if hit is not None and hit[0] is topology:
        return hit[1], hit[2]
    devs = topology.devices
    order = {d: i for i, d in enumerate(devs)}
    # the pair scores exactly as Topology.link finds them (key in index order; absent pairs score 0)
    links = sorted(
        (order[a], order[b], link.score)
        for (a, b), link in topology.links.items()
        if a in order and b in order and order[a] < order[b]
    )
    shape = (tuple(links), tuple(topology.numa.get(d) for d in devs))
    if len(_SHAPE_IDS) >= _MEMO_LIMIT or len(_TOPOLOGIES) >= _MEMO_LIMIT:
        _SHAPE_IDS.clear()
        _TOPOLOGIES.clear()
        _CHOICES.clear()
    shape_id = _SHAPE_IDS.setdefault(shape, len(_SHAPE_IDS))
    _TOPOLOGIES[id(topology)] = (topology, shape_id, order)
    return shape_id, order


def _best_set(pool: list[str], must: list[str], size: int, topology: Topology) -> tuple[int, ...]:
    """Positions in ``pool`` (index-ordered) of the best set: the search behind ``preferred_allocation``."""
    n = len(pool)
    weight = [[topology.pair_score(a, b) for b in pool] for a in pool]
    numa = [topology.numa.get(d) for d in pool]
    must_idx = [pool.index(d) for d in must]
    free_idx = [i for i in range(n) if pool[i] not in must]

    best_key: tuple[int, int, int] | None = None
    best: tuple[int, ...] = ()
    for combo in itertools.combinations(free_idx, size - len(must_idx)):
        chosen = sorted([*must_idx, *combo])
        rest = [i for i in range(n) if i not in chosen]
        key = (
            _pairs_score(weight, chosen),
            -len({numa[i] for i in chosen if numa[i] is not None}),
            _pairs_score(weight, rest),
        )
        # Strictly greater: combinations come in lexicographic index order, so the first best set wins.
        if best_key is None or key > best_key:
            best_key, best = key, tuple(chosen)
    return best


def distributed_allocation(
    available: Sequence[str], must_include: Sequence[str], size: int, replicas: Mapping[str, int]
) -> list[str]:
    """``size`` replica ids, spreading over GPUs with the fewest replicas in use.

    ``replicas`` maps a GPU id to the number of replicas advertised for it; "in use" is that number
    minus the replicas of the GPU still in ``available``. Ties go to the earlier id in ``available``
    (upstream's unstable ``sort.Slice`` leaves them unspecified). Returns ``must_include`` followed by
    the chosen ids, or ``[]`` when there are not enough.
    """
    must = _unique(must_include)
    candidates = [d for d in _unique(available) if d not in must]
    needed = size - len(must)
    if size <= 0 or needed < 0 or needed > len(candidates):
        return []
    # Each step takes the candidate whose GPU has the fewest replicas in use, the earliest on a tie: per GPU
    # that is its earliest remaining candidate, so a heap of (in use, position, GPU) gives the same picks in
    # O(n + size log GPUs) rather than one scan of every candidate per pick (16384 replicas x 8 GPUs).
    queues: dict[str, deque[tuple[int, str]]] = {}
    for pos, d in enumerate(candidates):
        queues.setdefault(strip_annotation(d), deque()).append((pos, d))
    heap = [(replicas.get(gpu, 0) - len(q), q[0][0], gpu) for gpu, q in queues.items()]
    heapq.heapify(heap)
    chosen: list[str] = []
    for _ in range(needed):
        used, _pos, gpu = heapq.heappop(heap)
        queue = queues[gpu]
        chosen.append(queue.popleft()[1])
        if queue:
            heapq.heappush(heap, (used + 1, queue[0][0], gpu))
    return [*must, *chosen]


def _pairs_score(weight: list[list[int]], idx: Sequence[int]) -> int:
    return sum(weight[a][b] for k, a in enumerate(idx) for b in idx[k + 1 :])


def _unique(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))
