"""The corpus's inputs that are not snapshot objects (device plugin and mig-parted configs, SimWorkload,
``--pods`` manifests, NVML readings, nvidia-smi XML, openb CSVs, AdmissionReviews, Prometheus answers),
and ``all_cases``: every case of the corpus (tests/fuzz/corpus.py describes the seeds and mutations)."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from tests.fuzz.corpus import (
    CONTEXT_NODE,
    CONTEXT_POD,
    H200,
    OPENB,
    SEED,
    Case,
    Path_,
    alias_bomb,
    context,
    demo_objects,
    leaves,
    put,
    reads,
    snapshot_cases,
    text_mutations,
    wrong_for,
)


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
    # the NVIDIA plugin accepts any integer replicas >= 2 (api/config/v1/replicas.go; NVIDIA/k8s-device-plugin#1433
    # runs 16384): 10**9 is accepted with a note on what the device-level model caps; 2**64 overflows Go's int
    extremes = [("replicas 10**9", replicas, 10**9, False), ("replicas -1", replicas, -1, True),
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
                # kube-apiserver stores it (ParseQuantity, apimachinery v0.37.2): read saturated, with a note
                ("gpu limit 1e999999999", (*tpl, "pod", "spec", "containers", 0, "resources", "limits",
                                            "nvidia.com/gpu"), "1e999999999", False),
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
