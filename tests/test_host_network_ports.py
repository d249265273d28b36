"""A hostNetwork pod's ports: the API server defaults each ``hostPort`` left at 0 to its ``containerPort``, in
containers and init containers alike (pkg/apis/core/v1/defaults.go ``SetDefaults_Pod`` → ``defaultHostNetworkPorts``,
the same at v1.30.14 and v1.37.2), so NodePorts refuses a node where another pod holds that port. A manifest read
by kubegpu (never admitted) must be read the same way. Real verdicts: ``golden/gpu/*.json``, case
``hostnetwork-gpu-ports`` (gitpod-io/gitpod#2622: "1 node(s) didn't have free ports for the requested pod ports")."""

from __future__ import annotations

from typing import Any

from kubegpu.model import parse
from tests.conftest import scheduler_for
from tests.realkube.gpu_cases import FIXTURES, load


def _pod(host_network: bool, **port: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"hostNetwork": host_network,
                 "initContainers": [{"name": "init", "image": "busybox", "ports": [{"containerPort": 9000}]}],
                 "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 8080, **port}]}]},
    }  # fmt: skip


def test_host_network_defaults_each_host_port_to_its_container_port() -> None:
    pod = parse.parse_pod(_pod(True))
    assert [(p.port, p.protocol) for p in pod.host_ports] == [(9000, "TCP"), (8080, "TCP")]


def test_a_host_port_given_is_kept_and_without_host_network_no_port_is_taken() -> None:
    assert [p.port for p in parse.parse_pod(_pod(True, hostPort=18080)).host_ports] == [9000, 18080]
    assert parse.parse_pod(_pod(False)).host_ports == ()


def test_a_host_network_pod_is_refused_where_another_holds_its_port() -> None:
    case = load(FIXTURES / "hostnetwork-gpu-ports.yaml")
    result = scheduler_for(*case.objects).schedule_one(parse.parse_pod(case.pod, "case"))
    assert not result.scheduled
    assert "1 node(s) didn't have free ports for the requested pod ports" in result.message
