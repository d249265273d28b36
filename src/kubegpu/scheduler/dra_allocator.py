"""Structured-parameters device allocation, as ``k8s.io/dynamic-resource-allocation/structured`` decides.

For one node: gather the pools whose slices reach it (``nodeName``, ``allNodes``, a matching
``nodeSelector``), keep per pool only the slices of its newest generation (a pool with fewer slices than
``resourceSliceCount`` is incomplete), then satisfy every request of every claim together
(all-or-nothing) by depth-first search with backtracking: a device is selectable when every selector of
its class and then of the request evaluates true; it is free when no allocated claim holds it (admin
access neither takes nor needs a free device). ``ExactCount`` takes ``count`` devices, ``All`` takes
every selectable device and fails when one is in use or a pool is incomplete; ``firstAvailable`` tries
its subrequests in order. Pools, slices and devices are tried in name order (upstream sorts pools by ID).

Errors upstream turns into a Filter error (a broken selector, an incomplete pool under ``All``) raise
``AllocationError`` with upstream's text; a node where the claims do not fit returns None.
A claim's ``matchAttribute`` constraints are checked as each device is taken (upstream
``matchAttributeConstraint``: the first device of the constrained requests fixes the value, a device
without the attribute never fits, values compare by type and value); under ``All`` a device that breaks
one is upstream's error ``cannot add device … because a claim constraint would not be satisfied``.
Not modelled: ``distinctAttribute`` (refused at parse time), partitionable devices, consumable capacity,
binding conditions. Device taints apply only with ``device_taints`` (the DRADeviceTaints gate,
alpha and off in 1.34).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubegpu.model.affinity import term_matches
from kubegpu.model.dra import (
    ALLOCATION_RESULTS_MAX,
    AllocatedDevice,
    AttrValue,
    Device,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from kubegpu.scheduler.dra_cel import CelError, compiled

DeviceId = tuple[str, str, str]  # driver, pool, device
# The search visits at most this many candidate devices per node before it gives up (upstream bounds the
# search by the Filter timeout instead; the answer is then "timed out trying to allocate devices").
SEARCH_LIMIT = 100_000
TIMED_OUT = "timed out trying to allocate devices"


class AllocationError(Exception):
    """A claim or class that cannot be evaluated: kube-scheduler aborts the cycle with this text."""


@dataclass(frozen=True, slots=True)
class Pool:
    driver: str
    name: str
    slices: tuple[ResourceSlice, ...]
    incomplete: bool

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(frozen=True, slots=True)
class Candidate:
    device_id: DeviceId
    device: Device
    slice: ResourceSlice


class SliceIndex:
    """Slices by node, built once per snapshot: node-local slices by name, the rest scanned per node."""

    def __init__(self, slices: Iterable[ResourceSlice]) -> None:
        self.by_node: dict[str, list[ResourceSlice]] = {}
        self.network: list[ResourceSlice] = []
        for s in sorted(slices, key=lambda s: s.name):
            if s.node_name:
                self.by_node.setdefault(s.node_name, []).append(s)
            else:
                self.network.append(s)

    def pools(self, node: str, labels: Mapping[str, str]) -> list[Pool]:
        """Upstream ``GatherPools``: the newest generation of each pool that reaches ``node``."""
        newest: dict[tuple[str, str], list[ResourceSlice]] = {}
        reach = list(self.by_node.get(node, ()))
        for s in self.network:
            if s.all_nodes or (
                s.node_selector and any(term_matches(t, labels, node) for t in s.node_selector)
            ):
                reach.append(s)
        for s in reach:
            key = (s.driver, s.pool)
            have = newest.get(key)
            if have is None or s.generation > have[0].generation:
                newest[key] = [s]
            elif s.generation == have[0].generation:
                have.append(s)
        return [Pool(d, p, tuple(ss), len(ss) != ss[0].slice_count) for (d, p), ss in sorted(newest.items())]


class _Match:
    """One ``matchAttribute`` constraint while a claim is being allocated (upstream keeps the first value
    and a count, not the devices)."""

    __slots__ = ("attribute", "count", "requests", "value")

    def __init__(self, c: DeviceConstraint) -> None:
        self.requests = frozenset(c.requests)
        self.attribute = c.match_attribute
        self.value: tuple[type, AttrValue] | None = None
        self.count = 0

    def applies(self, sub: DeviceSubRequest) -> bool:
        """Every request when none is named; else the request (``sub.name``'s parent) or the subrequest."""
        if not self.requests:
            return True
        return sub.name in self.requests or sub.name.partition("/")[0] in self.requests

    def add(self, device: Device) -> bool:
        got = device.attributes.get(self.attribute)
        if got is None:
            return False
        typed = (type(got), got)  # bool is not int here: an int 1 never matches a bool true
        if self.count == 0:
            self.value = typed
        elif typed != self.value:
            return False
        self.count += 1
        return True

    def remove(self) -> None:
        self.count -= 1


def _alternatives(req: DeviceRequest) -> tuple[DeviceSubRequest, ...]:
    return (req.exactly,) if req.exactly is not None else req.first_available


@dataclass(frozen=True, slots=True)
class Result:
    """The devices chosen for one claim on one node."""

    claim: ResourceClaim
    devices: tuple[AllocatedDevice, ...]


class Allocator:
    """Allocates ``claims`` (the pod's unallocated ones) on one node at a time."""

    def __init__(
        self,
        claims: list[ResourceClaim],
        classes: Mapping[str, DeviceClass],
        index: SliceIndex,
        in_use: set[DeviceId],
        device_taints: bool = False,
    ) -> None:
        self.claims = claims
        self.classes = classes
        self.index = index
        self.in_use = in_use
        self.device_taints = device_taints
        self._evaluated: dict[tuple[str, str, str], bool | CelError] = {}  # (slice, device, expression)
        # (claim index, request index) in order, with the request's admin-access flag
        self.slots = [
            (ci, req.name, _alternatives(req), req.admin_access)
            for ci, c in enumerate(claims)
            for req in c.requests
        ]
        # structured allocator: the fewest devices a claim can get (each request's cheapest alternative,
        # All counting as none up front) may not exceed AllocationResultsMaxSize
        self.too_many = ""
        for c in claims:
            least = sum(
                min((a.count if a.allocation_mode == "ExactCount" else 0) for a in _alternatives(req))
                for req in c.requests
            )
            if least > ALLOCATION_RESULTS_MAX and not self.too_many:
                self.too_many = (
                    f"claim {c.key}: number of requested devices {least} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX}"
                )

    def _cel(self, expr: str, s: ResourceSlice, device: Device) -> bool:
        """One selector on one device, once per allocator: a slice that reaches many nodes (``allNodes``, a
        node selector) is visited once per node, its devices' answers do not change between them."""
        key = (s.name, device.name, expr)
        got = self._evaluated.get(key)
        if got is None:
            try:
                got = compiled(expr).matches(s.driver, device)
            except CelError as exc:
                got = exc
            self._evaluated[key] = got
        if isinstance(got, CelError):
            raise got
        return got

    def selectable(self, ci: int, sub: DeviceSubRequest, s: ResourceSlice, device: Device) -> bool:
        """Class selectors, then request selectors (upstream ``isSelectable``); CEL errors abort."""
        cls = self.classes.get(sub.device_class_name)
        if cls is None:  # PreFilter reports missing classes first; here it only guards
            raise AllocationError(f"request {sub.name}: device class {sub.device_class_name} does not exist")
        for i, expr in enumerate(cls.selectors):
            try:
                if not self._cel(expr, s, device):
                    return False
            except CelError as exc:
                raise AllocationError(f"class {cls.name}: selector #{i}: CEL runtime error: {exc}") from None
        for i, expr in enumerate(sub.selectors):
            try:
                if not self._cel(expr, s, device):
                    return False
            except CelError as exc:
                raise AllocationError(
                    f"claim {self.claims[ci].key}: selector #{i}: CEL runtime error: {exc}"
                ) from None
        if self.device_taints:
            for t in device.taints:
                if t.effect in ("NoSchedule", "NoExecute") and not any(
                    tol.tolerates(t) for tol in sub.tolerations
                ):
                    return False
        return True

    def candidates(self, ci: int, sub: DeviceSubRequest, pools: list[Pool]) -> list[Candidate]:
        if sub.allocation_mode == "All":
            for p in pools:
                if p.incomplete:
                    raise AllocationError(
                        f"claim {self.claims[ci].key}, request {sub.name}: asks for all devices, but resource "
                        f"pool {p.pool_id} is currently being updated"
                    )
        out = []
        for p in pools:
            for s in p.slices:
                for d in s.devices:
                    if self.selectable(ci, sub, s, d):
                        out.append(Candidate((s.driver, s.pool, d.name), d, s))
        return out

    def allocate(self, node: str, labels: Mapping[str, str]) -> list[Result] | None:
        """Every claim's devices on ``node``, or None when they do not all fit."""
        if self.too_many:
            raise AllocationError(self.too_many)
        pools = self.index.pools(node, labels)
        matches = [[_Match(m) for m in c.constraints] for c in self.claims]
        chosen: list[list[AllocatedDevice]] = [[] for _ in self.claims]
        taken: set[DeviceId] = set()
        cache: dict[tuple[int, str], list[Candidate]] = {}
        budget = [SEARCH_LIMIT]

        def free(c: Candidate, admin: bool) -> bool:
            return admin or (c.device_id not in self.in_use and c.device_id not in taken)

        def place(k: int) -> bool:
            if k == len(self.slots):
                return True
            ci, _, alts, admin = self.slots[k]
            for sub in alts:
                key = (k, sub.name)
                cands = cache.get(key)
                if cands is None:
                    cands = cache[key] = self.candidates(ci, sub, pools)
                if sub.allocation_mode == "All":
                    if not cands:
                        continue
                    if pick_all(k, ci, sub, cands, admin):
                        return True
                    continue
                if pick(k, ci, sub, cands, admin, 0, sub.count):
                    return True
            return False

        def take(ci: int, sub: DeviceSubRequest, c: Candidate, admin: bool) -> bool:
            """Take ``c`` unless one of the claim's constraints refuses it (then nothing changes)."""
            applied: list[_Match] = []
            for m in matches[ci]:
                if not m.applies(sub):
                    continue
                if not m.add(c.device):
                    for a in applied:
                        a.remove()
                    return False
                applied.append(m)
            taken.add(c.device_id)
            chosen[ci].append(AllocatedDevice(sub.name, *c.device_id, admin_access=admin))
            return True

        def drop(ci: int, sub: DeviceSubRequest, c: Candidate) -> None:
            for m in matches[ci]:
                if m.applies(sub):
                    m.remove()
            taken.discard(c.device_id)
            chosen[ci].pop()

        def pick_all(k: int, ci: int, sub: DeviceSubRequest, cands: list[Candidate], admin: bool) -> bool:
            for i, c in enumerate(cands):
                if not free(c, admin):  # in device order, as upstream: in use before the constraints
                    for d in reversed(cands[:i]):
                        drop(ci, sub, d)
                    return False
                if not take(ci, sub, c, admin):
                    # upstream allocateDevice(must=true): a constraint that excludes one of "all" devices
                    raise AllocationError(
                        f"claim {self.claims[ci].key}, request {sub.name.rpartition('/')[2]}: cannot add "
                        f"device {'/'.join(c.device_id)} because a claim constraint would not be satisfied"
                    )
            if place(k + 1):
                return True
            for c in reversed(cands):
                drop(ci, sub, c)
            return False

        def pick(
            k: int, ci: int, sub: DeviceSubRequest, cands: list[Candidate], admin: bool, start: int, need: int
        ) -> bool:
            if need == 0:
                return place(k + 1)
            for i in range(start, len(cands) - need + 1):
                budget[0] -= 1
                if budget[0] < 0:
                    raise AllocationError(TIMED_OUT)
                c = cands[i]
                if not free(c, admin) or c.device_id in taken or not take(ci, sub, c, admin):
                    continue
                if pick(k, ci, sub, cands, admin, i + 1, need - 1):
                    return True
                drop(ci, sub, c)
            return False

        if not place(0):
            return None
        return [Result(c, tuple(devs)) for c, devs in zip(self.claims, chosen, strict=True)]
