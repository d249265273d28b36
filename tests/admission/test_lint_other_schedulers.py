"""``toleration-without-gpu`` and the GPU asks of other schedulers: a KAI share asks its GPU by pod annotation
and a Volcano vGPU pod by ``volcano.sh/vgpu-*`` resources, neither by ``nvidia.com/gpu``; tolerating the GPU
taint is what such a pod needs, not the pitfall. The lint reads the same rule as ``diagnose``'s finding and
note (``gpu_facts.asks_gpu``; kai-scheduler/KAI-Scheduler#522: the advice "request nvidia.com/gpu, or drop
the toleration" would break a KAI share).

The objects are upstream's own examples plus the GPU toleration:
- KAI: kai-scheduler/KAI-Scheduler docs/gpu-sharing/gpu-sharing.yaml and gpu-memory.yaml (annotations
  ``gpu-fraction: "0.5"`` / ``gpu-memory: "2000"``, schedulerName kai-scheduler, a container without GPU
  resources; docs/gpu-sharing/README.md);
- Volcano: Project-HAMi/volcano-vgpu-device-plugin README "Running VGPU Jobs" (``volcano.sh/vgpu-number: 2``,
  ``volcano.sh/vgpu-memory: 3000``, ``volcano.sh/vgpu-cores: 50``, schedulerName volcano).
"""

from __future__ import annotations

from typing import Any

from kubegpu.admission.lint import LintContext, lint_object

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RULE = "toleration-without-gpu"


def kai_deployment(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-sharing", "namespace": "team-a"},
        "spec": {
            "template": {
                "metadata": {"labels": {"kai.scheduler/queue": "default-queue"}, "annotations": annotations},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "tolerations": [TOLERATION],
                    "containers": [
                        {
                            "name": "gpu-workload",
                            "image": "nvidia/cuda:13.0.2-base-ubi8",
                            "resources": {"limits": {"memory": "1Gi"}},
                        }
                    ],
                },
            }
        },
    }


def rules(obj: dict[str, Any]) -> list[str]:
    return [v.rule for v in lint_object(obj, LintContext())]


def test_kai_share_templates_tolerating_the_gpu_taint_are_not_flagged() -> None:
    assert RULE not in rules(kai_deployment({"gpu-fraction": "0.5"}))
    assert RULE not in rules(kai_deployment({"gpu-memory": "2000"}))


def test_volcano_vgpu_pod_tolerating_the_gpu_taint_is_not_flagged() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu-pod1", "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "tolerations": [TOLERATION],
            "containers": [
                {
                    "name": "cuda-container",
                    "image": "nvidia/cuda:9.0-devel",
                    "resources": {
                        "limits": {
                            "volcano.sh/vgpu-number": "2",
                            "volcano.sh/vgpu-memory": "3000",
                            "volcano.sh/vgpu-cores": "50",
                        }
                    },
                }
            ],
        },
    }
    assert RULE not in rules(pod)


def test_the_same_template_without_any_gpu_ask_is_still_flagged() -> None:
    # no share annotation, no GPU resource, no claim: the toleration lets it onto GPU nodes with no device
    violations = lint_object(kai_deployment({}), LintContext())
    flagged = [v for v in violations if v.rule == RULE]
    assert [v.field for v in flagged] == ["spec.template.spec.tolerations"]
    assert "tolerates the GPU taint but requests no GPU" in flagged[0].message
