"""The shapes people hand a cluster to ``--snapshot`` in, beyond one ``kubectl get -o yaml``: a ``kubectl
cluster-info dump`` (stdout and ``--output-directory``), several ``kubectl get -o json`` in one file, a dump
cut short, a compressed file.

The cluster is ``tests/realcases/custom-taint-gpu.yaml`` (NVIDIA/k8s-device-plugin#421: the node's ``gpu``
taint keeps the device plugin off it; the thread's cause) written out as kubectl writes each shape:

- ``cluster_info_dump`` follows kubectl pkg/cmd/clusterinfo/clusterinfo_dump.go (kubernetes/kubectl
  dee3483, ``Run``): the NodeList, then per namespace the Event, ReplicationController, Service, DaemonSet,
  Deployment, ReplicaSet and Pod lists, then each container's logs between ``==== START logs for container C
  of pod NS/NAME ====`` and ``==== END … ====`` lines; with ``--output-directory`` nodes.json,
  <ns>/<list>.json and <ns>/<pod>/logs.txt. The lists are typed (client-go's), printed through
  cli-runtime's TypeSetterPrinter, which sets the kind and apiVersion of the list only: the items carry
  none (the API server's list answer has none either: kubernetes-client/python#1394). JSON is
  ``json.MarshalIndent(obj, "", "    ")`` plus a newline (cli-runtime pkg/printers/json.go); YAML lists
  after the first start with ``---`` (pkg/printers/yaml.go).
- A pod that has no node gets the API server's log answer "pod NAME does not have a host assigned"
  (BadRequest, as quoted in public reports), which kubectl writes as "Request log error: …".
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot, split_documents
from kubegpu.sources import load_files

CASE = Path(__file__).parent / "realcases" / "custom-taint-gpu.yaml"
# the thread's cause, as tests/realcases/test_realcases.py pins it
CAUSE = (
    "keeps both this pod and the device plugin (kube-system/nvidia-device-plugin-daemonset) off dell-server"
)

# kubectl clusterinfo_dump.go: the lists of each namespace, in order, with their --output-directory names
LISTS = [
    ("events", "EventList", "v1", "Event"),
    ("replication-controllers", "ReplicationControllerList", "v1", "ReplicationController"),
    ("services", "ServiceList", "v1", "Service"),
    ("daemonsets", "DaemonSetList", "apps/v1", "DaemonSet"),
    ("deployments", "DeploymentList", "apps/v1", "Deployment"),
    ("replicasets", "ReplicaSetList", "apps/v1", "ReplicaSet"),
    ("pods", "PodList", "v1", "Pod"),
]


def objects() -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(CASE.read_text()) if o]


def _typed(obj: dict[str, Any]) -> dict[str, Any]:
    """An item of a typed list: no kind, no apiVersion; Go's zero metav1.Time prints as null."""
    item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    item["metadata"] = {**item["metadata"], "creationTimestamp": None}
    return item


