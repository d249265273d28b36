"""KAI's GPU reservation pod and NoExecute-tainted GPU nodes (kai-scheduler/KAI-Scheduler#1986, #522).

KAI's binder holds a whole GPU for fractional shares with a reservation pod it creates with spec.nodeName in
kai-resource-reservation (pkg/binder/binding/resourcereservation createResourceReservationPod); on timeout it
deletes it and fails the bind "failed waiting for GPU reservation pod to allocate" (BindingError event on the
share pod). Before kai-scheduler PR #2000 the reservation pod had no tolerations, so kubelet refused it on a
node with a NoExecute taint (#1986, the maintainers: it "can tolerate any 'no schedule' taint, but not
'no-execute' taint"); #2000 gives it the first requesting pod's tolerations. `git tag --contains` in
kai-scheduler/KAI-Scheduler: #2000 (e4594c4c) first in v0.17.0, its v0.16 backport #2006 (43c83f84) after
v0.16.8, released in v0.16.9 ("Reservation pods inherit fractional pod tolerations", release notes); v0.20.0 /
v0.20.1 are November-2025 tags retracted in go.mod (#701/#702) without it. So the taint is the established
cause only where the snapshot shows it; otherwise a note for releases before the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcases.cases import HERE, diagnosed, explain, pending

CASE = "kai-reservation-noexecute"
POD = "test/gpu-fraction-01"
NODE = "ip-10-0-3-143.eu-central-1.compute.internal"
END = "status: {phase: Pending}\n"  # the share pod's last line: objects are added after it


def added(yaml: str) -> tuple[tuple[str, str], ...]:
    return ((END, END + "---\n" + yaml),)


# the reservation pod as KAI before #2000 creates it (createResourceReservationPod at v0.16.8: spec.nodeName,
# the app and gpu-group labels, no tolerations); the name is the one #522's binder error names
RESERVATION = f"""apiVersion: v1
kind: Pod
metadata:
  name: gpu-reservation-{NODE}-vsk92
  namespace: kai-resource-reservation
  labels: {{app: kai-resource-reservation, runai-gpu-group: 3d1c8e0a}}
spec:
  nodeName: {NODE}
  containers:
  - {{name: resource-reservation, image: ghcr.io/nvidia/kai-scheduler/resourcereservation:v0.9.3}}
status: {{phase: Pending}}
"""


def binder(image: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: binder-5df4ff95f5-kk6qc, namespace: kai-scheduler}}
spec:
  nodeName: {NODE}
  containers:
  - {{name: binder, image: "{image}"}}
status: {{phase: Running}}
"""


def test_522_as_posted_names_the_taint_for_old_releases_without_establishing_it() -> None:
    # #522 posts the binder's BindingError but not KAI's release: on v0.16.9 / v0.17.0 on the reservation pod
    # tolerates what the share pod does, and the same error then has another cause
    data = diagnosed(HERE / f"{CASE}.yaml")
    p = pending(data, POD)
    note = next(n for n in p["notes"] if "NoExecute" in n)
    assert f"{NODE}: ai-type=strong:NoExecute" in note
    assert f'binder reported "failed waiting for GPU reservation pod to allocate" on {NODE}' in note
    assert "releases before v0.16.9 / v0.17.0" in note and "does not show" in note
    assert "NoExecute" not in data["summary"]["firstStep"]


def test_a_reservation_pod_without_the_toleration_establishes_it(tmp_path: Path) -> None:
    exp = explain(tmp_path, CASE, POD, added(RESERVATION))
    assert exp.established is not None
    title, note = exp.established
    assert title == "KAI's GPU reservation pod cannot stay on the GPU nodes: their NoExecute taints"
    assert f"kai-resource-reservation/gpu-reservation-{NODE}-vsk92 on {NODE} does not tolerate" in note
    assert "ai-type=strong:NoExecute" in note


def test_a_reservation_pod_with_the_share_pods_tolerations_is_no_evidence(tmp_path: Path) -> None:
    # after #2000 the reservation pod carries the first share pod's tolerations: kubelet admits it
    tolerating = RESERVATION.replace(
        "spec:\n",
        "spec:\n  tolerations:\n  - {effect: NoExecute, key: ai-type, operator: Equal, value: strong}\n",
    )
    exp = explain(tmp_path, CASE, POD, added(tolerating))
    assert exp.established is None or "NoExecute" not in exp.established[0]


@pytest.mark.parametrize(
    ("image", "cause"),
    [
        # #636's install (helm --version v0.9.7; release workflow DOCKER_REGISTRY ghcr.io/nvidia/kai-scheduler)
        ("ghcr.io/nvidia/kai-scheduler/binder:v0.9.7", True),
        ("ghcr.io/kai-scheduler/kai-scheduler/binder:v0.16.8", True),  # the last v0.16 tag before #2006
        ("ghcr.io/kai-scheduler/kai-scheduler/binder:v0.20.1", True),  # retracted, older code
        ("ghcr.io/kai-scheduler/kai-scheduler/binder:v0.16.9", False),  # #2006
        ("ghcr.io/kai-scheduler/kai-scheduler/binder:v0.17.0-fips", False),  # #2000 (chart's global.fips)
    ],
)
def test_the_binder_image_tells_the_release(tmp_path: Path, image: str, cause: bool) -> None:
    exp = explain(tmp_path, CASE, POD, added(binder(image)))
    established = exp.established is not None and "NoExecute" in exp.established[0]
    assert established is cause
    if not cause:  # the fix is there: the taint is no reason for this pod
        assert not any("NoExecute taint" in n for n in exp.notes)


def test_an_old_release_without_the_binders_failure_is_not_established(tmp_path: Path) -> None:
    # the release is before the fix but nothing says the binder tried this pod: a note, not the cause
    edits = (
        *added(binder("ghcr.io/nvidia/kai-scheduler/binder:v0.9.7")),
        ("reason: BindingError", "reason: Bound"),
    )
    edits += (("failed waiting for GPU reservation pod to allocate: ", ""),)
    exp = explain(tmp_path, CASE, POD, edits)
    assert any("a release before the fix" in n for n in exp.notes)
    assert exp.established is None or "NoExecute" not in exp.established[0]


def test_kai_share_with_a_node_without_noexecute_is_not_blamed_on_it(tmp_path: Path) -> None:
    # the same share where the node's NoExecute taint is gone (the maintainers' workaround): no such note
    exp = explain(tmp_path, CASE, POD, (("  - {key: ai-type, value: strong, effect: NoExecute}\n", ""),))
    assert not any("NoExecute taint" in n for n in exp.notes)
