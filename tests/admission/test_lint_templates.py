"""``kubegpu lint`` on every workload kind's pod template: the webhook's rules offline, at the template's
field path (CronJob: ``spec.jobTemplate.spec.template``), including workloads inside a ``kind: List``
as ``kubectl get deployments,cronjobs -o yaml`` writes them. Expected lines are written by hand from the
rule texts in ``kubegpu.admission.lint``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.live.conftest import gpu_pod
from tests.live.lint_cli import lint, write

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cpu_spec() -> dict[str, Any]:
    spec: dict[str, Any] = gpu_pod("x", 0)["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return spec


def test_templates_of_every_workload_kind_are_linted_at_their_paths(tmp_path: Path) -> None:
    privileged = gpu_pod("x", 1)["spec"]
    privileged["containers"][0]["securityContext"] = {"privileged": True}
    privileged["restartPolicy"] = "Never"
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "ml"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": {"spec": privileged}}}}}  # fmt: skip
    hostdev = gpu_pod("x", 1)["spec"]
    hostdev["volumes"] = [{"name": "gpu0", "hostPath": {"path": "/dev/nvidia0"}}]
    stateful = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "ml"},
                "spec": {"serviceName": "db", "template": {"spec": hostdev}}}  # fmt: skip
    # a node agent: DaemonSets may tolerate the GPU taint without requesting a GPU, saying they want no GPU
    # (tolerating the taint, a DaemonSet runs on every GPU node: a CUDA image's NVIDIA_VISIBLE_DEVICES=all)
    agent_spec = {**cpu_spec(), "tolerations": [TOLERATION]}
    agent_spec["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "ml"},
             "spec": {"template": {"spec": agent_spec}}}  # fmt: skip
    web_spec = {**cpu_spec(), "tolerations": [TOLERATION]}
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "ml"},
         "spec": {"template": {"spec": web_spec}}}]}  # fmt: skip
    manifest = write(tmp_path / "workloads.yaml", cron, stateful, agent, listed)

    result = lint(str(manifest))

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"{manifest}: CronJob ml/nightly: spec.jobTemplate.spec.template.spec.containers[0].securityContext."
        'privileged: privileged containers are not allowed in GPU namespace "ml": they see every GPU on the node '
        "and bypass the device plugin's allocation. Fix: drop privileged and request nvidia.com/gpu in "
        "resources.limits. [privileged]",
        f'{manifest}: StatefulSet ml/db: spec.template.spec.volumes[0].hostPath.path: hostPath "/dev/nvidia0" is '
        'not allowed in GPU namespace "ml": mounting /dev or /dev/nvidia* (or /dev/char, /run/nvidia, or a directory above one) exposes GPUs the pod was not allocated'
        ". Fix: remove the volume; the device plugin injects the allocated devices. [host-dev]",
        f"{manifest}: ReplicaSet ml/web: spec.template.spec.tolerations: tolerates the GPU taint but requests no "
        "GPU: a toleration only allows, it neither attracts nor allocates, and the pod takes GPU nodes' CPU and "
        "memory. Fix: request nvidia.com/gpu, or drop the toleration. [toleration-without-gpu]",
    ]
