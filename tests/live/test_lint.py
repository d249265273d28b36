"""``kubegpu lint FILE…`` as a real process on manifests: the webhook's rules offline, for CI.

Pins the exit-status contract (0 clean, 1 violations, 2 unreadable input), one line per violation
(``file: Kind ns/name: field: message [rule]``), Namespaces in the files supplying the opt-out label,
and Nodes in the files supplying the offered resource names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.live.conftest import gpu_node, gpu_pod
from tests.live.lint_cli import lint, write


def lint_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``kubegpu lint`` as a separate process, for the exit-status contract CI relies on."""
    return subprocess.run(
        [sys.executable, "-m", "kubegpu.cli.live_cmd", "lint", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_findings_exit_1_with_one_line_each_and_opted_out_namespaces_are_skipped(tmp_path: Path) -> None:
    tolerating = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("web", 0)}
    tolerating["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    tolerating["spec"]["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    hostdev = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("hostdev", 1)}
    hostdev["spec"]["volumes"] = [{"name": "dev", "hostPath": {"path": "/dev/"}}]
    sandboxed = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("sandboxed", 1, namespace="sandbox")}
    sandboxed["spec"]["volumes"] = [{"name": "dev", "hostPath": {"path": "/dev"}}]
    opt_out = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "sandbox", "labels": {"kubegpu.io/admission": "disabled"}}}  # fmt: skip
    manifest = write(tmp_path / "pods.yaml", tolerating, hostdev, opt_out, sandboxed)

    result = lint(str(manifest))

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"{manifest}: Pod ml/web: spec.tolerations: tolerates the GPU taint but requests no GPU: a toleration only "
        "allows, it neither attracts nor allocates, and the pod takes GPU nodes' CPU and memory. Fix: "
        "request nvidia.com/gpu, or drop the toleration. [toleration-without-gpu]",
        f'{manifest}: Pod ml/hostdev: spec.volumes[0].hostPath.path: hostPath "/dev/" is not allowed in GPU namespace '
        '"ml": mounting /dev or /dev/nvidia* (or /dev/char, /run/nvidia, or a directory above one) exposes GPUs the pod was not allocated. Fix: remove the volume; '
        "the device plugin injects the allocated devices. [host-dev]",
    ]


def test_clean_manifests_exit_0_and_json_output_lists_rules(tmp_path: Path) -> None:
    clean = write(tmp_path / "clean.yaml", {"apiVersion": "v1", "kind": "Pod", **gpu_pod("ok", 2)})
    assert lint(str(clean)).returncode == 0

    mig = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mig", "namespace": "ml"},
           "spec": {"template": {"spec": {**gpu_pod("mig", 1)["spec"], "restartPolicy": "Never"}}}}  # fmt: skip
    mig["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-3g.40gb": "1"}
    }
    node = {"apiVersion": "v1", "kind": "Node", **gpu_node("gpu-1")}
    result = lint(str(write(tmp_path / "job.yaml", mig, node)), "-o", "json")
    assert result.returncode == 1
    assert [(r["object"], r["rule"], r["field"]) for r in json.loads(result.stdout)] == [
        ("Job ml/mig", "unknown-resource", "spec.template.spec.containers[0].resources"),
    ]


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\nmetadata: [unclosed\n")
    result = lint_process(str(broken), str(tmp_path / "missing.yaml"))
    assert result.returncode == 2
    assert f"error: {broken}: invalid YAML" in result.stderr
    assert f"error: {tmp_path / 'missing.yaml'}: no such file or directory" in result.stderr


def test_the_rules_load_without_any_api_client() -> None:
    """Layering (design §8.2): the admission rules are pure; only kubegpu.kube / kubegpu.live talk HTTP."""
    code = "import json, sys, kubegpu.admission.lint; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert loaded.isdisjoint({"kubernetes", "urllib3", "prometheus_client", "click", "grpc"})


def test_a_pod_asking_for_a_sharing_mode_its_pool_does_not_run_is_reported(tmp_path: Path) -> None:
    """R7.3 (one sharing mode per pool): the inference pool time-slices (GFD labels it
    ``nvidia.com/gpu.sharing-strategy=time-slicing`` and its renamed resource is ``nvidia.com/gpu.shared``),
    so a pod that selects that pool but asks for a whole ``nvidia.com/gpu`` can never run there."""
    pool = "accelerator.example.com/pool"
    train = {"apiVersion": "v1", "kind": "Node",
             **gpu_node("train-1", labels={pool: "training", "nvidia.com/gpu.sharing-strategy": "none"})}  # fmt: skip
    infer = {"apiVersion": "v1", "kind": "Node",
             **gpu_node("infer-1", gpus=0, labels={pool: "inference", "nvidia.com/gpu.sharing-strategy": "time-slicing"})}  # fmt: skip
    del infer["status"]["capacity"]["nvidia.com/gpu"]
    infer["status"]["capacity"]["nvidia.com/gpu.shared"] = "16"
    wrong = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("whole-on-shared", 1)}
    wrong["spec"]["nodeSelector"] = {pool: "inference"}
    right = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("whole-on-training", 1)}
    right["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": pool, "operator": "In", "values": ["training"]}]}]}}}  # fmt: skip
    manifest = write(tmp_path / "pools.yaml", train, infer, wrong, right)

    result = lint(str(manifest))

    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{manifest}: Pod ml/whole-on-shared: spec.nodeSelector: nvidia.com/gpu is not offered in pool 'inference' "
        "(sharing strategy: time-slicing; it offers nvidia.com/gpu.shared): each pool runs one GPU sharing mode. "
        "Fix: request what the pool offers, or target a pool that offers nvidia.com/gpu. [pool-sharing-mode]"
    ]
