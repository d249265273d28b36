"""What the storage plugins share: which of a pod's volumes use a claim, and whether the storage objects they
read (``Handle.volumes``, a ``model.volumes.VolumeObjects``, given by ``scheduler.assembly`` as the DRA
objects are) let them judge a pod.

A scheduler built without objects gives the plugins an empty ``VolumeObjects`` whose ``seen`` is empty: the
plugins then skip every pod (nothing to check against), and ``explain`` says the volumes were not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from kubegpu.model.objects import Pod, PodVolume
from kubegpu.model.volumes import VolumeObjects

CLAIM_KINDS: Final = ("persistentVolumeClaim", "ephemeral")


def claim_volumes(pod: Pod) -> Iterator[PodVolume]:
    """The pod's volumes backed by a PersistentVolumeClaim (a named one or a generic ephemeral one)."""
    return (v for v in pod.volumes if v.kind in CLAIM_KINDS)


def checkable(pod: Pod, objects: VolumeObjects) -> bool:
    """The pod uses claims and the snapshot carried PersistentVolumeClaims: the plugins can judge it."""
    return "PersistentVolumeClaim" in objects.seen and any(True for _ in claim_volumes(pod))
