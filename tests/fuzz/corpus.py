"""The seeded mutation corpus: valid inputs of every kind kubegpu reads, and what is done to them.

Seeds are real objects: the Node, Pod, ResourceQuota, LimitRange, PriorityClass, PodDisruptionBudget,
Namespace, GpuCohort, GpuQueue and PodGroup of the embedded demo cluster (``kubectl get -o yaml`` output
of the demo's nodes, ``src/kubegpu/demo/cluster.yaml``), the DRA objects NVIDIA's DRA driver publishes
(``tests/dra/objects.py``, from kubernetes-sigs/dra-driver-nvidia-gpu#719), the NVIDIA device plugin
config of its README (NVIDIA/k8s-device-plugin, "Shared Access to GPUs with CUDA Time-Slicing"),
mig-parted's ``examples/config.yaml`` shape (NVIDIA/mig-parted), the recorded H200 NVML reading and
``nvidia-smi -q -x`` output (``shared/fixtures/nodes/h200-1gpu``), the first rows of Alibaba's openb
trace (``shared/data/alibaba-gpu-2023/csv``), a SimWorkload of docs/simulator.md, a Prometheus
``/api/v1/query`` vector (prometheus/docs/querying/api.md) and an AdmissionReview v1 as the API server
sends it (kubernetes/api admission/v1/types.go).

Every case is ``Case(kind, name, files, commands, invalid)``: ``invalid`` is True when the API server
(or the tool that owns the format) refuses the input, so kubegpu must say so (an ``error:`` line naming
the file) and ``--strict`` must exit 2; otherwise the input may be accepted, and only the general
invariants apply (exit 0, 1 or 2; no traceback; no hang; bounded memory).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).parents[2]
SHARED = REPO.parent / "shared"
DEMO = REPO / "src" / "kubegpu" / "demo" / "cluster.yaml"
H200 = SHARED / "fixtures" / "nodes" / "h200-1gpu"
OPENB = SHARED / "data" / "alibaba-gpu-2023" / "csv"
SEED = 22

# --- values the API server refuses in a quantity field (resource.ParseQuantity, ValidateResourceQuantityValue)
# Amounts beyond int64 that ParseQuantity accepts (apimachinery v0.37.2 quantity.go: inf.Dec, binary suffixes
# capped at MaxInt64; kube-apiserver 1.37.2 stores 1E / 8Ei / cpu 2^63-1, tests/fixtures/quantity): kubegpu
# reads them saturated, with a note, never computing 10 ** 999999999 (no hang, no traceback)
HUGE_QUANTITIES: tuple[object, ...] = (
    "1e999999999",
    "9223372036854775807Ki",
    "1e100",
    "100000000000000000000Ki",
)
BAD_QUANTITIES: tuple[object, ...] = (
    "-1",  # ValidateNonnegativeQuantity: "must be greater than or equal to 0"
    "lots",  # ErrFormatWrong: "quantities must match the regular expression"
    "NaN",
    "∞",
    "٣",  # an Arabic-Indic digit: \d in Go's regexp is ASCII only
    "１",  # a fullwidth digit
    "1.5.5",
    "",
    "0x10",
    "1e",
    "--1",
    "1 Gi",
)
# fractional amounts are refused only for extended resources (IsIntegerResourceName)
FRACTIONAL = ("0.5", "1500m", "1e-999999999")

WRONG_TYPES: tuple[object, ...] = ([1, 2], {"a": 1}, 7, 1.5, True, "lots", None)


@dataclass(frozen=True)
class Case:
    kind: str
    name: str
    files: dict[str, bytes]  # relative path -> content
    commands: tuple[tuple[str, ...], ...]  # argument lists; {dir} is the case directory
    invalid: bool
    note: str = ""


@dataclass
class Seeds:
    demo: list[dict[str, Any]] = field(default_factory=list)

    def first(self, kind: str) -> dict[str, Any]:
        return copy.deepcopy(next(o for o in self.demo if o["kind"] == kind))


def demo_objects() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load(DEMO.read_text(encoding="utf-8"))["items"]
    return items


# --- the context a snapshot object is read in: one GPU node and one pending GPU pod of the demo ---------
CONTEXT_NODE = "gpu-train-01"
CONTEXT_POD = ("ml-train", "nccl-allreduce-2gpu")


def context(demo: list[dict[str, Any]], without: str) -> list[dict[str, Any]]:
    out = []
    if without != "Node":
        out.append(copy.deepcopy(next(o for o in demo if o["kind"] == "Node")))
    if without != "Pod":
        ns, name = CONTEXT_POD
        out.append(
            copy.deepcopy(
                next(
                    o
                    for o in demo
                    if o["kind"] == "Pod"
                    and o["metadata"]["name"] == name
                    and o["metadata"]["namespace"] == ns
                )
            )
        )
    return out


def snapshot_commands(explain: str = "ml-train/nccl-allreduce-2gpu") -> tuple[tuple[str, ...], ...]:
    snap = ("--snapshot", "{dir}/snap.yaml", "--strict")
    return (
        ("diagnose", *snap),
        ("explain", explain, *snap, "--profile", "kubegpu"),
        ("schedule", *snap),
        ("quota", *snap),
        ("queues", *snap),
        ("inspect", *snap, "-o", "json"),
        ("report", *snap, "-O", "{dir}/report.html"),
        ("plan", "label", CONTEXT_NODE, "team=x", *snap),
        ("simulate", *snap, "--workload", "{dir}/snap.yaml"),
    )


# --- leaves of an object ------------------------------------------------------------------------------
Path_ = tuple[str | int, ...]


def leaves(obj: Any, at: Path_ = ()) -> Iterator[Path_]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, (*at, i))
    else:
        yield at


def put(obj: Any, at: Path_, value: Any) -> Any:
    out = copy.deepcopy(obj)
    cur = out
    for k in at[:-1]:
        cur = cur[k]
    cur[at[-1]] = value
    return out


def drop(obj: Any, at: Path_) -> Any:
    out = copy.deepcopy(obj)
    cur = out
    for k in at[:-1]:
        cur = cur[k]
    del cur[at[-1]]
    return out


QUANTITY_PARENTS = {"requests", "limits", "capacity", "allocatable", "hard", "used", "overhead", "default",
                    "defaultRequest", "max", "min", "nominalQuota", "borrowingLimit"}  # fmt: skip


def quantity_paths(obj: Any) -> list[Path_]:
    return [p for p in leaves(obj) if len(p) >= 2 and p[-2] in QUANTITY_PARENTS and isinstance(p[-1], str)]


def is_extended(resource: str) -> bool:
    """``IsExtendedResourceName`` (v1helper): a domain outside kubernetes.io, and not quota's ``requests.``
    form (so ``requests.nvidia.com/gpu: 0.5`` in a quota passes the API server's integer check)."""
    return (
        "/" in resource
        and not resource.startswith("requests.")
        and not resource.split("/")[0].endswith("kubernetes.io")
    )


def dumps(objs: list[dict[str, Any]], rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}).encode()
    return yaml.safe_dump_all(objs, sort_keys=False, allow_unicode=True).encode()


