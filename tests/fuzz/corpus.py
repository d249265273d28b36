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
BAD_QUANTITIES: tuple[object, ...] = (
    "1e999999999",  # ParseQuantity accepts it (inf.Dec); Value() overflows: kubegpu must refuse, not compute
    "9223372036854775807Ki",  # beyond MaxInt64 once scaled
    "1e100",
    "100000000000000000000Ki",
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
        ("gpu.replicas label 10**9", (*labels, "nvidia.com/gpu.replicas"), str(10**9), True),
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


# --- inputs that are not snapshot objects ---------------------------------------------------------------
def structured_cases(kind: str, seed: Any, filename: str, commands: tuple[tuple[str, ...], ...],
                     rng: random.Random, read: Callable[[Path_], bool], extremes: list[tuple[str, Path_, object, bool]],
                     extra: dict[str, bytes], as_json: bool = False, wrong: int = 10) -> Iterator[Case]:  # fmt: skip
    """Wrong types at sampled leaves, the kind's extreme values, and the text mutations, of one file."""

    def write(obj: Any) -> bytes:
        return json.dumps(obj).encode() if as_json else yaml.safe_dump(obj, sort_keys=False).encode()

    def case(name: str, content: bytes, invalid: bool) -> Case:
        return Case(kind, name, {**extra, filename: content}, commands, invalid)

    base = write(seed)
    yield case("valid", base, False)
    all_leaves = [p for p in leaves(seed) if p]
    for at in rng.sample(all_leaves, min(wrong, len(all_leaves))):
        cur: Any = seed
        for k in at:
            cur = cur[k]
        value = wrong_for(cur, rng)
        yield case(f"wrong type {value!r} at {'.'.join(map(str, at))}", write(put(seed, at, value)), read(at))
    for name, at, value, invalid in extremes:
        yield case(name, write(put(seed, at, value)), invalid)
    if not as_json:
        yield case("alias bomb", alias_bomb("") + base, True)
    for name, content, invalid in text_mutations(base, rng):
        yield case(f"text {name}", content, invalid)


def _ctx_snapshot(demo: list[dict[str, Any]]) -> bytes:
    return yaml.safe_dump_all(context(demo, ""), sort_keys=False).encode()


PLUGIN_CONFIG = {  # NVIDIA/k8s-device-plugin README, "Shared Access to GPUs with CUDA Time-Slicing"
    "version": "v1",
    "flags": {"migStrategy": "none"},
    "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
}
MIG_CONFIG = {  # mig-parted examples/config.yaml shape, H200 profiles
    "version": "v1",
    "mig-configs": {
        "all-1g.18gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.18gb": 7}}],
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
    },
}
SIM_WORKLOAD = {  # docs/simulator.md
    "apiVersion": "kubegpu.io/v1alpha1",
    "kind": "SimWorkload",
    "metadata": {"name": "nightly"},
    "spec": {
        "templates": [
            {
                "name": "trainer",
                "count": 3,
                "arrival": {"type": "Poisson", "start": 0, "ratePerHour": 12},
                "durationSeconds": 1800,
                "patienceSeconds": 600,
                "pod": {"spec": {"containers": [{"name": "c", "image": "cuda",
                                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
            }
        ],
        "nodeEvents": [{"at": 600, "action": "cordon", "node": CONTEXT_NODE}],
    },
}  # fmt: skip
PROMETHEUS_VECTOR = {  # prometheus/docs/querying/api.md, an instant vector
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [{"metric": {"Hostname": CONTEXT_NODE, "UUID": "GPU-0", "gpu": "0"},
                    "value": [1764633600.0, "0"]}],
    },
}  # fmt: skip


def plugin_config_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    snap = ("--snapshot", "{dir}/snap.yaml", "--strict", "--profile", "kubegpu", "--device-plugin-config",
            "{dir}/config.yaml")  # fmt: skip
    commands = (("diagnose", *snap), ("schedule", *snap),
                ("node", "labels", "--backend", "recorded", "--reading", str(H200 / "nvml.json"), "--config",
                 "{dir}/config.yaml"))  # fmt: skip
    replicas = ("sharing", "timeSlicing", "resources", 0, "replicas")
    extremes = [("replicas 10**9", replicas, 10**9, True), ("replicas -1", replicas, -1, True),
                ("replicas 1.5", replicas, 1.5, True), ("replicas 'two'", replicas, "two", True),
                ("replicas 2**64", replicas, 2**64, True)]  # fmt: skip
    yield from structured_cases("device plugin config", PLUGIN_CONFIG, "config.yaml", commands, rng,
                                lambda at: True, extremes, {"snap.yaml": _ctx_snapshot(demo)})  # fmt: skip


def mig_config_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    commands = (("plan", "mig", CONTEXT_NODE, "--config", "{dir}/mig.yaml", "--config-name", "all-1g.18gb",
                 "--snapshot", "{dir}/snap.yaml", "--strict"),)  # fmt: skip
    devices = ("mig-configs", "all-1g.18gb", 0, "mig-devices", "1g.18gb")
    extremes = [("1g.18gb x 10**9", devices, 10**9, True), ("1g.18gb x -1", devices, -1, True),
                ("1g.18gb x 'seven'", devices, "seven", True), ("version v2", ("version",), "v2", True)]  # fmt: skip
    yield from structured_cases("mig-parted config", MIG_CONFIG, "mig.yaml", commands, rng, lambda at: True,
                                extremes, {"snap.yaml": _ctx_snapshot(demo)})  # fmt: skip


def workload_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    commands = (("simulate", "--snapshot", "{dir}/snap.yaml", "--workload", "{dir}/work.yaml", "--strict"),)
    tpl = ("spec", "templates", 0)
    extremes = [("count 10**12", (*tpl, "count"), 10**12, True), ("count -1", (*tpl, "count"), -1, True),
                ("ratePerHour 0", (*tpl, "arrival", "ratePerHour"), 0, True),
                ("ratePerHour .nan", (*tpl, "arrival", "ratePerHour"), float("nan"), True),
                ("ratePerHour .inf", (*tpl, "arrival", "ratePerHour"), float("inf"), True),
                ("durationSeconds 1e300", (*tpl, "durationSeconds"), 1e300, True),
                ("durationSeconds -5", (*tpl, "durationSeconds"), -5, True),
                ("gpu limit 1e999999999", (*tpl, "pod", "spec", "containers", 0, "resources", "limits",
                                            "nvidia.com/gpu"), "1e999999999", True),
                ("gpu limit -4", (*tpl, "pod", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
                 "-4", True),
                ("event at -1", ("spec", "nodeEvents", 0, "at"), -1, True)]  # fmt: skip

    def read(at: Path_) -> bool:
        return at[:1] == ("spec",) and "image" not in at

    yield from structured_cases("SimWorkload", SIM_WORKLOAD, "work.yaml", commands, rng, read, extremes,
                                {"snap.yaml": _ctx_snapshot(demo)})  # fmt: skip


def pods_manifest_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    """``schedule --pods`` and ``lint``: the pending pod as a new manifest."""
    ns, name = CONTEXT_POD
    pod = copy.deepcopy(next(o for o in demo if o["kind"] == "Pod" and o["metadata"]["name"] == name))
    pod["metadata"] = {"name": "new-pod", "namespace": ns, "labels": {"app": "new"}}
    pod.pop("status", None)
    commands = (("schedule", "--snapshot", "{dir}/snap.yaml", "--pods", "{dir}/pods.yaml", "--strict"),
                ("lint", "{dir}/pods.yaml", "--strict"))  # fmt: skip
    res = ("spec", "containers", 0, "resources")
    extremes = [("resources 'lots'", res, "lots", True),
                ("gpu request -4", (*res, "requests", "nvidia.com/gpu"), "-4", True),
                ("gpu request 0.5", (*res, "requests", "nvidia.com/gpu"), "0.5", True),
                ("gpu request above limit", (*res, "requests", "nvidia.com/gpu"), "3", True),
                ("cpu request above limit", (*res, "limits", "cpu"), "1", True),
                ("memory 1e999999999", (*res, "limits", "memory"), "1e999999999", True),
                ("gpu 9223372036854775807Ki", (*res, "limits", "nvidia.com/gpu"), "9223372036854775807Ki", True),
                ("name not DNS", ("metadata", "name"), "New_Pod", True)]  # fmt: skip
    yield from structured_cases("--pods manifest", pod, "pods.yaml", commands, rng,
                                lambda at: reads("Pod", at), extremes, {"snap.yaml": _ctx_snapshot(demo)})  # fmt: skip


def reading_cases(rng: random.Random) -> Iterator[Case]:
    """The NVML reading (``node discover -o json``) read by the node agent's commands."""
    seed = json.loads((H200 / "nvml.json").read_text(encoding="utf-8"))
    reading = ("--backend", "recorded", "--reading", "{dir}/reading.json")
    commands = (("node", "labels", *reading), ("node", "cdi", *reading), ("node", "discover", *reading))
    dev = ("devices", 0)
    extremes = [("memory total 10**30", (*dev, "memory", "total"), 10**30, True),
                ("memory total -1", (*dev, "memory", "total"), -1, True),
                ("index 10**12", (*dev, "index"), 10**12, True),
                ("max_mig 10**9", (*dev, "max_mig"), 10**9, False)]  # fmt: skip  # max_mig is not read
    yield from structured_cases("NVML reading", seed, "reading.json", commands, rng,
                                lambda at: at[:1] == ("devices",) and at[2:3] in (("index",), ("uuid",), ("name",),
                                                                               ("memory",)) and at[-1] != "free",
                                extremes, {},
                                as_json=True)  # fmt: skip


def smi_xml_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    """``nvidia-smi -q -x`` output pasted into a node's device-inventory annotation."""
    from kubegpu.model.names import INVENTORY_ANNOTATION

    xml = (H200 / "nvidia-smi-q.xml").read_text(encoding="utf-8")
    node = copy.deepcopy(next(o for o in demo if o["kind"] == "Node"))
    snap = ("--snapshot", "{dir}/snap.yaml", "--strict", "--profile", "kubegpu")
    commands = (("diagnose", *snap), ("explain", "ml-train/nccl-allreduce-2gpu", *snap), ("schedule", *snap))
    entity_bomb = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
                   + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
                             for i in range(1, 10))
                   + ']>\n<nvidia_smi_log><driver_version>&lol9;</driver_version></nvidia_smi_log>')  # fmt: skip
    variants = [("valid", xml, False), ("truncated", xml[: len(xml) // 2], True), ("entity bomb", entity_bomb, True),
                ("memory lots", xml.replace("<total>143771 MiB</total>", "<total>lots MiB</total>", 1), True),
                ("memory 10**30", xml.replace("<total>143771 MiB</total>", f"<total>{10**30} MiB</total>", 1), True),
                ("no product", xml.replace("<product_name>NVIDIA H200</product_name>", "", 1), True),
                ("deep", "<a>" * 100_000 + "</a>" * 100_000, True),
                ("gpu count 10**5", xml.split("<gpu ")[0]
                 + "".join("<gpu " + xml.split("<gpu ", 1)[1].split("</nvidia_smi_log>")[0] for _ in range(2))
                 + "</nvidia_smi_log>", False)]  # fmt: skip
    pod = context(demo, "Node")
    for name, text, invalid in variants:
        obj = put(node, ("metadata", "annotations", INVENTORY_ANNOTATION), text)
        content = yaml.safe_dump_all([obj, *pod], sort_keys=False).encode()
        yield Case("nvidia-smi XML", name, {"snap.yaml": content}, commands, invalid)


def openb_cases(rng: random.Random) -> Iterator[Case]:
    """The openb node list and pod list (Alibaba's csv), read by ``simulate --data`` and ``report --openb``."""
    nodes = (OPENB / "openb_node_list_gpu_node.csv").read_text(encoding="utf-8").splitlines()[:4]
    pods = (OPENB / "openb_pod_list_default.csv").read_text(encoding="utf-8").splitlines()[:6]
    node_file, pod_file = "csv/openb_node_list_gpu_node.csv", "csv/openb_pod_list_default.csv"
    commands = (("simulate", "--data", "{dir}", "--trace", "default", "--policy", "FGD"),
                ("report", "--openb", "--data", "{dir}", "-O", "{dir}/r.html"))  # fmt: skip

    def lines(rows: list[str]) -> bytes:
        return ("\n".join(rows) + "\n").encode()

    def cell(rows: list[str], line: int, col: int, value: str) -> list[str]:
        out = list(rows)
        cells = out[line].split(",")
        cells[col] = value
        out[line] = ",".join(cells)
        return out

    def drop_col(rows: list[str], col: int) -> list[str]:
        return [",".join(c for i, c in enumerate(r.split(",")) if i != col) for r in rows]

    variants: list[tuple[str, str, bytes, bool]] = [("valid", pod_file, lines(pods), False)]
    for which, rows in ((node_file, nodes), (pod_file, pods)):
        width = len(rows[0].split(","))
        for value, invalid in (("NaN", True), ("1e30", True), (str(10**30), True), ("-3", True), ("1.5", True),
                               ("²", True), ("٣", True), ("３", True), ("", True), (" 7", True),
                               (str(2**63), True)):  # fmt: skip
            # numeric columns only: the node list's model and the pod list's gpu_spec onwards are text
            col = rng.randrange(1, width - (1 if which == node_file else 6))
            variants.append((f"{which} cell {value!r}", which, lines(cell(rows, 1 + rng.randrange(len(rows) - 1),
                                                                           col, value)), invalid))  # fmt: skip
        variants += [
            (f"{which} missing column", which, lines(drop_col(rows, 2)), True),
            (f"{which} header only", which, lines(rows[:1]), which == node_file),
            (f"{which} empty", which, b"", True),
            (f"{which} BOM", which, b"\xef\xbb\xbf" + lines(rows), False),
            (f"{which} CRLF", which, "\r\n".join(rows).encode() + b"\r\n", False),
            (f"{which} UTF-16", which, "\n".join(rows).encode("utf-16"), True),
            (f"{which} short row", which, lines([*rows, rows[1].rsplit(",", 2)[0]]), True),
            (f"{which} numpy overflow", which, lines(cell(rows, 1, 1, str(2**64 + 1))), True),
        ]
    for name, which, content, invalid in variants:
        files = {node_file: lines(nodes), pod_file: lines(pods), which: content}
        yield Case("openb csv", name, files, commands, invalid)


def admission_review(pod: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    """An AdmissionReview v1 as kube-apiserver posts it (k8s.io/api admission/v1 types.go)."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": pod["metadata"].get("namespace", "default"),
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": pod,
        },
    }


def review_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    """AdmissionReviews through the webhook's body handler (``/validate`` and ``/mutate``); ``invalid``
    means the review must not be allowed (denied or answered 400)."""
    _, name = CONTEXT_POD
    pod = copy.deepcopy(next(o for o in demo if o["kind"] == "Pod" and o["metadata"]["name"] == name))
    pod.pop("status", None)
    seed = admission_review(pod)
    obj = ("request", "object")
    res = (*obj, "spec", "containers", 0, "resources")
    extremes = [("no request", ("request",), None, True), ("object a list", obj, [], True),
                ("no uid", ("request", "uid"), "", True), ("apiVersion v1beta1", ("apiVersion",), "v1beta1", True),
                ("gpu 1e999999999", (*res, "limits", "nvidia.com/gpu"), "1e999999999", True),
                ("gpu -4", (*res, "limits", "nvidia.com/gpu"), "-4", True),
                ("gpu 0.5", (*res, "limits", "nvidia.com/gpu"), "0.5", True),
                ("resources 'lots'", res, "lots", True),
                ("containers a string", (*obj, "spec", "containers"), "c", True)]  # fmt: skip

    def read(at: Path_) -> bool:
        return at[:3] == ("request", "object", "spec") and "containers" in at and "resources" in at

    yield from structured_cases("AdmissionReview", seed, "review.json", (("review",),), rng, read, extremes, {},
                                as_json=True)  # fmt: skip


def prometheus_cases(rng: random.Random, demo: list[dict[str, Any]]) -> Iterator[Case]:
    """``inspect --prometheus``: the case's ``prometheus.json`` is what the fake Prometheus answers to every
    query (``{prometheus}`` in the command is its URL for this case)."""
    commands = (("inspect", "--snapshot", "{dir}/snap.yaml", "--strict", "--prometheus", "{prometheus}"),)
    value = ("data", "result", 0, "value")
    extremes = [("value 'NaN'", (*value, 1), "NaN", False), ("value '1e999'", (*value, 1), "1e999", False),
                ("value 'lots'", (*value, 1), "lots", True), ("value a number", (*value, 1), 97.5, False),
                ("value missing", value, [], True), ("status error", ("status",), "error", True),
                ("result a dict", ("data", "result"), {}, True), ("data a list", ("data",), [], True)]  # fmt: skip
    yield from structured_cases("Prometheus response", PROMETHEUS_VECTOR, "prometheus.json", commands, rng,
                                lambda at: True, extremes, {"snap.yaml": _ctx_snapshot(demo)}, as_json=True,
                                wrong=6)  # fmt: skip


def all_cases(seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    demo = demo_objects()
    return [
        *snapshot_cases(rng),
        *plugin_config_cases(rng, demo),
        *mig_config_cases(rng, demo),
        *workload_cases(rng, demo),
        *pods_manifest_cases(rng, demo),
        *reading_cases(rng),
        *smi_xml_cases(rng, demo),
        *openb_cases(rng),
        *review_cases(rng, demo),
        *prometheus_cases(rng, demo),
    ]
