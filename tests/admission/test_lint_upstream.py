"""``kubegpu lint`` shares the webhook's rules offline: the real GPU Operator DaemonSets (fixtures cited in
each file) are clean in the exempt ``gpu-operator`` namespace and denied elsewhere, and ``envFrom`` is
resolved from the ConfigMaps among the files (the webhook, which reads none, says it cannot)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.admission.lint import LintContext, env_sources, lint_object
from tests.admission.battery import OPERATOR, pod, with_container
from tests.admission.upstream import daemonset


@pytest.mark.parametrize("name", sorted(OPERATOR))
def test_operator_daemonsets_lint_clean_only_in_their_namespace(name: str) -> None:
    assert lint_object(daemonset(OPERATOR[name], "gpu-operator"), LintContext()) == []
    rules = {v.rule for v in lint_object(daemonset(OPERATOR[name], "team-a"), LintContext())}
    assert "privileged" in rules  # every operand has a privileged (init) container


def configmap(data: dict[str, str]) -> tuple[str, dict[str, Any]]:
    return (
        "cm.yaml",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "env", "namespace": "ml"},
            "data": data,
        },
    )


def test_env_from_is_resolved_from_the_configmaps_among_the_files() -> None:
    gpu_pod = with_container(pod("train"), envFrom=[{"configMapRef": {"name": "env"}}])
    clean = LintContext(env_sources=env_sources([configmap({"EPOCHS": "3"})]))
    assert lint_object(gpu_pod, clean) == []
    leaking = LintContext(env_sources=env_sources([configmap({"NVIDIA_VISIBLE_DEVICES": "all"})]))
    (violation,) = lint_object(gpu_pod, leaking)
    assert violation.field == "spec.containers[0].envFrom[0]"
    assert "ConfigMap 'env' has the key 'NVIDIA_VISIBLE_DEVICES'" in violation.message
    (unknown,) = lint_object(gpu_pod, LintContext())
    assert "the keys of ConfigMap 'env' are not known here" in unknown.message