# --- text-level mutations of any file -----------------------------------------------------------------
def deep_json(depth: int = 100_000) -> bytes:
    return b'{"apiVersion": "v1", "kind": "List", "items": ' + b"[" * depth + b"]" * depth + b"}"


def deep_yaml(depth: int = 100_000) -> bytes:
    return b"kind: Pod\nmetadata: {name: deep}\nspec: " + b"[" * depth + b"]" * depth + b"\n"


def alias_bomb(at: str = "metadata:\n  annotations:\n    bomb: *i\n") -> bytes:
    """YAML's billion laughs: nine levels of nine aliases, 9**9 strings once expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join(f"*{prev}" for _ in range(9)) + "]")
        prev = name
    return ("\n".join(lines) + "\n" + at).encode()


def text_mutations(valid: bytes, rng: random.Random) -> list[tuple[str, bytes, bool]]:
    """(name, content, invalid) for one valid file's text."""
    text = valid.decode("utf-8")
    cut = rng.randrange(1, max(2, len(valid) - 1))
    return [
        ("empty", b"", False),
        ("utf16", text.encode("utf-16"), True),
        ("latin1", (text + "\n# café\n").encode("latin-1", "replace"), True),
        ("bom-crlf", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"), False),
        ("truncated", valid[:cut], False),
        ("nul-bytes", valid[: len(valid) // 2] + b"\x00\x00" + valid[len(valid) // 2 :], True),
        ("deep-json", deep_json(), True),
        ("deep-yaml", deep_yaml(), True),
        ("binary", bytes(rng.randrange(256) for _ in range(512)), True),
    ]


Builder = Callable[[random.Random], Iterator[Case]]


# --- fields kubegpu reads, per kind: a value of the wrong type there must be an error naming it -----------
META_READ: tuple[Path_, ...] = (("metadata", "name"), ("metadata", "namespace"), ("metadata", "labels"),
                                 ("metadata", "annotations"))  # fmt: skip
READ: dict[str, tuple[Path_, ...]] = {
    "Node": (("status", "capacity"), ("status", "allocatable"), ("spec", "taints"), ("spec", "unschedulable"),
             ("status", "conditions")),
    "Pod": (("spec", "nodeName"), ("spec", "tolerations"), ("spec", "priority"), ("spec", "priorityClassName"),
            ("spec", "nodeSelector"), ("spec", "schedulerName"), ("status", "phase")),
    "ResourceQuota": (("spec", "hard"), ("status", "used")),
    "LimitRange": (("spec", "limits"),),
    "PriorityClass": (("value",), ("preemptionPolicy",)),
    "PodDisruptionBudget": (("spec", "selector"), ("status", "disruptionsAllowed")),
    "GpuQueue": (("spec", "nominalQuota"), ("spec", "borrowingLimit"), ("spec", "cohort"), ("spec", "weight")),
    "PodGroup": (("spec", "minMember"),),
    "ResourceSlice": (("spec", "driver"), ("spec", "nodeName"), ("spec", "pool")),
    "ResourceClaim": (("spec", "devices", "requests"),),
    "DeviceClass": (),
    "Namespace": (),
    "GpuCohort": (),
}  # fmt: skip
CONTAINER_READ = ("resources", "name", "image", "ports")


def reads(kind: str, at: Path_) -> bool:
    if any(at[: len(p)] == p for p in (*META_READ, *READ.get(kind, ()))):
        return True
    return len(at) > 3 and at[:2] == ("spec", "containers") and at[3] in CONTAINER_READ


def wrong_for(value: object, rng: random.Random) -> object:
    choices = [w for w in WRONG_TYPES if w is not None and type(w) is not type(value)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        choices = [w for w in choices if isinstance(w, (list, dict, str, bool))]
    return rng.choice(choices)


def dra_seeds() -> list[dict[str, Any]]:
    from tests.dra import objects as dra

    node = CONTEXT_NODE
    return [
        dra.device_class("gpu.nvidia.com", "gpu"),
        dra.node_slice(node, [dra.gpu_device(0, node), dra.gpu_device(1, node)]),
        dra.claim("train-gpus", dra.request("gpu", count=2), ns="ml-train"),
    ]


def object_cases(kind: str, seed: dict[str, Any], demo: list[dict[str, Any]], rng: random.Random,
                 explain: str = "ml-train/nccl-allreduce-2gpu") -> Iterator[Case]:  # fmt: skip
    """Every mutation of one snapshot object, each written beside the context node and pending pod."""
    ctx = context(demo, kind)
    commands = snapshot_commands(explain)

    def case(name: str, obj: Any, invalid: bool, note: str = "") -> Case:
        return Case(kind, name, {"snap.yaml": dumps([*ctx, obj], rng)}, commands, invalid, note)

    yield case("valid", seed, False)
    paths = quantity_paths(seed)
    for i, bad in enumerate(BAD_QUANTITIES if paths else ()):
        at = paths[i % len(paths)]
        yield case(f"quantity {bad!r} at {'.'.join(map(str, at))}", put(seed, at, bad), True)
    for i, huge in enumerate(HUGE_QUANTITIES if paths else ()):
        at = paths[(i + 1) % len(paths)]
        # not asserted refused: the API server stores it unless another rule (request above limit) refuses
        yield case(f"huge quantity {huge!r} at {'.'.join(map(str, at))}", put(seed, at, huge), False)
    for frac in FRACTIONAL if paths else ():
        at = rng.choice(paths)
        yield case(
            f"fraction {frac!r} at {'.'.join(map(str, at))}", put(seed, at, frac), is_extended(str(at[-1]))
        )
    all_leaves = [p for p in leaves(seed) if p]
    for at in rng.sample(all_leaves, min(8, len(all_leaves))):
        cur: Any = seed
        for k in at:
            cur = cur[k]
        if cur is None:
            continue
        wrong = wrong_for(cur, rng)
        # Quantity.UnmarshalJSON takes a bare JSON number as well as a string: 7 or 1.5 there is no error
        number = isinstance(wrong, (int, float)) and not isinstance(wrong, bool)
        invalid = reads(kind, at) and not (number and at in paths)
        yield case(f"wrong type {wrong!r} at {'.'.join(map(str, at))}", put(seed, at, wrong), invalid)
    yield case("no metadata.name", drop(seed, ("metadata", "name")), True)
    yield case("name not DNS", put(seed, ("metadata", "name"), "Bad_Name!"), True)
    yield case("name of 300 characters", put(seed, ("metadata", "name"), "a" * 300), True)
    base = yaml.safe_dump_all([*ctx, seed], sort_keys=False).encode()
    own = yaml.safe_dump(seed, sort_keys=False)
    bomb_doc = yaml.safe_dump_all(ctx, sort_keys=False) + "---\n" + alias_bomb("").decode() + own
    yield Case(kind, "alias bomb", {"snap.yaml": bomb_doc.encode()}, commands, True)
    dup = own.replace("metadata:\n", "metadata:\n  name: first\n", 1)
    yield Case(kind, "duplicate key", {"snap.yaml": (yaml.safe_dump_all(ctx) + "---\n" + dup).encode()}, commands,
               True)  # fmt: skip
    for name, content, invalid in text_mutations(base, rng):
        yield Case(kind, f"text {name}", {"snap.yaml": content}, commands, invalid)


def snapshot_cases(rng: random.Random) -> Iterator[Case]:
    demo = demo_objects()
    kinds = ("Node", "Pod", "ResourceQuota", "LimitRange", "PriorityClass", "PodDisruptionBudget", "Namespace",
             "GpuCohort", "GpuQueue", "PodGroup")  # fmt: skip
    for kind in kinds:
        seed = copy.deepcopy(next(o for o in demo if o["kind"] == kind))
        if kind == "Pod":  # the pending GPU pod itself, so every command looks at it
            ns, name = CONTEXT_POD
            seed = copy.deepcopy(next(o for o in demo if o["kind"] == "Pod" and o["metadata"]["name"] == name
                                      and o["metadata"]["namespace"] == ns))  # fmt: skip
        yield from object_cases(kind, seed, demo, rng)
    for seed in dra_seeds():
        yield from object_cases(seed["kind"], seed, demo, rng)
    yield from extreme_node_cases(demo)


def extreme_node_cases(demo: list[dict[str, Any]]) -> Iterator[Case]:
    """Legal but extreme counts on a node (the API server takes any label value and any integer capacity):
    kubegpu must answer or refuse at once, never loop over them. ``invalid``: refused as not modelled."""
    node = copy.deepcopy(next(o for o in demo if o["kind"] == "Node"))
    labels, alloc = ("metadata", "labels"), ("status", "allocatable")
    variants = [
        ("gpu.count label 10**12", (*labels, "nvidia.com/gpu.count"), str(10**12), True),
        # GFD writes any replica count and the NVIDIA plugin accepts any replicas >= 2 (NVIDIA/k8s-device-plugin#1433:
        # replicas 16384): accepted, the device-level model capped with a note (devices.sharing)
        ("gpu.replicas label 10**9", (*labels, "nvidia.com/gpu.replicas"), str(10**9), False),
        ("gpu.replicas label 'two'", (*labels, "nvidia.com/gpu.replicas"), "two", True),
        ("MIG capacity 10**9", (*alloc, "nvidia.com/mig-1g.18gb"), str(10**9), False),
        ("GPU capacity 10**9", (*alloc, "nvidia.com/gpu"), str(10**9), False),
    ]
    ctx = context(demo, "Node")
    for name, at, value, invalid in variants:
        obj = put(node, at, value)
        if at[-1] == "nvidia.com/gpu" or at[-1].startswith("nvidia.com/mig"):
            obj = put(obj, ("status", "capacity", at[-1]), value)
        yield Case("Node (extreme counts)", name, {"snap.yaml": yaml.safe_dump_all([obj, *ctx]).encode()},
                   snapshot_commands(), invalid)  # fmt: skip