def _list(kind: str, api: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": api, "metadata": {"resourceVersion": "4711"}, "items": items}


def _logs(pod: dict[str, Any]) -> str:
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    out = ""
    for c in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
        out += f"==== START logs for container {c['name']} of pod {ns}/{name} ====\n"
        out += f"Request log error: pod {name} does not have a host assigned\n"
        out += f"==== END logs for container {c['name']} of pod {ns}/{name} ====\n"
    return out


def cluster_info_dump(namespaces: list[str]) -> list[tuple[str, dict[str, Any] | str]]:
    """(path stem, List or log text) in the order kubectl writes them."""
    objs = objects()
    parts: list[tuple[str, dict[str, Any] | str]] = [
        ("nodes", _list("NodeList", "v1", [_typed(o) for o in objs if o["kind"] == "Node"]))
    ]
    for ns in namespaces:
        mine = [o for o in objs if o["metadata"].get("namespace") == ns]
        for stem, list_kind, api, kind in LISTS:
            parts.append(
                (f"{ns}/{stem}", _list(list_kind, api, [_typed(o) for o in mine if o["kind"] == kind]))
            )
        parts += [(f"{ns}/{o['metadata']['name']}/logs", _logs(o)) for o in mine if o["kind"] == "Pod"]
    return parts


def stdout_json(parts: list[tuple[str, dict[str, Any] | str]]) -> str:
    return "".join(p if isinstance(p, str) else json.dumps(p, indent=4) + "\n" for _, p in parts)


def stdout_yaml(parts: list[tuple[str, dict[str, Any] | str]]) -> str:
    out, printed = "", 0
    for _, p in parts:
        if isinstance(p, str):
            out += p
        else:
            out += ("---\n" if printed else "") + yaml.safe_dump(p)
            printed += 1
    return out


def output_directory(parts: list[tuple[str, dict[str, Any] | str]], root: Path) -> Path:
    for stem, p in parts:
        path = root / (stem + (".txt" if isinstance(p, str) else ".json"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p if isinstance(p, str) else json.dumps(p, indent=4) + "\n")
    return root


def report(snap: ClusterSnapshot) -> dict[str, Any]:
    data: dict[str, Any] = diagnose(Engine(snap)).to_dict()
    return data


def as_yaml(tmp_path: Path) -> dict[str, Any]:
    """The same cluster from the realcase's own YAML, for comparison."""
    return report(load_files(CASE))


def same_diagnosis(snap: ClusterSnapshot, tmp_path: Path) -> None:
    got, want = report(snap), as_yaml(tmp_path)
    assert got["pending"] == want["pending"] and got["findings"] == want["findings"]
    assert CAUSE in json.dumps(got["pending"])


# --- typed lists --------------------------------------------------------------------------------------------


def test_typed_list_items_take_the_lists_kind_and_apiversion() -> None:
    """apimachinery pkg/apis/meta/v1/unstructured/helpers.go ``decodeToList``: an item with neither kind nor
    apiVersion takes the list's apiVersion and its kind less ``List``; an item that has one keeps its own."""
    doc = _list("DaemonSetList", "apps/v1", [{"metadata": {"name": "a"}}, {"kind": "Pod", "metadata": {}}])
    got = [(o.get("apiVersion"), o["kind"]) for _, o in split_documents(doc, "f")]
    assert got == [("apps/v1", "DaemonSet"), (None, "Pod")]
    # a plain v1 List names no item kind: its kind-less items stay kind-less (an error, as before)
    snap = build_snapshot(split_documents(_list("List", "v1", [{"metadata": {"name": "x"}}]), "f"))
    assert [e.one_line() for e in snap.errors] == ["f: <no kind> x: kind: object has no kind"]


# --- kubectl cluster-info dump ------------------------------------------------------------------------------


def dump_note(path: Path, tmp_path: Path) -> str:
    """Read a dump: no error, the same diagnosis as the YAML, and one note about it, returned."""
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    same_diagnosis(snap, tmp_path)
    assert len(snap.notes) == 1, snap.notes
    return snap.notes[0]


def test_cluster_info_dump_stdout_reads_as_the_same_cluster(tmp_path: Path) -> None:
    path = tmp_path / "dump.txt"  # `kubectl cluster-info dump > dump.txt`: JSON lists with logs between them
    path.write_text(stdout_json(cluster_info_dump(["kube-system", "default"])))
    note = dump_note(path, tmp_path)
    assert note.startswith(
        f"{path}: a `kubectl cluster-info dump` of 2 namespace(s) (default, kube-system): "
    )
    assert "no ResourceQuota" in note
    assert note.endswith("its 1 container log section(s) were skipped (kubegpu reads objects, not logs)")


def test_cluster_info_dump_stdout_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"  # `kubectl cluster-info dump -o yaml`
    # with --namespaces kube-system,default,kube-public: kube-public's lists are empty, so its name is not in
    # the stream
    path.write_text(stdout_yaml(cluster_info_dump(["kube-system", "default", "kube-public"])))
    note = dump_note(path, tmp_path)
    assert "of 3 namespace(s) (default, kube-system and 1 with no object): " in note
    assert "1 container log section(s)" in note


def test_cluster_info_dump_output_directory(tmp_path: Path) -> None:
    root = output_directory(cluster_info_dump(["kube-system", "default"]), tmp_path / "dump")
    assert (root / "default" / "gpu-pod" / "logs.txt").is_file()
    note = dump_note(root, tmp_path)
    assert note.startswith(f"{root}: a `kubectl cluster-info dump` of namespace(s) default, kube-system:")
    assert note.endswith("its 1 logs.txt file(s) were skipped (kubegpu reads objects, not logs)")


def test_a_log_without_its_last_newline_and_crlf_lines(tmp_path: Path) -> None:
    """kubectl writes a log as the server sends it (``writer.Write(data)``), so one whose last line has no newline
    runs into the END line; a dump saved through a Windows editor has \\r\\n line ends. The log text is the
    device plugin's last start-up line from NVIDIA/k8s-device-plugin#328, put in the section for the parser only."""
    text = stdout_json(cluster_info_dump(["kube-system", "default"]))
    text = text.replace(
        "Request log error: pod gpu-pod does not have a host assigned\n",
        "2022/08/11 06:57:10 Registered device plugin for 'nvidia.com/gpu' with Kubelet",
    )
    path = tmp_path / "dump.txt"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert (
        b"Kubelet==== END logs for container cuda-container of pod default/gpu-pod ====\r\n"
        in path.read_bytes()
    )
    assert "1 container log section(s)" in dump_note(path, tmp_path)


def test_a_dump_cut_short_in_the_logs_keeps_what_came_before(tmp_path: Path) -> None:
    text = stdout_json(cluster_info_dump(["kube-system", "default"]))
    path = tmp_path / "dump.txt"
    path.write_text(text[: text.rindex("==== END")])  # the download stopped inside the last pod's logs
    snap = load_files(path)
    assert [e.one_line() for e in snap.errors] == [
        f"{path}: the logs of container cuda-container of pod default/gpu-pod (line {text.count(chr(10), 0, text.index('==== START')) + 1}) "
        "have no END line: the dump is cut short there, and what followed is missing"
    ]
    assert [p.key for p in snap.pods] == ["default/gpu-pod"] and [n.name for n in snap.nodes] == [
        "dell-server"
    ]


# --- several documents, cut short -----------------------------------------------------------------------------


def test_several_kubectl_get_json_in_one_file(tmp_path: Path) -> None:
    """`kubectl get nodes -o json > c.json; kubectl get pods,ds,events -A -o json >> c.json`: two values."""
    objs = objects()
    nodes = [o for o in objs if o["kind"] == "Node"]
    rest = [o for o in objs if o["kind"] != "Node"]
    path = tmp_path / "c.json"
    path.write_text("".join(json.dumps(_list("List", "v1", x), indent=4) + "\n" for x in (nodes, rest)))
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    same_diagnosis(snap, tmp_path)


def test_a_truncated_json_list_keeps_its_complete_items(tmp_path: Path) -> None:
    objs = objects()  # Node, DaemonSet, Pod, Event
    # `kubectl get -o json` writes the keys sorted: apiVersion, items, kind, metadata
    text = json.dumps({"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {}}, indent=4)
    cut = text.index('"name": "gpu-pod"')  # inside the Pod: the Node and the DaemonSet are whole
    path = tmp_path / "c.json"
    path.write_text(text[:cut])
    snap = load_files(path)
    line = text.count("\n", 0, cut) + 1
    assert [e.one_line() for e in snap.errors] == [
        f"{path}: invalid JSON at line {line}, column 17: Expecting property name enclosed in double quotes (the text ends inside a value: "
        "truncated?); the 2 complete item(s) of the List before it were read"
    ]
    assert [n.name for n in snap.nodes] == ["dell-server"] and not snap.pods
    assert [d.name for d in snap.records.daemonsets] == ["nvidia-device-plugin-daemonset"]


def test_a_whole_json_document_of_items_without_a_kind_reads_every_item(tmp_path: Path) -> None:
    """``jq '{items: .items}'`` of a `kubectl get -o json` List writes no kind. A JSON document that parsed is
    whole (one cut short does not parse), so its items are all read: the cut-short guess (a YAML List's kind
    comes after its items) was dropping the last one, the Pending pod, with an error."""
    path = tmp_path / "jq.json"
    path.write_text(json.dumps({"items": objects()}))
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    same_diagnosis(snap, tmp_path)


def test_a_truncated_yaml_list_keeps_its_complete_items(tmp_path: Path) -> None:
    objs = objects()  # Node, DaemonSet, Pod, Event
    # `kubectl get -o yaml` writes the keys sorted: its kind comes after the items, so a cut loses it
    text = yaml.safe_dump(
        {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}
    )
    path = tmp_path / "c.yaml"
    path.write_text(text[: text.index("name: gpu-pod") + len("name:")])  # still YAML: the Pod's name is null
    snap = load_files(path)
    assert [e.one_line() for e in snap.errors] == [
        f"{path}: Pod <no name>: a List without its kind: the text ends inside its items (cut short?); the 2 "
        "item(s) before the last were read, the last one, where the text ends, was left out"
    ]
    assert [n.name for n in snap.nodes] == ["dell-server"] and not snap.pods
    assert [d.name for d in snap.records.daemonsets] == ["nvidia-device-plugin-daemonset"]
    # a break YAML refuses (a tab) inside the third item: the two before it are read
    broken = text.replace("  kind: Pod\n", "\tkind: Pod\n")
    path.write_text(broken)
    snap = load_files(path)
    line = broken[: broken.index("\tkind: Pod")].count("\n") + 1
    assert [e.one_line() for e in snap.errors] == [
        f"{path}: invalid YAML at line {line}, column 1: found character '\\t' that cannot start any token; the 2 "
        "complete item(s) of the List before it were read"
    ]
    assert [n.name for n in snap.nodes] == ["dell-server"] and not snap.pods


def test_a_broken_yaml_document_keeps_the_documents_before_it(tmp_path: Path) -> None:
    objs = objects()
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(objs[0]) + "---\nkind: Pod\nmetadata:\n\tname: x\n"
    )  # a tab: YAML refuses it
    snap = load_files(path)
    assert [e.one_line() for e in snap.errors] == [
        f"{path}: invalid YAML at line {yaml.safe_dump(objs[0]).count(chr(10)) + 4}, column 1: "
        "found character '\\t' that cannot start any token"
    ]
    assert [n.name for n in snap.nodes] == ["dell-server"]


def test_flow_style_yaml_opening_with_a_brace_is_still_yaml(tmp_path: Path) -> None:
    path = tmp_path / "n.yaml"
    path.write_text("{apiVersion: v1, kind: Node, metadata: {name: n1}}\n")
    snap = load_files(path)
    assert not snap.errors and [n.name for n in snap.nodes] == ["n1"]


# --- compressed files -----------------------------------------------------------------------------------------


def _tar(text: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("cluster.yaml")
        info.size = len(text.encode())
        tar.addfile(info, io.BytesIO(text.encode()))
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "pack", "says"),
    [
        (
            "c.json.gz",
            lambda t: gzip.compress(t.encode()),
            "gzip-compressed; decompress it first (gunzip -k ",
        ),
        ("c.tar", _tar, "a tar archive; extract it (tar -xf "),
    ],
)
def test_a_compressed_file_is_said_so_with_what_to_run(
    tmp_path: Path, name: str, pack: Any, says: str
) -> None:
    """kubectl does not decompress a manifest either (`kubectl apply -f c.json.gz` fails); the line says
    what the file is instead of "not UTF-8 (Latin-1?)"."""
    path = tmp_path / name
    path.write_bytes(pack(CASE.read_text()))
    snap = load_files(path)
    assert len(snap.errors) == 1
    assert snap.errors[0].one_line().startswith(f"{path}: cannot read manifest: {says}{path}")


def test_a_directory_says_which_files_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CASE.read_text())
    (tmp_path / "quotas.json.gz").write_bytes(gzip.compress(b"{}"))
    snap = load_files(tmp_path)
    assert snap.notes == [f"{tmp_path}: 1 file(s) that are not .yaml/.yml/.json were skipped: quotas.json.gz"]


# --- nothing read -----------------------------------------------------------------------------------------------


def _diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegpu", "diagnose", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_when_no_object_could_be_read_there_is_no_answer(tmp_path: Path) -> None:
    """A cluster of no object is no cluster: "nothing is blocked" with exit 0 would be a false all-clear."""
    packed = tmp_path / "c.json.gz"
    packed.write_bytes(gzip.compress(CASE.read_text().encode()))
    proc = _diagnose("--snapshot", str(packed))
    assert proc.returncode == 2 and not proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: {packed}: cannot read manifest: gzip-compressed; decompress it first (gunzip -k {packed}; "
        f"a .tar.gz: tar -xzf {packed}, then give the directory)",
        f"error: {packed}: no object could be read (each refusal is above), so there is nothing to diagnose",
    ]
    empty = tmp_path / "cluster.yaml"  # `kubectl get … > cluster.yaml` that failed: its error went to stderr
    empty.write_text("")
    proc = _diagnose("--snapshot", str(empty))
    assert (proc.returncode, proc.stderr.strip()) == (
        2,
        f"error: {empty}: no object could be read (an empty file? kubectl writes its errors to stderr), so "
        "there is nothing to diagnose",
    )
    # one readable object is enough for an answer
    empty.write_text(CASE.read_text())
    assert _diagnose("--snapshot", str(empty), "--snapshot", str(packed)).returncode == 0


def test_a_bare_array_of_objects_is_refused_with_how_to_keep_the_list(tmp_path: Path) -> None:
    """``kubectl get -o json | jq .items`` prints a top-level array, which is no Kubernetes document (kubectl's
    decoders take an object or a List): refused in one line, saying how to keep or wrap the List."""
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]))
    done = subprocess.run(
        [sys.executable, "-m", "kubegpu", "diagnose", "--snapshot", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert "expected a Kubernetes object, got list" in first and '"kind": "List"' in first
    assert "Traceback" not in done.stderr
