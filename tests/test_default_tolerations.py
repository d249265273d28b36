"""A pod read from a manifest (never admitted: no ``metadata.uid``) gets the tolerations kube-apiserver's
DefaultTolerationSeconds admission plugin, on by default, adds at creation; a pod the API server returned is
read as it is (plugin/pkg/admission/defaulttolerationseconds/admission.go, v1.30.14 to v1.37.2: a toleration
counts when its key is empty or the taint's and its effect empty or NoExecute; what is added is key Exists,
NoExecute, 300 s). The real 1.30.14 / 1.33.13 / 1.37.2 kube-scheduler's verdicts on the
``taint-effects-gpu`` manifests (tests/realkube/golden/gpu) rest on it: gpu-drain's unreachable:NoExecute taint
is tolerated there."""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.model.objects import Toleration
from kubegpu.model.parse import parse_pod
from kubegpu.testing.builders import make_pod

NOT_READY = Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300)
UNREACHABLE = Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300)


def _pod(tolerations: list[dict[str, Any]], uid: str = "") -> tuple[Toleration, ...]:
    raw = make_pod("p").gpu(1).obj()
    raw["spec"]["tolerations"] = tolerations
    if uid:
        raw["metadata"]["uid"] = uid
    return tuple(parse_pod(raw).tolerations)


def test_a_manifest_without_them_gets_both() -> None:
    assert _pod([]) == (NOT_READY, UNREACHABLE)


@pytest.mark.parametrize(
    ("own", "added"),
    [
        # an empty key with no effect tolerates every taint: nothing added
        ({"operator": "Exists"}, ()),
        # an empty key with NoExecute tolerates both NoExecute taints
        ({"operator": "Exists", "effect": "NoExecute"}, ()),
        # NoSchedule only: the NoExecute ones are still added
        ({"operator": "Exists", "effect": "NoSchedule"}, (NOT_READY, UNREACHABLE)),
        # the pod's own not-ready toleration (any seconds) stands; only unreachable is added
        ({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
          "tolerationSeconds": 30}, (UNREACHABLE,)),
        # a key with no effect tolerates that key's NoExecute taint too
        ({"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, (NOT_READY,)),
    ],
)  # fmt: skip
def test_only_a_taint_the_pod_does_not_already_tolerate_is_added(
    own: dict[str, Any], added: tuple[Any, ...]
) -> None:
    got = _pod([own])
    assert got[1:] == added and len(got) == 1 + len(added)


def test_a_pod_the_api_server_returned_is_read_as_it_is() -> None:
    """Admitted where the plugin is off (or removed since): adding them would change its verdict."""
    assert _pod([], uid="0b7c5c1e-2f7b-4f0e-9a55-5d2d7f1c9e11") == ()
