"""``deploy/node-agent/daemonset.yaml`` against the Kubernetes OpenAPI schema and the agent's own CLI.

Every document is validated with kubernetes-validate's bundled (offline) strict schemas, which refuse
unknown fields as the API server's strict field validation does, for the oldest and newest Kubernetes
versions kubegpu supports. The DaemonSet must also keep the NVIDIA device plugin's deployment shape:
only kubelet's device plugin directory from the host, no privileged container, the nvidia.com/gpu
taint tolerated, GPU nodes selected by nvidia.com/gpu.present=true; and its command line must parse
with ``kubegpu node device-plugin``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubegpu.cli.node_cmd import device_plugin

MANIFEST = Path(__file__).parents[2] / "deploy" / "node-agent" / "daemonset.yaml"
DOCS: list[dict[str, Any]] = list(yaml.safe_load_all(MANIFEST.read_text()))


def _daemonset() -> dict[str, Any]:
    (ds,) = [d for d in DOCS if d["kind"] == "DaemonSet"]
    return ds


@pytest.mark.parametrize("version", ["1.29.0", "1.33.0", kubernetes_validate.latest_version()])
@pytest.mark.parametrize("doc", DOCS, ids=[d["kind"] for d in DOCS])
def test_every_document_is_valid_against_the_strict_schema(doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_is_caught_by_the_same_validation() -> None:
    # Guards the test above against a schema set that accepts anything.
    ds = _daemonset()
    bad = {
        **ds,
        "spec": {**ds["spec"], "template": {"spec": {"containers": [{"name": "x", "imagePull": "y"}]}}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.33.0", strict=True)


def test_daemonset_mounts_only_the_device_plugin_dir_and_is_not_privileged() -> None:
    spec = _daemonset()["spec"]["template"]["spec"]
    assert [v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v] == [
        "/var/lib/kubelet/device-plugins"
    ]
    assert not spec.get("hostPID") and not spec.get("hostNetwork")
    (container,) = spec["containers"]
    security = container["securityContext"]
    assert security["privileged"] is False and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_daemonset_command_line_is_one_the_agent_accepts() -> None:
    (container,) = _daemonset()["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["kubegpu", "node", "device-plugin"]
    ctx = device_plugin.make_context("device-plugin", list(container["args"]))
    assert ctx.params["plugin_dir"] == Path("/var/lib/kubelet/device-plugins")
