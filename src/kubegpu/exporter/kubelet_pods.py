"""Pod UID and container ID to namespace, pod and container names, from kubelet's ``/pods`` (R13.4).

A process's cgroup names its pod by UID and its container by runtime ID (``kubegpu.exporter.cgroups``);
kubelet's Pod Resources API names pods by namespace and name only. kubelet's authenticated endpoint
``https://<node>:10250/pods`` (a ``PodList`` of the pods bound to that node, with ``metadata.uid`` and
``status.containerStatuses[].containerID``) joins the two without listing the whole cluster. The
exporter's service account needs ``nodes/proxy`` get (see ``deploy/exporter``).

Must not: talk to the API server (``kubegpu.kube`` owns that), or repair a malformed object: it raises
``InputError`` naming the source, the pod and the field.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kubegpu.errors import InputError

# Prefixes CRI runtimes put before the ID in containerStatuses[].containerID.
_RUNTIME_PREFIXES = ("containerd://", "cri-o://", "docker://")


@dataclass(frozen=True, slots=True, order=True)
class ContainerRef:
    """One container by name, as Prometheus labels name it (dcgm-exporter's pod/namespace/container)."""

    namespace: str
    pod: str
    container: str


@dataclass(frozen=True, slots=True)
class PodIndex:
    """Lookups from cgroup identities to names for the pods on one node."""

    pods: dict[str, tuple[str, str]] = field(default_factory=dict)  # uid -> (namespace, name)
    containers: dict[str, str] = field(default_factory=dict)  # container ID -> container name

    def container(self, pod_uid: str, container_id: str) -> ContainerRef | None:
        pod = self.pods.get(pod_uid)
        if pod is None:
            return None
        return ContainerRef(pod[0], pod[1], self.containers.get(container_id, ""))


def parse_pod_list(raw: object, *, source: str) -> PodIndex:
    """Index a decoded ``PodList``; a pod without namespace, name or uid raises ``InputError``."""
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        raise InputError("not a PodList: no items list", source=source, field="items")
    index = PodIndex()
    for i, pod in enumerate(raw["items"]):
        meta = pod.get("metadata") if isinstance(pod, dict) else None
        if not isinstance(meta, dict):
            raise InputError("pod has no metadata", source=source, field=f"items[{i}].metadata")
        ref = f"Pod {meta.get('namespace', '?')}/{meta.get('name', '?')}"
        values = [meta.get(k) for k in ("namespace", "name", "uid")]
        for key, value in zip(("namespace", "name", "uid"), values, strict=True):
            if not isinstance(value, str) or not value:
                raise InputError("missing or not a string", source=source, obj=ref, field=f"metadata.{key}")
        index.pods[str(values[2])] = (str(values[0]), str(values[1]))
        status = pod.get("status") or {}
        for kind in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
            for j, cs in enumerate(status.get(kind) or []):
                container_id, name = cs.get("containerID", ""), cs.get("name")
                if not isinstance(name, str) or not isinstance(container_id, str):
                    raise InputError(
                        "name/containerID not strings", source=source, obj=ref, field=f"status.{kind}[{j}]"
                    )
                for prefix in _RUNTIME_PREFIXES:
                    if container_id.startswith(prefix):
                        index.containers[container_id[len(prefix) :]] = name
    return index


class KubeletPods:
    """Reads kubelet's ``/pods`` with the pod's service-account token; ``()`` returns a fresh index."""

    def __init__(
        self,
        url: str,
        token_file: Path | None = None,
        ca_file: Path | None = None,
        *,
        verify: bool = True,
        timeout_s: float = 5.0,
    ) -> None:
        self.url = url
        self.token_file = token_file
        self.timeout_s = timeout_s
        # Built once: loading the CA store costs ~20 ms, as much as the rest of a scrape.
        self._context: ssl.SSLContext | None = None
        if url.startswith("https:"):
            self._context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
            if not verify:
                # kubelet's serving certificate is often self-signed (no serverTLSBootstrap): nothing vouches for it.
                self._context.check_hostname = False
                self._context.verify_mode = ssl.CERT_NONE

    def __call__(self) -> PodIndex:
        request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        if self.token_file is not None:
            token = self.token_file.read_text(encoding="utf-8").strip()
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self._context) as resp:
                body = resp.read()
        except (urllib.error.URLError, OSError) as exc:
            raise InputError(f"cannot read kubelet pods: {exc}", source=self.url) from exc
        try:
            raw = json.loads(body)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", source=self.url) from exc
        return parse_pod_list(raw, source=self.url)
