"""The webhook's bypass battery: attempts to reach GPUs past the device plugin (each must be denied, for
the reason named) and legitimate system and workload pods (each must be allowed), as AdmissionReviews
shaped as kube-apiserver sends them (``tests/admission/upstream.py``).

The legitimate set includes the real GPU Operator operands and NVIDIA device plugin (fixtures copied from
NVIDIA/gpu-operator and NVIDIA/k8s-device-plugin, cited in each file) as the DaemonSet controller and
the operator's validator create their pods. The expected reason of each attempt is the field path and a
phrase of the rule's message, written by hand from the rule it must trip (``kubegpu.admission.lint``).

Cluster as the chart's webhook sees it with API access: namespaces ``ml`` (unlabelled; its pods request
GPUs), ``gpu-team`` (labelled ``kubegpu.io/gpu-namespace=true``), ``team-a``, ``logging``, ``storage``,
``gpu-operator``, ``nvidia-device-plugin``; nodes ``gpu-node-1`` (offers nvidia.com/gpu and a MIG profile)
and ``cpu-node-1``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tests.admission.upstream import (
    DAEMONSET_CONTROLLER,
    GPU_NODE,
    daemonset,
    daemonset_pod,
    review,
    validator_pod,
)

SCHEDULER_USER = "system:serviceaccount:kubegpu-system:kubegpu-scheduler"
OPERATOR_USER = "system:serviceaccount:gpu-operator:gpu-operator"
VALIDATOR_USER = "system:serviceaccount:gpu-operator:nvidia-operator-validator"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CUDA = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"
VOID = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]


@dataclass(frozen=True)
class Case:
    name: str
    review: dict[str, Any]
    field: str = ""  # empty: must be allowed
    phrase: str = ""


def pod(name: str, namespace: str = "ml", gpus: int = 1, image: str = CUDA, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [container], "tolerations": [GPU_TOLERATION] if gpus else [], **spec},
    }  # fmt: skip


def cpu_pod(name: str, namespace: str = "team-a", image: str = "nginx:1.27", **spec: Any) -> dict[str, Any]:
    return pod(name, namespace, 0, image, **spec)


def with_container(obj: dict[str, Any], key: str = "containers", **fields: Any) -> dict[str, Any]:
    """``obj`` with its first container of ``key`` (created when absent) updated by ``fields``."""
    out = copy.deepcopy(obj)
    items = out["spec"].setdefault(key, [{"name": key[:-1].lower(), "image": CUDA}])
    items[0].update(fields)
    return out


def with_volume(obj: dict[str, Any], host: str, mount: str = "/host", sub_path: str = "") -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["volumes"] = [{"name": "h", "hostPath": {"path": host, "type": ""}}]
    m: dict[str, Any] = {"name": "h", "mountPath": mount}
    if sub_path:
        m["subPath"] = sub_path
    out["spec"]["containers"][0]["volumeMounts"] = [m]
    return out


def debug(target: dict[str, Any], **container: Any) -> dict[str, Any]:
    """``kubectl debug -it <pod> --image=… --target=main``: an UPDATE of pods/ephemeralcontainers."""
    new = copy.deepcopy(target)
    new["spec"]["ephemeralContainers"] = [
        {"name": "debugger-x7k2p", "image": "busybox:1.36", "targetContainerName": "main", "stdin": True,
         "tty": True, "terminationMessagePolicy": "File", **container}
    ]  # fmt: skip
    return review(new, "alice", "UPDATE", old=target, sub_resource="ephemeralcontainers")


def priv(obj: dict[str, Any], key: str = "containers") -> dict[str, Any]:
    return with_container(obj, key, securityContext={"privileged": True})


def caps(*names: str, key: str = "containers") -> dict[str, Any]:
    return with_container(pod("caps"), key, securityContext={"capabilities": {"add": list(names)}})


def annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"] = annotations
    return out


def deployment(
    name: str,
    template_spec: dict[str, Any],
    namespace: str = "team-a",
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                              "spec": template_spec}},
    }  # fmt: skip


def ds_object(name: str, namespace: str, spec: dict[str, Any], sa: str = "") -> dict[str, Any]:
    if sa:
        spec = {**spec, "serviceAccountName": sa}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }  # fmt: skip


OPERATOR = {
    "driver": "gpu-operator/driver.yaml",
    "container-toolkit": "gpu-operator/container-toolkit.yaml",
    "device-plugin": "gpu-operator/device-plugin.yaml",
    "dcgm-exporter": "gpu-operator/dcgm-exporter.yaml",
    "gpu-feature-discovery": "gpu-operator/gpu-feature-discovery.yaml",
    "mig-manager": "gpu-operator/mig-manager.yaml",
    "operator-validator": "gpu-operator/operator-validator.yaml",
}
MIG = "nvidia.com/mig-1g.10gb"
ALLOCATION = "kubegpu.io/allocated-devices"


def legitimate() -> list[Case]:
    cases = [
        Case(f"operator {name} (DaemonSet pod)", review(daemonset_pod(daemonset(path, "gpu-operator")), DAEMONSET_CONTROLLER))
        for name, path in OPERATOR.items()
    ]  # fmt: skip
    plugin_ds = daemonset("k8s-device-plugin/nvidia-device-plugin.yml", "nvidia-device-plugin")
    gfd_ds = daemonset("k8s-device-plugin/gpu-feature-discovery-daemonset.yaml", "nvidia-device-plugin")
    running = pod("train", node=GPU_NODE)
    claim = pod("dra", gpus=0, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}])
    claim["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    annotated_pod = annotated(running, **{ALLOCATION: '{"main":{"nvidia.com/gpu":["GPU-1"]}}'})
    relabelled = copy.deepcopy(annotated_pod)
    relabelled["metadata"]["labels"] = {"team": "vision"}
    fluent = ds_object("fluent-bit", "logging", {
        "tolerations": [{"operator": "Exists"}],
        # a DaemonSet tolerating the GPU taint runs on every GPU node: it says it wants no GPU (the image's
        # env is not visible to admission; a CUDA base image would set NVIDIA_VISIBLE_DEVICES=all)
        "containers": [{"name": "fluent-bit", "image": "fluent/fluent-bit:3.1",
                        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
                        "volumeMounts": [{"name": "varlog", "mountPath": "/var/log"}]}],
        "volumes": [{"name": "varlog", "hostPath": {"path": "/var/log"}}]})  # fmt: skip
    csi = ds_object("csi-node", "storage", {
        "containers": [{"name": "node", "image": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0",
                        "securityContext": {"privileged": True},
                        "volumeMounts": [{"name": "dev", "mountPath": "/dev"}]}],
        "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]})  # fmt: skip
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "finetune", "namespace": "ml"},
           "spec": {"template": {"spec": {**pod("t")["spec"], "restartPolicy": "Never"}}}}  # fmt: skip
    mig = pod("mig", gpus=0)
    mig["spec"]["containers"][0]["resources"] = {"limits": {MIG: "1"}}
    mig["spec"]["tolerations"] = [GPU_TOLERATION]
    return [
        *cases,
        Case("operator cuda-workload-validation (validator's pod)",
             review(validator_pod("gpu-operator/cuda-workload-validation.yaml"), VALIDATOR_USER)),
        Case("operator plugin-workload-validation (validator's pod)",
             review(validator_pod("gpu-operator/plugin-workload-validation.yaml"), VALIDATOR_USER)),
        Case("operator driver DaemonSet object", review(daemonset(OPERATOR["driver"], "gpu-operator"), OPERATOR_USER)),
        Case("operator device-plugin DaemonSet object",
             review(daemonset(OPERATOR["device-plugin"], "gpu-operator"), OPERATOR_USER)),
        Case("device plugin static manifest (DaemonSet pod)", review(daemonset_pod(plugin_ds), DAEMONSET_CONTROLLER)),
        Case("device plugin static manifest (DaemonSet object)", review(plugin_ds, "admin")),
        Case("gpu-feature-discovery static manifest (DaemonSet pod)", review(daemonset_pod(gfd_ds), DAEMONSET_CONTROLLER)),
        Case("training pod, one GPU", review(pod("train"))),
        Case("training Job, one GPU", review(job)),
        Case("MIG pod", review(mig)),
        Case("CPU Deployment", review(deployment("web", cpu_pod("w")["spec"]))),
        Case("CPU pod with envFrom, off GPU nodes",
             review(with_container(cpu_pod("cfg"), envFrom=[{"configMapRef": {"name": "app"}}]))),
        Case("GPU pod, sidecar with NVIDIA_VISIBLE_DEVICES=void",
             review(with_container(pod("side"), "initContainers", image="busybox:1.36", env=VOID))),
        Case("GPU pod, envFrom with a prefix that cannot make the variable",
             review(with_container(pod("pre"), envFrom=[{"prefix": "APP_", "configMapRef": {"name": "app"}}]))),
        Case("GPU pod, NET_BIND_SERVICE", review(caps("NET_BIND_SERVICE"))),
        Case("GPU pod, dataset hostPath", review(with_volume(pod("data"), "/data/datasets", "/datasets"))),
        Case("GPU pod, CUDA_VISIBLE_DEVICES set", review(with_container(pod("cvd"), env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]))),
        Case("fluent-bit DaemonSet pod tolerating every taint",
             review(daemonset_pod(fluent), DAEMONSET_CONTROLLER)),
        Case("privileged CSI node DaemonSet pod, no GPU toleration",
             review(daemonset_pod(csi, "cpu-node-1"), DAEMONSET_CONTROLLER)),
        Case("privileged CI runner off GPU nodes", review(priv(cpu_pod("dind", image="docker:27-dind")))),
        Case("kubectl debug on a GPU pod with NVIDIA_VISIBLE_DEVICES=void", debug(running, env=VOID)),
        Case("kubectl debug on a CPU pod", debug(cpu_pod("web"))),
        # DRA (resource.k8s.io/v1, NVIDIA/k8s-dra-driver-gpu): the container's GPUs come from its claim
        Case("DRA claim", review(claim)),
        Case("DRA claim in a Deployment", review(deployment("dra", claim["spec"]))),
        Case("scheduler records the allocation", review(annotated_pod, SCHEDULER_USER, "UPDATE", old=running)),
        Case("relabel a pod keeping its allocation", review(relabelled, "alice", "UPDATE", old=annotated_pod)),
        Case("delete a privileged pod", review(priv(pod("gone")), "alice", "DELETE")),
    ]  # fmt: skip


def bypasses() -> list[Case]:
    gpu = pod("train")
    running = pod("train", node=GPU_NODE)
    c0 = "spec.containers[0]"
    host = "hostPath"
    envfrom = "can set NVIDIA_VISIBLE_DEVICES"
    image = "CUDA images set NVIDIA_VISIBLE_DEVICES=all"
    plugin_pod = daemonset_pod(daemonset(OPERATOR["device-plugin"], "team-a"))
    driver_pod = daemonset_pod(daemonset(OPERATOR["driver"], "gpu-operator"))
    default_sa = copy.deepcopy(driver_pod)
    default_sa["spec"]["serviceAccountName"] = "default"
    fake_owner = priv(cpu_pod("agent", tolerations=[GPU_TOLERATION]))
    fake_owner["metadata"]["ownerReferences"] = driver_pod["metadata"]["ownerReferences"]
    named = priv(pod("nvidia-driver-daemonset-x9z"))
    validator_as_other = validator_pod("gpu-operator/cuda-workload-validation.yaml")
    validator_as_other["spec"]["serviceAccountName"] = "default"
    allocation = '{"main":{"nvidia.com/gpu":["GPU-0","GPU-1","GPU-2"]}}'
    changed = annotated(running, **{ALLOCATION: '{"main":{"nvidia.com/gpu":["GPU-1"]}}'})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}]}]}}}  # fmt: skip
    infinite = pod("inf")
    infinite["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1e999999999"}}
    cases = [
        # kubectl debug: ephemeral containers through pods/ephemeralcontainers
        Case("debug privileged", debug(running, securityContext={"privileged": True}), "spec.ephemeralContainers[0].securityContext.privileged", "privileged containers"),
        Case("debug NVIDIA_VISIBLE_DEVICES=all", debug(running, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), "spec.ephemeralContainers[0].env[0]", "set by hand"),
        Case("debug CUDA image", debug(running, image=CUDA), "spec.ephemeralContainers[0].env", image),
        Case("debug SYS_ADMIN", debug(running, env=VOID, securityContext={"capabilities": {"add": ["SYS_ADMIN"]}}), "spec.ephemeralContainers[0].securityContext.capabilities.add", "SYS_ADMIN"),
        Case("debug envFrom NVIDIA_", debug(running, envFrom=[{"prefix": "NVIDIA_", "configMapRef": {"name": "x"}}]), "spec.ephemeralContainers[0].envFrom[0]", envfrom),
        Case("debug on a tolerating CPU pod", debug(cpu_pod("t", tolerations=[GPU_TOLERATION]), securityContext={"privileged": True}), "spec.ephemeralContainers[0].securityContext.privileged", "privileged"),
    ]  # fmt: skip
    for path in ("/dev/./nvidia0", "/dev//nvidia0", "/./dev", "/dev/", "/dev", "/dev/nvidia0/", "/dev/nvidiactl",
                 "/dev/nvidia-uvm", "/dev/nvidia-caps", "/dev/char", "/dev/char/195:0", "/dev/dri", "/run/nvidia/driver",
                 "/run/nvidia", "/var/run/nvidia/driver", "/proc/driver/nvidia", "/", "/run", "/var", "//"):  # fmt: skip
        cases.append(
            Case(f"hostPath {path}", review(with_volume(gpu, path)), "spec.volumes[0].hostPath.path", host)
        )
    cases += [
        Case("hostPath / subPath dev", review(with_volume(gpu, "/", sub_path="dev")), f"{c0}.volumeMounts[0].subPath", '"/dev"'),
        Case("hostPath /var subPath run/nvidia/driver", review(with_volume(gpu, "/var", sub_path="run/nvidia/driver")), f"{c0}.volumeMounts[0].subPath", host),
        Case("hostPath /dev on a tolerating CPU DaemonSet", review(ds_object("agent", "team-a", with_volume(cpu_pod("a", tolerations=[GPU_TOLERATION]), "/dev")["spec"])), "spec.template.spec.volumes[0].hostPath.path", host),
        # envFrom
        # unknown keys on a container without a GPU that can reach GPU nodes (on a GPU container they are a warning:
        # tests/admission/test_qa_tenants.py)
        Case("envFrom ConfigMap, unknown keys", review(with_container(cpu_pod("e", tolerations=[GPU_TOLERATION]), envFrom=[{"configMapRef": {"name": "gpu-env"}}])), f"{c0}.envFrom[0]", "not known"),
        Case("envFrom prefix NVIDIA_", review(with_container(gpu, envFrom=[{"prefix": "NVIDIA_", "configMapRef": {"name": "x"}}])), f"{c0}.envFrom[0]", envfrom),
        Case("envFrom Secret prefix NVIDIA_VISIBLE_", review(with_container(gpu, envFrom=[{"prefix": "NVIDIA_VISIBLE_", "secretRef": {"name": "x"}}])), f"{c0}.envFrom[0]", envfrom),
        Case("envFrom prefix N on a CPU pod", review(with_container(cpu_pod("n"), envFrom=[{"prefix": "N", "configMapRef": {"name": "x"}}])), f"{c0}.envFrom[0]", envfrom),
        Case("envFrom Secret, unknown keys", review(with_container(cpu_pod("s", tolerations=[GPU_TOLERATION]), envFrom=[{"secretRef": {"name": "s"}}])), f"{c0}.envFrom[0]", "not known"),
        Case("envFrom in init container", review(with_container(gpu, "initContainers", envFrom=[{"prefix": "NVIDIA_", "configMapRef": {"name": "x"}}])), "spec.initContainers[0].envFrom[0]", envfrom),
        # explicit env
        Case("env NVIDIA_VISIBLE_DEVICES=all", review(with_container(gpu, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])), f"{c0}.env[0]", "set by hand"),
        Case("env NVIDIA_VISIBLE_DEVICES=0,1 in init", review(with_container(gpu, "initContainers", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}])), "spec.initContainers[0].env[0]", "set by hand"),
        Case("env NVIDIA_VISIBLE_DEVICES valueFrom", review(with_container(cpu_pod("v"), env=[{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k"}}}])), f"{c0}.env[0]", "valueFrom"),
        Case("env NVIDIA_VISIBLE_DEVICES=ALL", review(with_container(gpu, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "ALL"}])), f"{c0}.env[0]", "set by hand"),
    ]  # fmt: skip
    for names in (
        ["SYS_ADMIN"],
        ["CAP_SYS_ADMIN"],
        ["sys_admin"],
        ["Cap_Sys_Admin"],
        ["ALL"],
        ["all"],
        ["CAP_ALL"],
    ):
        cases.append(
            Case(
                f"capabilities {names[0]}",
                review(caps(*names)),
                f"{c0}.securityContext.capabilities.add",
                "is not allowed",
            )
        )
    cases += [
        Case("capabilities SYS_ADMIN in init", review(caps("SYS_ADMIN", key="initContainers")), "spec.initContainers[0].securityContext.capabilities.add", "SYS_ADMIN"),
        Case("hostPID on a GPU pod", review(pod("pid", hostPID=True)), "spec.hostPID", "process or IPC namespace"),
        Case("hostIPC on a GPU pod", review(pod("ipc", hostIPC=True)), "spec.hostIPC", "process or IPC namespace"),
        Case("CDI annotation cdi.k8s.io/", review(annotated(cpu_pod("cdi"), **{"cdi.k8s.io/gpu": "nvidia.com/gpu=all"})), "metadata.annotations[cdi.k8s.io/gpu]", "CDI annotation"),
        Case("CDI annotation nvidia.cdi.k8s.io/", review(annotated(cpu_pod("cdi"), **{"nvidia.cdi.k8s.io/container.main": "management.nvidia.com/gpu=all"})), "metadata.annotations[nvidia.cdi.k8s.io/container.main]", "CDI annotation"),
        Case("CDI annotation in a Deployment template", review(deployment("cdi", cpu_pod("c")["spec"], annotations={"cdi.k8s.io/x": "nvidia.com/gpu=0"})), "spec.template.metadata.annotations[cdi.k8s.io/x]", "CDI annotation"),
        Case("device list: host /dev/null at .../all", review(with_volume(cpu_pod("vm"), "/dev/null", "/var/run/nvidia-container-devices/all")), f"{c0}.volumeMounts[0].mountPath", "device list"),
        Case("device list: /run/nvidia-container-devices/<uuid>", review(with_volume(cpu_pod("vm"), "/dev/null", "/run/nvidia-container-devices/GPU-0")), f"{c0}.volumeMounts[0].mountPath", "device list"),
        Case("device list: emptyDir directory", review(with_container(cpu_pod("vm", volumes=[{"name": "e", "emptyDir": {}}]), volumeMounts=[{"name": "e", "mountPath": "/var/run/nvidia-container-devices"}])), f"{c0}.volumeMounts[0].mountPath", "device list"),
        Case("device list: un-normalised mountPath", review(with_volume(cpu_pod("vm"), "/dev/null", "/var/run//nvidia-container-devices/./all")), f"{c0}.volumeMounts[0].mountPath", "device list"),
        Case("privileged + nodeName of a GPU node", review(priv(cpu_pod("p", nodeName=GPU_NODE))), f"{c0}.securityContext.privileged", "steered to GPU nodes"),
        Case("privileged + nodeSelector gpu.present", review(priv(cpu_pod("p", nodeSelector={"nvidia.com/gpu.present": "true"}))), f"{c0}.securityContext.privileged", "privileged"),
        Case("privileged + affinity gpu.product", review(priv(cpu_pod("p", affinity=affinity))), f"{c0}.securityContext.privileged", "privileged"),
        Case("privileged + NFD PCI label", review(priv(cpu_pod("p", nodeSelector={"feature.node.kubernetes.io/pci-10de.present": "true"}))), f"{c0}.securityContext.privileged", "privileged"),
        Case("privileged + GPU toleration", review(priv(cpu_pod("p", tolerations=[GPU_TOLERATION]))), f"{c0}.securityContext.privileged", "privileged"),
        Case("privileged + tolerate everything", review(priv(cpu_pod("p", tolerations=[{"operator": "Exists"}]))), f"{c0}.securityContext.privileged", "privileged"),
        Case("privileged GPU pod", review(priv(gpu)), f"{c0}.securityContext.privileged", 'GPU namespace "ml"'),
        Case("privileged init container in a GPU pod", review(priv(gpu, "initContainers")), "spec.initContainers[0].securityContext.privileged", "privileged"),
        Case("CUDA sidecar in a GPU pod", review(with_container(gpu, "initContainers", restartPolicy="Always")), "spec.initContainers[0].env", image),
        Case("CUDA pod in a labelled GPU namespace", review(cpu_pod("c", "gpu-team", CUDA)), f"{c0}.env", image),
        Case("CUDA pod steered to GPU nodes", review(cpu_pod("c", image=CUDA, nodeSelector={"nvidia.com/gpu.present": "true"})), f"{c0}.env", image),
        Case("CUDA second container in a GPU pod", review({**gpu, "spec": {**gpu["spec"], "containers": [*gpu["spec"]["containers"], {"name": "tools", "image": CUDA}]}}), "spec.containers[1].env", image),
        # faking an exemption
        Case("tenant pod with a DaemonSet owner reference", review(fake_owner, "alice"), f"{c0}.securityContext.privileged", "privileged"),
        Case("tenant creates the driver pod in gpu-operator", review(driver_pod, "alice", namespace="gpu-operator"), "spec.containers[0].securityContext.privileged", "privileged"),
        Case("DaemonSet pod in gpu-operator, unlisted account", review(default_sa, DAEMONSET_CONTROLLER), "spec.initContainers[0].securityContext.privileged", "privileged"),
        Case("device plugin DaemonSet pod in a tenant namespace", review(plugin_pod, DAEMONSET_CONTROLLER), "spec.initContainers[0].securityContext.privileged", "privileged"),
        Case("validator's account, pod runs as another", review(validator_as_other, VALIDATOR_USER), "spec.initContainers[0].securityContext.privileged", "privileged"),
        Case("operator-like name alone", review(named), f"{c0}.securityContext.privileged", "privileged"),
        Case("tenant DaemonSet object, privileged, tolerating", review(ds_object("miner", "team-a", priv(cpu_pod("m", tolerations=[GPU_TOLERATION]))["spec"])), "spec.template.spec.containers[0].securityContext.privileged", "privileged"),
        Case("operator DaemonSet object in a tenant namespace", review(daemonset(OPERATOR["driver"], "team-a"), "alice"), "spec.template.spec.containers[0].securityContext.privileged", "privileged"),
        # the scheduler's allocation record
        Case("allocation annotation on CREATE", review(annotated(gpu, **{ALLOCATION: allocation})), f"metadata.annotations[{ALLOCATION}]", "only kubegpu's scheduler"),
        Case("allocation annotation changed on UPDATE", review(annotated(running, **{ALLOCATION: allocation}), "alice", "UPDATE", old=changed), f"metadata.annotations[{ALLOCATION}]", "user 'alice'"),
        Case("CPU pod tolerating the GPU taint", review(cpu_pod("t", tolerations=[GPU_TOLERATION])), "spec.tolerations", "requests no GPU"),
        Case("nvidia.com/gpu: 1e999999999", review(infinite), f"{c0}.resources.limits[nvidia.com/gpu]", "quantity out of range"),
    ]  # fmt: skip
    return cases
