"""``kubegpu extender`` as a real process, called over HTTP with the JSON kube-scheduler sends.

Pins ``k8s.io/kube-scheduler/extender/v1``: its structs have no json tags, so the keys are the Go field
names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``,
``Host``, ``Score``, ``PodName``/``PodNamespace``/``PodUID``/``Node``, ``NodeNameToVictims``,
``NodeNameToMetaVictims``, ``Pods``/``UID``/``NumPDBViolations``), nil pointers travel as ``null``, and
prioritize scores are in ``0..MaxExtenderPriority`` (10).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kmock._internal import parsing

from tests.live.apiserver import RunningApiServer, parse_path_with_namespace_list, serve_in_thread, wait_until
from tests.live.conftest import extender_process, free_port, gpu_node, gpu_pod, write_kubeconfig

TAINT = "node(s) had untolerated taint(s)"


@pytest.fixture(scope="module")
def api() -> Iterator[RunningApiServer]:
    """One API server for the module: the calls below do not depend on each other's writes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parsing, "parse_path", parse_path_with_namespace_list)
        yield from serve_in_thread()


@pytest.fixture(scope="module")
def extender(api: RunningApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp_path = tmp_path_factory.mktemp("extender")
    kubeconfig = write_kubeconfig(api, tmp_path)
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("nodes", gpu_node("gpu-2", taint=True))
    api.emulator.create("nodes", gpu_node("gpu-3"))
    api.emulator.create("pods", gpu_pod("resident", 6, node="gpu-1"))
    port = free_port()
    component = extender_process(kubeconfig, port, tmp_path / "extender.log")

    def synced() -> bool:
        assert component.proc.poll() is None, component.output()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, ConnectionError):
            return False

    wait_until(synced, what="extender informers synced")
    yield port
    component.stop()


