"""A pod bound with its DRA claims allocated, which kubelet cannot start: kubelet's DRA manager must reach the
driver's kubelet plugin on that node first. kubernetes pkg/kubelet/cm/dra/plugin DRAPluginManager.GetPlugin
("DRA driver %s is not registered") and pkg/kubelet/events/event.go (FailedPrepareDynamicResources). The
fixture's header cites kubernetes-sigs/dra-driver-nvidia-gpu#814."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.sources import load_files
from tests.realcases.cases import HERE, case
from tests.summaries import summary_of


def test_unregistered_dra_driver_is_the_first_step_dra_814() -> None:
    """dra-driver-nvidia-gpu#814: the MPIJob worker stays ContainerCreating; kubegpu said "nothing is blocked"
    with no finding."""
    data = case("dra-driver-not-registered")
    f = [x for x in data["findings"] if x["objects"][0] == "pod/default/nccl-test-worker-0"]
    assert len(f) == 1
    assert f[0]["title"] == (
        "DRA driver compute-domain.nvidia.com is not registered with kubelet on 10.241.39.1: "
        "default/nccl-test-worker-0 cannot start"
    )
    assert (f[0]["severity"], f[0]["layer"]) == ("warning", "driver/device-plugin")
    assert "kubelet-plugin pod is not running on 10.241.39.1" in f[0]["detail"]
    assert (
        "the snapshot holds no ResourceSlice of compute-domain.nvidia.com for 10.241.39.1" in f[0]["detail"]
    )
    assert "kubectl get resourceslices --field-selector spec.nodeName=10.241.39.1" in f[0]["commands"]
    first = summary_of(load_files(HERE / "dra-driver-not-registered.yaml")).first_step
    assert first.startswith("no Pending GPU pod is blocked, but look at the warning: DRA driver")


def test_explain_bound_pod_leaves_its_own_use_out_dra_814(tmp_path: Path) -> None:
    """explain on a bound pod "as if it were pending" counted the pod itself on its node: its own hostPort 2222
    made 10.241.39.1 refuse it (NodePorts), and its own 4 GPUs filled the node."""
    res = CliRunner().invoke(
        cli,
        ["explain", "default/nccl-test-worker-0", "--snapshot", str(HERE / "dra-driver-not-registered.yaml")],
        terminal_width=300,
    )
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "its own requests and host ports on 10.241.39.1 left out" in out
    assert "schedulable: kube-scheduler would bind it to 10.241.39.1" in out
    assert "didn't have free ports" not in out
