"""A pod bound with its DRA claims allocated, which kubelet cannot start: kubelet's DRA manager must reach the
driver's kubelet plugin on that node first. kubernetes pkg/kubelet/cm/dra/plugin DRAPluginManager.GetPlugin
("DRA driver %s is not registered") and pkg/kubelet/events/event.go (FailedPrepareDynamicResources). The
fixture's header cites kubernetes-sigs/dra-driver-nvidia-gpu#814."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.test_realcases import HERE


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
