"""The chart's RBAC against the calls the components really make: the webhook and the extender run as
real processes against the emulated API server (tests/live/apiserver.py), and every request it served is
mapped to kube-apiserver's authorizer attributes (tests/live/test_deploy.py ``request_attributes``).

Each request must be granted to the component's ServiceAccount by the rendered chart, and each
(verb, resource) the chart grants must have been used: least privilege in both directions. (The
scheduler's run is tests/live/test_deploy.py, on the plain manifest rendered from the chart.)
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.deploy.helm_chart import granted, objects
from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, extender_process, free_port, gpu_node, gpu_pod
from tests.live.deploy_manifests import request_attributes


def calls(api: RunningApiServer) -> set[tuple[str, str, str, str]]:
    """(verb, group, resource, name) of every request the emulator served."""
    return {request_attributes(s) for s in api.emulator.served}


def assert_exactly_granted(observed: set[tuple[str, str, str, str]], account: str) -> None:
    grants = granted(objects("all-components"), account)
    allowed = {(v, g, r, n) for g, r, v, n in grants}
    assert [c for c in observed if c not in allowed and (c[0], c[1], c[2], "") not in allowed] == []
    assert {(v, g, r) for v, g, r, _ in observed} == {(v, g, r) for g, r, v, _ in grants}


def test_webhook_calls_are_exactly_its_rbac(
    api: RunningApiServer, kubeconfig: Path, start_webhook: Callable[..., tuple[Component, int]]
) -> None:
    api.emulator.create("namespaces", {"metadata": {"name": "ml"}})
    api.emulator.create("nodes", gpu_node("gpu-1"))
    component, _ = start_webhook("--kubeconfig", str(kubeconfig))

    def informers_watching() -> bool:
        assert component.proc.poll() is None, component.output()
        return {("watch", "namespaces"), ("watch", "nodes")} <= {(v, r) for v, _, r, _ in calls(api)}

    wait_until(informers_watching, what="the webhook's namespace and node watches")
    assert_exactly_granted(calls(api), "kubegpu-webhook")


def test_extender_calls_are_exactly_its_rbac(api: RunningApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    api.emulator.create("nodes", gpu_node("gpu-1"))
    pod = api.emulator.create("pods", gpu_pod("to-bind", 1, scheduler="default-scheduler"))
    port = free_port()
    component = extender_process(kubeconfig, port, tmp_path / "extender.log")
    try:

        def informers_watching() -> bool:
            assert component.proc.poll() is None, component.output()
            watched = {r for v, _, r, _ in calls(api) if v == "watch"}
            return watched >= {"nodes", "pods", "priorityclasses", "poddisruptionbudgets"}

        wait_until(informers_watching, what="the extender's four watches")
        # kube-scheduler's bind call (bindVerb in deploy/scheduler/extender-config.yaml)
        args = {"PodName": "to-bind", "PodNamespace": "ml", "PodUID": pod["metadata"]["uid"], "Node": "gpu-1"}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/kubegpu/bind", data=json.dumps(args).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.loads(response.read()) == {"Error": ""}
    finally:
        component.stop()
    assert_exactly_granted(calls(api), "kubegpu-extender")
