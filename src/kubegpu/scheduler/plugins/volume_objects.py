"""What the storage plugins share: how they receive a snapshot's storage objects (the ``volumes`` argument,
a ``model.volumes.VolumeObjects``), which of a pod's volumes use a claim, and ``with_volumes``, which hands a
profile's storage plugins the objects (as ``with_dynamic_resources`` does for DRA).

A profile built without objects gives each plugin an empty ``VolumeObjects`` whose ``seen`` is empty: the
plugins then skip every pod (nothing to check against), and ``explain`` says the volumes were not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, Final

from kubegpu.model.objects import Pod, PodVolume
from kubegpu.model.volumes import VolumeObjects
from kubegpu.scheduler.framework import PluginSpec, Profile
from kubegpu.scheduler.plugins import names

STORAGE_PLUGINS: Final = (
    names.VOLUME_RESTRICTIONS, names.NODE_VOLUME_LIMITS, names.VOLUME_BINDING, names.VOLUME_ZONE,
)  # fmt: skip
CLAIM_KINDS: Final = ("persistentVolumeClaim", "ephemeral")


def objects_of(args: Mapping[str, Any]) -> VolumeObjects:
    got = args.get("volumes")
    return got if isinstance(got, VolumeObjects) else VolumeObjects()


def claim_volumes(pod: Pod) -> Iterator[PodVolume]:
    """The pod's volumes backed by a PersistentVolumeClaim (a named one or a generic ephemeral one)."""
    return (v for v in pod.volumes if v.kind in CLAIM_KINDS)


def checkable(pod: Pod, objects: VolumeObjects) -> bool:
    """The pod uses claims and the snapshot carried PersistentVolumeClaims: the plugins can judge it."""
    return "PersistentVolumeClaim" in objects.seen and any(True for _ in claim_volumes(pod))


def with_volumes(profile: Profile, objects: VolumeObjects, *, binds: bool = True) -> Profile:
    """``profile`` with the snapshot's storage objects given to each storage plugin it has. ``binds=False``
    (the live scheduler, which writes no PV bindings): VolumeBinding refuses pods whose claims it would have
    to bind, saying so, instead of binding the pod beside a claim nobody binds."""
    extra: dict[str, Any] = {"volumes": objects} if binds else {"volumes": objects, "binds": False}
    plugins = tuple(
        PluginSpec(p.name, p.weight, {**p.args, **extra}) if p.name in STORAGE_PLUGINS else p
        for p in profile.plugins
    )
    return replace(profile, plugins=plugins)
