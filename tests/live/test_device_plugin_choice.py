"""The device plugin honours the scheduler's recorded devices: real gRPC on a unix socket, pods held by the
emulated API server (kmock, ``tests/live/apiserver.py``) and read through ``KubeApi`` over HTTP.

Pins: kubelet's ``GetPreferredAllocation`` request (available IDs, must-include IDs, size, no pod named)
and ``Allocate``; kubegpu's record ``kubegpu.io/allocated-devices`` = ``{container: {resource: [ids]}}``,
which the API server copies from the Binding onto the pod together with ``spec.nodeName`` and a
``PodScheduled=True`` condition stamped at binding (``setPodHostAndAnnotations``). The pods below are
what the API server holds after such bindings; their times are written by hand.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubegpu.devices import NodeInventory, load_reading, parse_plugin_config
from kubegpu.kube.client import KubeApi
from kubegpu.node.plugin import DevicePluginServer
from kubegpu.node.scheduler_choice import SchedulerChoice
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc
from tests.live.apiserver import RunningApiServer
from tests.live.conftest import write_kubeconfig

DGX1 = Path(__file__).parents[2] / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"
TIMEOUT = 5.0
NODE = "dgx-1"


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kgsc", dir="/tmp"))  # unix socket paths must stay short
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def dgx1() -> NodeInventory:
    return load_reading(DGX1)


def bound_pod(
    name: str, ids: dict[str, list[str]], *, bound_at: str, node: str = NODE, phase: str = "Pending"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ml",
            "creationTimestamp": "2026-12-03T07:00:00Z",
            "annotations": {
                "kubegpu.io/allocated-devices": json.dumps(
                    {c: {"nvidia.com/gpu": i} for c, i in ids.items()}, separators=(",", ":")
                )
            },
        },
        "spec": {"nodeName": node, "schedulerName": "kubegpu", "containers": [{"name": c} for c in ids]},
        "status": {
            "phase": phase,
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": bound_at}],
        },
    }


class Plugin:
    """A served plugin (with or without API access) and a stub to it."""

    def __init__(self, inv: NodeInventory, socket_dir: Path, choice: SchedulerChoice | None) -> None:
        self.server = DevicePluginServer(inv, parse_plugin_config(""), socket_dir=socket_dir, choice=choice)
        self.server.start()
        self.channel = grpc.insecure_channel(f"unix://{self.server.socket_path}")
        self.stub = pb_grpc.DevicePluginStub(self.channel)

    def preferred(self, available: list[str], size: int, must: list[str] | None = None) -> list[str]:
        request = pb.ContainerPreferredAllocationRequest(
            available_deviceIDs=available, must_include_deviceIDs=must or [], allocation_size=size
        )
        response = self.stub.GetPreferredAllocation(
            pb.PreferredAllocationRequest(container_requests=[request]), timeout=TIMEOUT
        )
        return list(response.container_responses[0].deviceIDs)

    def allocate(self, ids: list[str]) -> None:
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
        self.stub.Allocate(request, timeout=TIMEOUT)

    def close(self) -> None:
        self.channel.close()
        self.server.stop()


@pytest.fixture
def plugins(
    dgx1: NodeInventory, socket_dir: Path, api: RunningApiServer, tmp_path: Path
) -> Iterator[tuple[Plugin, Plugin]]:
    """(the plugin with API access, the same plugin without it: the topology-aware choice)."""
    kube = KubeApi.from_kubeconfig(None, str(write_kubeconfig(api, tmp_path)), False, timeout_s=5.0)
    (socket_dir / "a").mkdir()
    (socket_dir / "b").mkdir()
    with_api = Plugin(dgx1, socket_dir / "a", SchedulerChoice(kube, NODE))
    without = Plugin(dgx1, socket_dir / "b", None)
    yield with_api, without
    with_api.close()
    without.close()
    kube.close()


def test_the_recorded_devices_are_preferred_oldest_binding_first(
    plugins: tuple[Plugin, Plugin], api: RunningApiServer, dgx1: NodeInventory
) -> None:
    plugin, topology = plugins
    u = [g.uuid for g in dgx1.devices]
    # the topology-aware choice for 2 of 8 free is another pair than the ones recorded below
    assert topology.preferred(u, 2) not in ([u[5], u[6]], [u[1], u[2]])
    api.emulator.create("pods", bound_pod("later", {"main": [u[1], u[2]]}, bound_at="2026-12-03T07:10:00Z"))
    api.emulator.create("pods", bound_pod("earlier", {"main": [u[5], u[6]]}, bound_at="2026-12-03T07:05:00Z"))
    api.emulator.create(
        "pods", bound_pod("running", {"main": [u[3], u[4]]}, bound_at="2026-12-03T07:01:00Z", phase="Running")
    )
    api.emulator.create(
        "pods", bound_pod("elsewhere", {"main": [u[0], u[7]]}, bound_at="2026-12-03T07:00:00Z", node="dgx-2")
    )

    assert plugin.preferred(u, 2) == [u[5], u[6]]  # oldest binding; the running and other-node pods never
    # once kubelet has allocated those two, the next admission is the later pod's
    assert plugin.preferred([i for i in u if i not in (u[5], u[6])], 2) == [u[1], u[2]]
    # must-include IDs pick the record that contains them
    assert plugin.preferred(u, 2, must=[u[2]]) == [u[1], u[2]]
    # a size no record has, or records whose devices are not all available: the topology choice
    assert plugin.preferred(u, 3) == topology.preferred(u, 3)
    rest = [u[0], u[3], u[4], u[6], u[7]]
    assert plugin.preferred(rest, 2) == topology.preferred(rest, 2)


def test_each_container_of_a_pod_gets_its_own_record(
    plugins: tuple[Plugin, Plugin], api: RunningApiServer, dgx1: NodeInventory
) -> None:
    plugin, _ = plugins
    u = [g.uuid for g in dgx1.devices]
    api.emulator.create(
        "pods",
        bound_pod(
            "two", {"trainer": [u[4], u[5], u[6], u[7]], "sidecar": [u[0]]}, bound_at="2026-12-03T07:00:00Z"
        ),
    )
    assert plugin.preferred(u, 4) == [u[4], u[5], u[6], u[7]]
    assert plugin.preferred(u[:4], 1) == [u[0]]


def test_without_an_api_answer_the_topology_choice_stands(
    dgx1: NodeInventory, socket_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An unreachable API server (nothing listens on the port) must not fail kubelet's admission."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: x, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: x, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n"
    )
    kube = KubeApi.from_kubeconfig(None, str(kubeconfig), False, timeout_s=1.0, max_retries=0)
    (socket_dir / "a").mkdir()
    (socket_dir / "b").mkdir()
    plugin = Plugin(dgx1, socket_dir / "a", SchedulerChoice(kube, NODE))
    topology = Plugin(dgx1, socket_dir / "b", None)
    try:
        u = [g.uuid for g in dgx1.devices]
        with caplog.at_level(logging.WARNING, logger="kubegpu.node.scheduler_choice"):
            assert plugin.preferred(u, 2) == topology.preferred(u, 2)
        assert any("using the topology-aware choice" in r.getMessage() for r in caplog.records)
    finally:
        plugin.close()
        topology.close()
        kube.close()


def test_allocate_warns_when_kubelet_allocates_other_devices_than_recorded(
    plugins: tuple[Plugin, Plugin],
    api: RunningApiServer,
    dgx1: NodeInventory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    plugin, _ = plugins
    u = [g.uuid for g in dgx1.devices]
    api.emulator.create("pods", bound_pod("p", {"main": [u[5], u[6]]}, bound_at="2026-12-03T07:05:00Z"))
    with caplog.at_level(logging.WARNING, logger="kubegpu.node.scheduler_choice"):
        plugin.allocate([u[5], u[6]])
        assert not caplog.records  # as recorded: nothing to say
        plugin.allocate([u[0], u[1]])
    [record] = caplog.records
    assert record.getMessage() == (
        f"kubelet allocated nvidia.com/gpu {u[0]},{u[1]}, which no pending pod's kubegpu.io/allocated-devices "
        f"records (ml/p container main: {u[5]},{u[6]}): the container gets other devices than the scheduler placed"
    )


def test_api_access_without_a_node_name_is_a_usage_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubegpu.cli.main import cli

    result = CliRunner().invoke(
        cli,
        ["node", "device-plugin", "--reading", str(DGX1), "--kubeconfig", str(tmp_path / "k")],
        env={"NODE_NAME": ""},
    )
    assert result.exit_code == 2
    assert "--node-name (or NODE_NAME) is needed with --kubeconfig/--in-cluster" in result.output
