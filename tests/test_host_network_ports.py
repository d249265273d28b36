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


def test_explain_names_the_holder_and_says_hostnetwork_took_the_port() -> None:
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod
    from tests.conftest import snapshot_of

    case = load(FIXTURES / "hostnetwork-gpu-ports.yaml")
    snap = snapshot_of(*case.objects, case.pod)
    pod = snap.pod("default/ws-9e2d41")
    assert pod is not None and pod.host_network
    exp = explain_pod(Engine(snap), pod)
    node = next(n for n in exp.nodes if n.name == "worker-gpu-0")
    assert node.evidence == ["hostPort 8080/TCP already used on the node by default/ws-7a1c0f"]
    group = next(
        g for g in exp.groups if g.reason == "node(s) didn't have free ports for the requested pod ports"
    )
    assert group.fix.startswith(
        "The pod runs with hostNetwork: true, so each of its containerPorts is a hostPort"
    )


def test_the_cause_is_the_gpu_workers_port_not_the_control_planes_taint() -> None:
    """master-0 (node-role.kubernetes.io/master, its NoSchedule taint, one GPU) and worker-gpu-0 (the port
    held) each refuse the pod and each could host its GPU: a tie the reason text broke toward the master's
    taint, advising a toleration onto the control plane. Control-plane nodes count only where no other node
    could host the pod (kubeadm's role labels, cmd/kubeadm/app/constants)."""
    from tests.conftest import snapshot_of
    from tests.summaries import summary_of

    case = load(FIXTURES / "hostnetwork-gpu-ports.yaml")
    s = summary_of(snapshot_of(*case.objects, case.pod))
    assert dict(s.causes) == {"node(s) didn't have free ports for the requested pod ports": 1}
    assert s.first_step.startswith("The pod runs with hostNetwork: true")
    # with the GPU worker gone, the control plane is the only host: its taint is the cause again
    objects = [o for o in case.objects if o["metadata"]["name"] != "worker-gpu-0"]
    s = summary_of(snapshot_of(*objects, case.pod))
    assert dict(s.causes) == {"node(s) had untolerated taint(s)": 1}
