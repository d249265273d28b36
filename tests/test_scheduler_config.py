"""``--scheduler-config``: a KubeSchedulerConfiguration v1 read as kube-scheduler reads it, and what it asks that
kubegpu cannot reproduce named in the output; the live scheduler's "compatible with" release.

The configurations follow the examples of the Kubernetes documentation "Scheduler Configuration"
(https://kubernetes.io/docs/reference/scheduling/config/: ``multiPoint`` enable/disable, a score plugin
disabled, ``pluginConfig`` args) and kube-scheduler's merge rule (``apis/config/v1/default_plugins.go``
``mergePlugins``); expected plugin lists are derived by hand from the default profile in ``scheduler.registry``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.errors import ConfigError
from kubegpu.model import parse
from kubegpu.scheduler.framework import Framework
from kubegpu.scheduler.kube_config import parse_scheduler_config
from kubegpu.scheduler.registry import in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import snapshot_of

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "volumes" / "issue-81020.yaml"


def config(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": list(profiles)}  # fmt: skip


def test_multipoint_and_score_edits() -> None:
    """The docs' "disable a score plugin" and "multiPoint" examples: ImageLocality's score off (weight 0, so it
    is not scored), NodeResourcesFit's score weight 5, NodeVolumeLimits disabled everywhere (removed)."""
    cfg = parse_scheduler_config(config({"schedulerName": "default-scheduler", "plugins": {
        "score": {"disabled": [{"name": "ImageLocality"}], "enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
        "multiPoint": {"disabled": [{"name": "NodeVolumeLimits"}]},
    }}), "ksc.yaml", "1.33")  # fmt: skip
    p = cfg.profile(None)
    weights = {s.name: s.weight for s in p.plugins}
    assert (
        weights["ImageLocality"] == 0
        and weights["NodeResourcesFit"] == 5
        and "NodeVolumeLimits" not in weights
    )
    assert weights["TaintToleration"] == 3 and p.unmodelled == ()


def test_preemption_disabled_at_postfilter_leaves_no_preemption_text() -> None:
    """DefaultPreemption has only PostFilter: disabling it there removes it, and FitError then carries no
    PostFilter message: the histogram alone, "0/1 nodes are available: 1 Insufficient cpu."."""
    cfg = parse_scheduler_config(
        config({"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}), "k", "1.33"
    )
    snap = snapshot_of(make_node("a").capacity(cpu="1", memory="1Gi").obj())
    from kubegpu.scheduler.cluster import ClusterState

    s = Scheduler(Framework(cfg.profile(None), in_tree_registry()), ClusterState(snap.nodes, snap.pods))
    result = s.schedule_one(parse.parse_pod(make_pod("p").requests(cpu="2").obj(), "t"))
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_what_cannot_be_reproduced_is_named() -> None:
    """An out-of-tree plugin, a plugin disabled at filter only, args no kubegpu plugin reads: each a line."""
    cfg = parse_scheduler_config(config({"schedulerName": "gpu", "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "filter": {"disabled": [{"name": "TaintToleration"}]},
    }, "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"},
                                                              "futureKnob": True}}]}), "k")  # fmt: skip
    notes = cfg.profile("gpu").unmodelled
    assert any("Coscheduling" in n for n in notes)
    assert any("TaintToleration disabled at filter only" in n for n in notes)
    assert any("futureKnob not modelled" in n for n in notes)
    fit = next(s for s in cfg.profile("gpu").plugins if s.name == "NodeResourcesFit")
    assert fit.args["scoringStrategy"] == {"type": "MostAllocated"}


@pytest.mark.parametrize(("doc", "field"), [
    ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"}, "apiVersion"),
    (config({"plugins": {"score": {"enabled": [{"name": "X", "weight": -1}]}}}), "profiles[0].plugins.score.enabled[0].weight"),
    (config({"plugins": {"filters": {}}}), "unknown extension point"),
])  # fmt: skip
def test_bad_configuration_is_one_error_naming_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_scheduler_config(doc, "ksc.yaml")


def test_cli_marks_the_verdict_unverified(tmp_path: Path) -> None:
    path = tmp_path / "ksc.yaml"
    path.write_text(json.dumps(config({"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}})))
    result = CliRunner().invoke(cli, ["explain", "default/gamelanguage-svc", "--snapshot", str(FIXTURE),
                                      "--scheduler-config", str(path), "-o", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["verified"] is False and "Coscheduling" in data["unverified"][0]


class _Api:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def get(self, path: str) -> Any:
        assert path == "/version"
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_live_scheduler_is_compatible_with_the_api_server() -> None:
    """``kubegpu scheduler``: --kube-version first, else the API server's /version (a vendor form such as
    EKS's), else the newest supported (versions.choose)."""
    from kubegpu.cli.live_cmd import _compatible_with
    from kubegpu.kube.client import ApiError
    from kubegpu.scheduler.versions import BEHAVIOURS, NEWEST

    assert _compatible_with(_Api({"gitVersion": "v1.33.5-eks-113cf36"}), None) == "1.33"  # type: ignore[arg-type]
    assert _compatible_with(_Api({"gitVersion": "v1.33.5"}), "1.35") == "1.35"  # type: ignore[arg-type]
    down = ApiError(0, "", "connection refused", "GET", "/version")
    assert _compatible_with(_Api(down), None) == BEHAVIOURS[NEWEST].name  # type: ignore[arg-type]
