"""What the live tests read back from the emulated API server and the components: a pod's node, events and
PodScheduled condition, the bindings made, a component's /metrics; shared by the live test modules."""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from typing import Any

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component

COSCHEDULING = "podgroups.scheduling.x-k8s.io"
QUEUES = "gpuqueues.kubegpu.io"


def node_of(api: RunningApiServer, name: str, namespace: str = "ml") -> str:
    pod = api.emulator.get("pods", namespace, name)
    return str((pod or {}).get("spec", {}).get("nodeName") or "")


def settled_events(api: RunningApiServer, name: str, count: int) -> list[dict[str, Any]]:
    """The pod's events once there are ``count`` (the event is written after the binding succeeds)."""
    return wait_until(
        lambda: len(events := events_for(api, name)) >= count and events, what=f"{count} events"
    )  # type: ignore[no-any-return]


def events_for(api: RunningApiServer, name: str) -> list[dict[str, Any]]:
    return [e for e in api.emulator.objects("events") if e["regarding"]["name"] == name]


def scheduled_condition(api: RunningApiServer, name: str) -> dict[str, Any] | None:
    pod = api.emulator.get("pods", "ml", name) or {}
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None)


def binding_count(api: RunningApiServer) -> Counter[str]:
    return Counter(key for key, _, _ in api.emulator.bindings)


def metrics_of(component: Component) -> str:
    port = re.search(r"/metrics on port (\d+)", component.output())
    assert port, component.output()
    with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=5) as r:
        return str(r.read().decode())


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def message_of(api: RunningApiServer, name: str) -> str:
    condition = scheduled_condition(api, name) or {}
    return str(condition.get("message") or "") if condition.get("status") == "False" else ""
