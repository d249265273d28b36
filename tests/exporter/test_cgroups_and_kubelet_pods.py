"""PID -> cgroup -> pod UID/container ID, and kubelet's ``/pods`` -> names (R13.4).

The cgroup lines are the layouts kubelet (pkg/kubelet/cm: cgroupfs and systemd drivers, QoS classes)
and the CRI runtimes write; the PodList is kubelet's ``/pods`` answer (a core/v1 PodList).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from exporter_helpers import PodListServer, write_proc

from kubegpu.errors import InputError
from kubegpu.exporter.cgroups import CgroupOwner, owner_of_cgroup, owner_of_pid
from kubegpu.exporter.kubelet_pods import ContainerRef, KubeletPods, parse_pod_list

UID = "1f0d6c2a-8b3e-4e47-9a51-2c7d0e5b9a01"
CID = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID.replace('-', '_')}.slice/cri-containerd-{CID}.scope\n",
            CgroupOwner(UID, CID),
        ),
        (
            f"0::/kubepods.slice/kubepods-pod{UID.replace('-', '_')}.slice/crio-{CID}.scope\n",
            CgroupOwner(UID, CID),
        ),
        (f"0::/kubepods/burstable/pod{UID}/{CID}\n", CgroupOwner(UID, CID)),
        (
            f"12:pids:/kubepods/burstable/pod{UID}/{CID}\n11:memory:/kubepods/burstable/pod{UID}/{CID}\n",
            CgroupOwner(UID, CID),
        ),
        (
            f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID.replace('-', '_')}.slice/docker-{CID}.scope\n",
            CgroupOwner(UID, CID),
        ),
        (f"0::/kubepods/pod{UID}\n", CgroupOwner(UID, "")),
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
        ("0::/system.slice/containerd.service\n", None),
        # dcgm-exporter's looser pattern would take "poda…" here; a pod UID is a full UUID.
        ("0::/system.slice/podman-1234.scope\n", None),
    ],
    ids=[
        "systemd driver, containerd, BestEffort",
        "systemd driver, CRI-O, Guaranteed",
        "cgroupfs driver, Burstable",
        "cgroup v1 controllers",
        "systemd driver, dockershim",
        "pod cgroup without a container",
        "a login session is no pod",
        "a system service is no pod",
        "a podman scope is no pod",
    ],
)
def test_owner_of_cgroup_reads_kubelets_cgroup_layouts(text: str, expected: CgroupOwner | None) -> None:
    assert owner_of_cgroup(text) == expected


def test_a_process_that_has_exited_owns_nothing(tmp_path: Path) -> None:
    proc = write_proc(tmp_path, {7: f"0::/kubepods/pod{UID}/{CID}\n"})
    assert owner_of_pid(proc, 7) == CgroupOwner(UID, CID)
    assert owner_of_pid(proc, 8) is None


def test_pod_list_indexes_uids_and_container_ids_of_every_runtime() -> None:
    raw = {
        "items": [
            {
                "metadata": {"namespace": "ml", "name": "train-0", "uid": UID},
                "status": {
                    "initContainerStatuses": [{"name": "fetch", "containerID": "cri-o://" + "1" * 64}],
                    "containerStatuses": [
                        {"name": "main", "containerID": "containerd://" + CID},
                        {"name": "waiting", "containerID": ""},  # not started yet: no ID
                    ],
                },
            }
        ]
    }
    index = parse_pod_list(raw, source="kubelet")
    assert index.container(UID, CID) == ContainerRef("ml", "train-0", "main")
    assert index.container(UID, "1" * 64) == ContainerRef("ml", "train-0", "fetch")
    assert index.container("00000000-0000-0000-0000-000000000000", CID) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "Status"}, "kubelet: items: not a PodList: no items list"),
        (
            {"items": [{"metadata": {"namespace": "ml", "name": "p"}}]},
            "kubelet: Pod ml/p: metadata.uid: missing or not a string",
        ),
        ({"items": [{"spec": {}}]}, "kubelet: items[0].metadata: pod has no metadata"),
        (
            {
                "items": [
                    {
                        "metadata": {"namespace": "ml", "name": "p", "uid": UID},
                        "status": {"containerStatuses": [{"name": 3}]},
                    }
                ]
            },
            "kubelet: Pod ml/p: status.containerStatuses[0]: name/containerID not strings",
        ),
    ],
    ids=["not a list", "pod without uid", "item without metadata", "container name not a string"],
)
def test_a_malformed_pod_list_is_an_input_error_naming_pod_and_field(raw: object, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_pod_list(raw, source="kubelet")
    assert err.value.one_line() == message


def test_kubelet_pods_sends_the_service_account_token(tmp_path: Path) -> None:
    server = PodListServer()
    server.add_pod("ml", "train-0", UID, {"main": CID})
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    try:
        index = KubeletPods(server.url, token_file=token)()
    finally:
        server.close()
    assert server.auth == ["Bearer s3cret"]
    assert index.container(UID, CID) == ContainerRef("ml", "train-0", "main")


def test_an_unreachable_kubelet_is_an_input_error_naming_the_url() -> None:
    with pytest.raises(InputError, match=r"^http://127.0.0.1:9/pods: cannot read kubelet pods"):
        KubeletPods("http://127.0.0.1:9/pods", timeout_s=2)()


def _self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    # A serving certificate like kubelet's own when serverTLSBootstrap is off: self-signed, for the node's IP.
    cert, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_kubelet_tls_is_verified_against_the_given_ca_or_skipped_when_asked(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path, "kubelet")
    other, _ = _self_signed(tmp_path, "other")
    server = PodListServer(tls=(cert, key))
    server.add_pod("ml", "train-0", UID, {"main": CID})
    try:
        assert KubeletPods(server.url, ca_file=cert)().container(UID, CID) == ContainerRef(
            "ml", "train-0", "main"
        )
        assert KubeletPods(server.url, verify=False)().container(UID, CID) is not None
        with pytest.raises(InputError, match="CERTIFICATE_VERIFY_FAILED"):
            KubeletPods(server.url, ca_file=other)()
    finally:
        server.close()
