"""A Running pod bound to a node that now advertises its device plugin resource at 0 holds devices kubelet
gave it and waits for nothing; it was told it "waits for" the resource (QA round 16, findings.py generic
branch). kubelet writes 0 for a resource whose plugin registration ended (kubernetes/kubernetes
pkg/kubelet/cm/devicemanager/manager.go GetCapacity's deleted resources, pkg/kubelet/nodestatus/setters.go
MachineInfo sets their capacity to 0). The fixture is NVIDIA/k8s-device-plugin#1228 (its header cites it)."""

from __future__ import annotations

from pathlib import Path

from tests.realcases.cases import HERE, diagnosed

FIXTURE = HERE / "dp-1228-running-holder-capacity-zero.yaml"


def test_running_holder_is_not_told_it_waits_dp_1228(tmp_path: Path) -> None:
    data = diagnosed(FIXTURE)
    about = [f for f in data["findings"] if "pod/ml/trainer-0" in f["objects"]]
    assert [(f["severity"], f["title"]) for f in about] == [
        ("warning", "pod holds nvidia.com/gpu on gpu-node-7, which no node advertises now")
    ]
    assert "It keeps running on the devices it was given; recreated" in about[0]["detail"]
    # capacity drops to 0 only once the stopped plugin's endpointStopGracePeriod (5 minutes) has passed
    # (pkg/kubelet/cm/devicemanager types.go, manager.go GetCapacity): not as soon as its registration ends
    assert (
        "five minutes (endpointStopGracePeriod) after the device plugin's registration ends"
        in about[0]["detail"]
    )
    assert about[0]["objects"] == ["pod/ml/trainer-0", "node/gpu-node-7"]
    # the same pod not yet bound does wait for it
    pending = tmp_path / "pending.yaml"
    text = FIXTURE.read_text(encoding="utf-8")
    head, pod = text.rsplit("---\n", 1)
    assert "  nodeName: gpu-node-7\n" in pod and "phase: Running" in pod  # (else the edit below does nothing)
    pod = pod.replace("  nodeName: gpu-node-7\n", "").replace("phase: Running", "phase: Pending")
    pending.write_text(head + "---\n" + pod, encoding="utf-8")
    about = [f for f in diagnosed(pending)["findings"] if "pod/ml/trainer-0" in f["objects"]]
    assert [(f["severity"], f["title"]) for f in about] == [
        ("critical", "pod waits for nvidia.com/gpu, which no node advertises")
    ]


def test_a_holder_whose_container_crash_loops_is_not_said_to_run(tmp_path: Path) -> None:
    """The same pod once its program fails on the node and kubelet backs off restarting it (CrashLoopBackOff, exit
    code 1, kubelet's back-off text as posted in NVIDIA/nvidia-container-toolkit#1239; a GPU program failing so
    on a node whose devices went away: "Failed to initialize NVML: Unknown Error", nvidia-container-toolkit#48).
    Its phase stays Running (Kubernetes' Pod lifecycle: Running while a container is restarting) and it still holds
    the GPU (kubelet's device manager frees only a terminated pod's devices: UpdateAllocatedDevices), but it does
    not run: the finding names the back-off and does not say it keeps running."""
    running = (
        "containerStatuses: [{name: main, ready: true, restartCount: 0, state: {running: {startedAt: "
        '"2025-04-08T10:00:00Z"}}}]'
    )
    crashing = (
        "containerStatuses: [{name: main, ready: false, restartCount: 6, state: {waiting: {reason: CrashLoopBackOff, "
        'message: "back-off 5m0s restarting failed container=main pod=trainer-0_ml(8d0c1a2b-3c4d-4e5f-9a6b-7c8d9e0f1a2b)"}}, '
        "lastState: {terminated: {reason: Error, exitCode: 1}}}]"
    )
    head, pod = FIXTURE.read_text(encoding="utf-8").rsplit("---\n", 1)
    assert running in pod
    pod = pod.replace(running, crashing).replace(
        '{type: Ready, status: "True"}', '{type: Ready, status: "False"}'
    )
    path = tmp_path / "crashing.yaml"
    path.write_text(head + "---\n" + pod, encoding="utf-8")
    about = [f for f in diagnosed(path)["findings"] if "pod/ml/trainer-0" in f["objects"]]
    assert [f["title"] for f in about] == [
        "pod holds nvidia.com/gpu on gpu-node-7, which no node advertises now"
    ]
    assert "keeps running" not in about[0]["detail"]
    assert "CrashLoopBackOff (restarts 6)" in about[0]["detail"]


def _waiting(tmp_path: Path, state: str) -> str:
    """The detail of the holder's one finding once its container ``main`` waits in ``state`` (after a restart)."""
    running = (
        "containerStatuses: [{name: main, ready: true, restartCount: 0, state: {running: {startedAt: "
        '"2025-04-08T10:00:00Z"}}}]'
    )
    head, pod = FIXTURE.read_text(encoding="utf-8").rsplit("---\n", 1)
    assert running in pod
    waiting = (
        f"containerStatuses: [{{name: main, ready: false, restartCount: 2, state: {{waiting: {state}}}}}]"
    )
    path = tmp_path / "waiting.yaml"
    path.write_text(head + "---\n" + pod.replace(running, waiting), encoding="utf-8")
    about = [f for f in diagnosed(path)["findings"] if "pod/ml/trainer-0" in f["objects"]]
    assert len(about) == 1, [f["title"] for f in about]
    detail: str = about[0]["detail"]
    return detail


def test_a_holder_waiting_for_its_image_or_its_config_is_not_said_to_be_restarted(tmp_path: Path) -> None:
    """kubelet restarts a container that exited only as the pod's restartPolicy allows (CrashLoopBackOff is that
    restart's back-off), but starts one not running for a cause before it starts whatever the policy: an image it
    cannot pull it retries with back-off (Kubernetes docs, Images: ImagePullBackOff, "Kubernetes will keep trying
    to pull the image, with an increasing back-off delay"); a container it cannot create it tries again (kubernetes
    pkg/kubelet/container/helpers.go ShouldContainerBeRestarted: "If the container was never started before, we
    should start it"). Before, both were said to be restarted, as a crash-looping one is."""
    pulls = _waiting(
        tmp_path, '{reason: ImagePullBackOff, message: "Back-off pulling image \\"pytorch/pytorch\\""}'
    )
    assert "restarts its containers" not in pulls and "retries the image pull with back-off" in pulls
    config = _waiting(
        tmp_path, '{reason: CreateContainerConfigError, message: "configmap \\"trainer\\" not found"}'
    )
    assert "restarts its containers" not in config and "tries again to start its containers" in config
    crash = _waiting(
        tmp_path, '{reason: CrashLoopBackOff, message: "back-off 40s restarting failed container"}'
    )
    assert "restarts its containers on them" in crash
