"""The deploy manifests: the DaemonSet mounts kubelet's pod-resources directory and /var/run/cdi, runs with hostPID,
probes /healthz, and passes flags the ``exporter`` command accepts.

(``deploy/prometheus/scrape-config.yaml`` is not checked with promtool: Debian builds Prometheus without
Kubernetes service discovery, so its promtool rejects ``kubernetes_sd_configs``.)"""

from __future__ import annotations

from pathlib import Path

import yaml
from exporter_helpers import REPO

from kubegpu.cli.exporter_cmd import exporter

DEPLOY = REPO / "deploy"


def _objects(path: Path) -> dict[str, dict]:
    return {o["kind"]: o for o in yaml.safe_load_all(path.read_text()) if o}


def test_daemonset_mounts_pod_resources_and_cdi_specs_and_probes_healthz() -> None:
    ds = _objects(DEPLOY / "exporter" / "daemonset.yaml")["DaemonSet"]
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostPID"] is True  # NVML's PIDs are host PIDs; /proc/<pid>/cgroup must be the host's
    # /var/run/cdi: where NVIDIA's DRA driver writes each claim's CDI spec (kubegpu.exporter.dra_devices).
    paths = ["/var/lib/kubelet/pod-resources", "/var/run/cdi"]
    assert [v["hostPath"]["path"] for v in spec["volumes"]] == paths
    (container,) = spec["containers"]
    assert [m["mountPath"] for m in container["volumeMounts"]] == paths
    assert all(m["readOnly"] for m in container["volumeMounts"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["ports"][0]["containerPort"] == 9400


def test_daemonset_args_are_flags_the_exporter_command_accepts() -> None:
    container = _objects(DEPLOY / "exporter" / "daemonset.yaml")["DaemonSet"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["command"] == ["kubegpu", "exporter"]
    ctx = exporter.make_context("exporter", list(container["args"]))
    assert ctx.params["kubernetes"] is True
    assert ctx.params["resource_names"] == ("nvidia.com/gpu.shared",)