def call(port: int, verb: str, args: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/kubegpu/{verb}", data=json.dumps(args).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def incoming(gpus: int = 4) -> dict[str, Any]:
    pod = gpu_pod("incoming", gpus)
    pod["metadata"]["uid"] = "3d2c1b0a-0000-4000-8000-000000000001"
    return pod


def test_filter_with_node_names_splits_resolvable_and_unresolvable_failures(extender: int) -> None:
    """gpu-1 has 2 of 8 GPUs free (Unschedulable: preemption may help), gpu-2's taint is not tolerated
    (UnschedulableAndUnresolvable), gpu-3 fits; with nodeCacheCapable the answer is by name."""
    result = call(
        extender, "filter", {"Pod": incoming(), "Nodes": None, "NodeNames": ["gpu-1", "gpu-2", "gpu-3"]}
    )
    assert result == {
        "Nodes": None,
        "NodeNames": ["gpu-3"],
        "FailedNodes": {"gpu-1": "Insufficient nvidia.com/gpu"},
        "FailedAndUnresolvableNodes": {"gpu-2": TAINT},
        "Error": "",
    }


def test_filter_with_a_node_list_echoes_the_passing_node_objects(extender: int) -> None:
    node_list = {"metadata": {}, "items": [gpu_node("gpu-2", taint=True), gpu_node("gpu-3")]}
    result = call(extender, "filter", {"Pod": incoming(), "Nodes": node_list, "NodeNames": None})
    assert result["NodeNames"] is None
    assert result["Nodes"] == {"metadata": {}, "items": [gpu_node("gpu-3")]}
    assert result["FailedAndUnresolvableNodes"] == {"gpu-2": TAINT}


def test_prioritize_scales_the_core_score_to_max_extender_priority(extender: int) -> None:
    """Default weights (1.37) TaintToleration 3 + NodeAffinity 2 + NodeResourcesFit 1 + PodTopologySpread 2 +
    InterPodAffinity 2 + DynamicResources 2 + BalancedAllocation 1 + ImageLocality 1 = 14, so the top is 1400
    (spread, pod affinity and DRA skip this pod; ImageLocality scores 0: the nodes list no images). gpu-3
    (only the incoming pod: cpu 1/63.5, memory 1Gi/500Gi): 3×100 + 2×0 + LeastAllocated (98 + 99) / 2 = 98
    + Balanced int((1 − |0.01575 − 0.002| / 2) × 100) = 99 → 497; gpu-1 (with the resident pod): 300 + 0 +
    (96 + 99) / 2 = 97 + 98 → 495. Both × 10 // 1400 = 3."""
    scores = call(
        extender, "prioritize", {"Pod": incoming(1), "Nodes": None, "NodeNames": ["gpu-1", "gpu-3"]}
    )
    assert scores == [{"Host": "gpu-1", "Score": 3}, {"Host": "gpu-3", "Score": 3}]


def test_bind_posts_the_binding_and_reports_the_api_server_refusal(
    extender: int, api: RunningApiServer
) -> None:
    pod = api.emulator.create("pods", gpu_pod("to-bind", 1, scheduler="default-scheduler"))
    args = {"PodName": "to-bind", "PodNamespace": "ml", "PodUID": pod["metadata"]["uid"], "Node": "gpu-3"}
    assert call(extender, "bind", args) == {"Error": ""}
    assert api.emulator.get("pods", "ml", "to-bind")["spec"]["nodeName"] == "gpu-3"  # type: ignore[index]
    assert call(extender, "bind", args) == {
        "Error": 'Operation cannot be fulfilled on pods/binding "to-bind": pod to-bind is already assigned to node "gpu-3"'
    }


def test_preempt_returns_the_candidates_as_meta_victims(extender: int) -> None:
    victim = gpu_pod("resident", 6, node="gpu-1")
    victim["metadata"]["uid"] = "victim-uid"
    args = {"Pod": incoming(), "NodeNameToVictims": {"gpu-1": {"Pods": [victim], "NumPDBViolations": 0}},
            "NodeNameToMetaVictims": None}  # fmt: skip
    assert call(extender, "preempt", args) == {
        "NodeNameToMetaVictims": {"gpu-1": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 0}}
    }
    meta = {"gpu-1": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 1}}
    assert call(
        extender, "preempt", {"Pod": incoming(), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    ) == {"NodeNameToMetaVictims": meta}


def test_a_malformed_pod_is_an_error_in_the_result_not_an_http_failure(extender: int) -> None:
    result = call(
        extender,
        "filter",
        {"Pod": {"metadata": {"name": "x", "namespace": "ml"}, "spec": {}}, "NodeNames": ["gpu-3"]},
    )
    assert result == {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "kubegpu extender: ExtenderArgs.Pod: Pod ml/x: spec.containers: Required value",
    }


# k8s.io/kube-scheduler/extender/v1 types.go (v1.34): the fields of the filter result kube-scheduler decodes.
FILTER_RESULT_FIELDS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def post(port: int, verb: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One raw POST (a fresh connection, so a closed one shows as ``RemoteDisconnected``): status and body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        if headers is None:  # what Go's http.NewRequest with a bytes.Reader sends: the exact length
            headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        connection.putrequest("POST", f"/kubegpu/{verb}")
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _node_without_name() -> dict[str, Any]:
    node = gpu_node("gpu-3")
    del node["metadata"]["name"]
    return node


BAD_EXTENDER_ARGS = [
    pytest.param({"Pod": "x", "NodeNames": ["gpu-3"]}, "Pod", id="pod-string"),
    pytest.param({"Pod": 5, "NodeNames": ["gpu-3"]}, "Pod", id="pod-number"),
    pytest.param({"Pod": None, "NodeNames": ["gpu-3"]}, "Pod", id="pod-null"),
    pytest.param({"Pod": "INCOMING", "NodeNames": "gpu-3"}, "NodeNames", id="node-names-string"),
    pytest.param({"Pod": "INCOMING", "NodeNames": [5]}, "NodeNames[0]", id="node-name-number"),
    pytest.param({"Pod": "INCOMING", "Nodes": "x", "NodeNames": None}, "Nodes", id="nodes-string"),
    pytest.param(
        {"Pod": "INCOMING", "Nodes": {"items": [{"metadata": "x"}]}, "NodeNames": None},
        "Nodes.items[0].metadata",
        id="node-metadata-string",
    ),
    pytest.param(
        {"Pod": "INCOMING", "Nodes": {"items": ["NAMELESS"]}, "NodeNames": None},
        "Nodes.items[0].metadata.name",
        id="node-without-name",
    ),
]


def _args(args: dict[str, Any]) -> dict[str, Any]:
    """Fills the placeholders of ``BAD_EXTENDER_ARGS`` (fixtures' objects are built per test)."""
    out = {k: incoming() if v == "INCOMING" else v for k, v in args.items()}
    if isinstance(out.get("Nodes"), dict):
        out["Nodes"] = {
            "items": [_node_without_name() if i == "NAMELESS" else i for i in out["Nodes"]["items"]]
        }
    return out


@pytest.mark.parametrize(("args", "field"), BAD_EXTENDER_ARGS)
def test_filter_answers_a_wrong_typed_field_in_the_result_error(
    extender: int, args: dict[str, Any], field: str
) -> None:
    """kubernetes pkg/scheduler/extender.go ``Filter``: ``send`` decodes the 200 body into
    ``ExtenderFilterResult`` (kube-scheduler extender/v1 types.go) and ``result.Error != ""`` becomes the
    filter's error. So a request whose fields have the wrong type gets HTTP 200 and that result with
    ``Error`` naming the field, and no candidates passed; never a closed connection."""
    status, body = post(extender, "filter", json.dumps(_args(args)).encode())
    assert status == 200
    result = json.loads(body)
    assert set(result) == FILTER_RESULT_FIELDS
    assert result["NodeNames"] is None and result["Nodes"] is None
    assert result["Error"].startswith("kubegpu extender: ") and field in result["Error"]


@pytest.mark.parametrize(("args", "field"), BAD_EXTENDER_ARGS)
def test_prioritize_answers_a_wrong_typed_field_with_a_non_200_status(
    extender: int, args: dict[str, Any], field: str
) -> None:
    """kubernetes pkg/scheduler/extender.go ``Prioritize``/``send``: the result is
    ``HostPriorityList`` (types.go: ``[]HostPriority``, no error field), so the only failure
    kube-scheduler can see is a non-200 status ("failed prioritize with extender at URL …, code N")."""
    status, body = post(extender, "prioritize", json.dumps(_args(args)).encode())
    assert 400 <= status < 500
    assert field in body.decode()


def test_prioritize_and_preempt_answer_invalid_json_with_a_non_200_status(extender: int) -> None:
    """kubernetes pkg/scheduler/extender.go ``send``: only a non-200 status is an error. A 200
    ``{"Error": …}`` decodes as an empty ``ExtenderPreemptionResult`` (types.go: only
    ``NodeNameToMetaVictims``) — no candidates, no error — and fails to decode as ``HostPriorityList``."""
    for verb in ("prioritize", "preempt"):
        status, body = post(extender, verb, b"{not json")
        assert status == 400, verb
        assert body.decode().startswith("kubegpu extender: ")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"NodeNameToMetaVictims": "x"}, id="meta-victims-string"),
        pytest.param({"NodeNameToMetaVictims": {"gpu-1": None}}, id="meta-victims-null"),
        pytest.param({"NodeNameToMetaVictims": {"gpu-1": {"Pods": [None]}}}, id="meta-pod-null"),
        pytest.param({"NodeNameToMetaVictims": {"gpu-1": {"Pods": [{"UID": 5}]}}}, id="meta-uid-number"),
        pytest.param({"NodeNameToMetaVictims": {"gpu-1": {"Pods": "x"}}}, id="meta-pods-string"),
        pytest.param(
            {"NodeNameToMetaVictims": {"gpu-1": {"Pods": [], "NumPDBViolations": "1"}}},
            id="pdb-violations-string",
        ),
        pytest.param({"NodeNameToMetaVictims": None, "NodeNameToVictims": [1]}, id="victims-array"),
        pytest.param(
            {"NodeNameToMetaVictims": None, "NodeNameToVictims": {"gpu-1": {"Pods": [{"metadata": 5}]}}},
            id="victim-metadata-number",
        ),
    ],
)
def test_preempt_answers_malformed_victims_with_a_non_200_status(extender: int, args: dict[str, Any]) -> None:
    """kubernetes pkg/scheduler/extender.go ``ProcessPreemption``: ``send`` errors only on a non-200
    status; a 200 body decodes into ``ExtenderPreemptionResult`` (types.go: ``NodeNameToMetaVictims``
    only), and ``convertToVictims`` dereferences every ``*MetaVictims`` and ``*MetaPod``. Malformed victims
    must be a non-200 answer, never echoed back (a ``null`` MetaPod would reach a nil dereference)."""
    status, body = post(extender, "preempt", json.dumps({"Pod": incoming(), **args}).encode())
    assert 400 <= status < 500
    assert body.decode().startswith("kubegpu extender: ")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(b"{not json", "", id="invalid-json"),
        pytest.param(
            b'{"PodName": 5, "PodNamespace": "ml", "PodUID": "u", "Node": "gpu-3"}',
            "PodName",
            id="name-number",
        ),
        pytest.param(
            b'{"PodName": "a/b", "PodNamespace": "ml", "PodUID": "u", "Node": "gpu-3"}',
            "PodName",
            id="name-slash",
        ),
        pytest.param(
            b'{"PodName": "p", "PodNamespace": "ml", "PodUID": "u", "Node": null}', "Node", id="node-null"
        ),
    ],
)
def test_bind_answers_malformed_args_in_the_result_error(extender: int, body: bytes, field: str) -> None:
    """kubernetes pkg/scheduler/extender.go ``Bind``: ``ExtenderBindingResult`` (types.go) has ``Error``,
    and ``result.Error != ""`` is the bind's error; so HTTP 200 with ``Error`` set, nothing posted."""
    status, raw = post(extender, "bind", body)
    assert status == 200
    result = json.loads(raw)
    assert set(result) == {"Error"}
    assert result["Error"].startswith("kubegpu extender: ") and field in result["Error"]


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind", "preempt"])
def test_an_empty_or_unsized_body_gets_a_4xx_with_a_message(extender: int, verb: str) -> None:
    """kubernetes pkg/scheduler/extender.go ``send`` builds its request with ``http.NewRequest(…,
    bytes.NewReader(out))``, for which Go's net/http sets ``ContentLength``: a well-formed call always
    has a non-empty sized JSON body. An empty body is a bad request (400), a chunked one without a length
    411 Length Required; both with a message, not the 404 of an unknown path."""
    status, body = post(extender, verb, b"", {"Content-Type": "application/json", "Content-Length": "0"})
    assert status == 400
    assert b"empty request body" in body
    status, body = post(extender, verb, b"2\r\n{}\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"})
    assert status == 411
    assert b"Content-Length" in body
