"""Which NVIDIA k8s-device-plugin release runs, and what differs between releases in what it refuses.

kubegpu models the plugin as v0.20.0 (``plugin_config`` parses its config as v0.20.0 does); where the
snapshot shows the plugin's image (``nvcr.io/nvidia/k8s-device-plugin:v0.16.2``) the release in use
decides three things, each checked against the tags of NVIDIA/k8s-device-plugin:

* the text of the refusal of more than one shared replica in one container. v0.12.0–v0.14.x
  (``cmd/nvidia-device-plugin/server.go``, then ``internal/plugin/server.go`` ``Allocate``):
  ``request for '<resource>: <n>' too large: maximum request size for shared resources is 1``. From
  v0.15.0 ``Allocate`` wraps ``rm.ValidateRequest``'s error (``internal/rm/rm.go``) as
  ``invalid allocation request for "<resource>": invalid request: maximum request size for shared
  resources is 1; found <n>``;
* the text of the refusal of an unknown device id (``unknown_device_text``), checked by ``Allocate``
  itself before v0.15.0 and by ``rm.ValidateRequest`` (before the replica check) from v0.15.0;
* whether MPS honours ``failRequestsGreaterThanOne``. v0.15.0–v0.19.x ``ValidateRequest`` ignores it for
  MPS and always refuses more than one replica; v0.20.0 (PR #1762, "fix(mps): honor
  failRequestsGreaterThanOne") refuses only while it is true, and ``config.go`` ``NewConfig`` defaults it
  to true for MPS (what ``ResourcePlan.fail_requests_greater_than_one`` holds).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.devices.sharing import ResourcePlan, SharingStrategy
from kubegpu.model.objects import image_repo_tag

PLUGIN_IMAGE = "k8s-device-plugin"  # NVIDIA's image name, in nvcr.io and in the GPU Operator's values
_TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, order=True, slots=True)
class PluginVersion:
    """A k8s-device-plugin release, and whether it was read from the cluster or assumed."""

    major: int
    minor: int
    patch: int = 0
    # not read from any image: the newest release kubegpu models (never part of the ordering)
    assumed: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    def described(self) -> str:
        """``v0.16.2``, or ``v0.20.0, assumed: …`` when no plugin image said which release runs."""
        if self.assumed:
            return f"{self}, assumed: no plugin image in the snapshot, the newest release kubegpu models"
        return str(self)


NEWEST = PluginVersion(0, 20, 0, assumed=True)
VALIDATE_REQUEST = PluginVersion(0, 15, 0)  # Allocate wraps rm.ValidateRequest's error from here on
MPS_HONOURS_FAIL = PluginVersion(0, 20, 0)  # PR #1762


def version_of_image(image: str) -> PluginVersion | None:
    """``nvcr.io/nvidia/k8s-device-plugin:v0.16.2`` → v0.16.2; another image, a digest or no tag → None."""
    repo, tag = image_repo_tag(image)
    m = _TAG.match(tag) if repo == PLUGIN_IMAGE and tag else None
    if m is None:
        return None
    return PluginVersion(int(m[1]), int(m[2]), int(m[3] or 0))


def version_in_use(images: Iterable[str]) -> PluginVersion:
    """The plugin release among ``images`` (the oldest when several differ: a rollout not finished), or
    ``NEWEST`` (assumed) when none is the NVIDIA plugin's."""
    found = [v for v in map(version_of_image, images) if v is not None]
    return min(found) if found else NEWEST


def refuses_more_than_one(plan: ResourcePlan, version: PluginVersion = NEWEST) -> bool:
    """Whether the plugin refuses more than one replica of ``plan`` in one container (``ValidateRequest``)."""
    if not plan.shared:
        return False
    if plan.sharing is SharingStrategy.MPS and version < MPS_HONOURS_FAIL:
        return True  # v0.15–v0.19: MPS ignores failRequestsGreaterThanOne
    return plan.fail_requests_greater_than_one


def _invalid_request(resource: str, problem: str) -> str:
    # v0.15.0+ server.go Allocate: fmt.Errorf("invalid allocation request for %q: %w", ...) around
    # rm.go ValidateRequest's fmt.Errorf("%w: ...", errInvalidRequest) (errInvalidRequest = "invalid request").
    return f'invalid allocation request for "{resource}": invalid request: {problem}'


def shared_request_text(resource: str, n: int, version: PluginVersion = NEWEST) -> str:
    """The plugin's refusal of ``n`` > 1 replicas of ``resource`` in one container, as ``version`` words it."""
    if version < VALIDATE_REQUEST:
        return f"request for '{resource}: {n}' too large: maximum request size for shared resources is 1"
    return _invalid_request(resource, f"maximum request size for shared resources is 1; found {n}")


def unknown_device_text(resource: str, device_id: str, version: PluginVersion = NEWEST) -> str:
    """The plugin's refusal of an id it does not advertise, as ``version`` words it: before v0.15.0
    ``Allocate``'s own check (``invalid allocation request for '<resource>': unknown device: <id>``), from
    v0.15.0 ``rm.ValidateRequest``'s, wrapped by ``Allocate``."""
    if version < VALIDATE_REQUEST:
        return f"invalid allocation request for '{resource}': unknown device: {device_id}"
    return _invalid_request(resource, f"unknown device: {device_id}")


def why_refused(plan: ResourcePlan, version: PluginVersion = NEWEST) -> str:
    """What makes the plugin refuse more than one replica of ``plan``: the sharing mode and its setting."""
    if plan.sharing is SharingStrategy.MPS:
        if version < MPS_HONOURS_FAIL:
            return (
                f"the device plugin ({version.described()}) shares {plan.name} with MPS, and before v0.20.0 MPS "
                "refuses more than 1 replica per container whatever failRequestsGreaterThanOne says"
            )
        return (
            f"the device plugin ({version.described()}) shares {plan.name} with MPS with "
            "sharing.mps.failRequestsGreaterThanOne true (its default): it refuses more than 1 replica per container"
        )
    return (
        f"the device plugin ({version.described()}) time-slices {plan.name} with "
        "sharing.timeSlicing.failRequestsGreaterThanOne true: it refuses more than 1 replica per container"
    )
