"""Parts of a Pod or Node that only a few readers need, parsed for ``model.parse``: a pod's volumes (the
storage plugins and VolumeRestrictions' disks), its containers' states (the device plugin chain: CrashLoopBackOff,
restarts) and a node's images (ImageLocality). Imports only ``model.objects`` and the parse context's protocol."""

from __future__ import annotations

from typing import Any

from kubegpu.model.objects import ContainerState, PodVolume
from kubegpu.model.parse_pod_affinity import ParseContext, Raw


def container_states(ctx: ParseContext, status: Raw) -> tuple[ContainerState, ...]:
    """``status.initContainerStatuses`` and ``status.containerStatuses``: readiness, restarts, and the
    waiting reason (CrashLoopBackOff …) with the last termination's reason when kubelet gives no message."""
    out = []
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for i, c in enumerate(ctx.seq(status.get(key), f"status.{key}")):
            c = ctx.mapping(c, f"status.{key}[{i}]")
            state = ctx.mapping(c.get("state"), f"status.{key}[{i}].state")
            waiting = ctx.mapping(state.get("waiting"), f"status.{key}[{i}].state.waiting")
            last = ctx.mapping(
                ctx.mapping(c.get("lastState"), f"status.{key}[{i}].lastState").get("terminated"),
                f"status.{key}[{i}].lastState.terminated",
            )
            message = str(waiting.get("message") or "")
            if not message and last:
                message = " ".join(
                    str(p)
                    for p in (last.get("reason"), f"exit code {last.get('exitCode')}", last.get("message"))
                    if p
                )
            restarts = c.get("restartCount", 0)
            out.append(
                ContainerState(
                    name=str(c.get("name", "")),
                    init=init,
                    ready=c.get("ready") is True,
                    restarts=restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0,
                    waiting=str(waiting.get("reason") or ""),
                    message=message,
                    running=state.get("running") is not None,
                )
            )
    return tuple(out)


def images(ctx: ParseContext, value: Any) -> tuple[tuple[tuple[str, ...], int], ...]:
    out = []
    for i, img in enumerate(ctx.seq(value, "status.images")):
        img = ctx.mapping(img, f"status.images[{i}]")
        names = tuple(str(n) for n in ctx.seq(img.get("names"), f"status.images[{i}].names"))
        out.append((names, ctx.integer(img.get("sizeBytes"), f"status.images[{i}].sizeBytes")))
    return tuple(out)


# The in-tree disks VolumeRestrictions compares (volume_restrictions.go ``isVolumeConflict``): field → id key
_DISKS = {"gcePersistentDisk": "pdName", "awsElasticBlockStore": "volumeID", "iscsi": "iqn", "rbd": "image"}


def volumes(ctx: ParseContext, value: Any, pod_name: str) -> tuple[PodVolume, ...]:
    out = []
    for i, v in enumerate(ctx.seq(value, "spec.volumes")):
        f = f"spec.volumes[{i}]"
        v = ctx.mapping(v, f)
        name = ctx.string(v.get("name"), f"{f}.name", required=True)
        kind = next((k for k in v if k != "name"), "emptyDir")  # the API server defaults an empty source
        src = ctx.mapping(v.get(kind), f"{f}.{kind}")
        claim, disk, image = "", None, ""
        if kind == "persistentVolumeClaim":
            claim = ctx.string(src.get("claimName"), f"{f}.persistentVolumeClaim.claimName", required=True)
        elif kind == "ephemeral":
            claim = f"{pod_name}-{name}"  # ephemeral.VolumeClaimName
        elif kind == "image":
            image = ctx.string(src.get("reference"), f"{f}.image.reference")
        elif kind in _DISKS:
            ident = ctx.string(src.get(_DISKS[kind]), f"{f}.{kind}.{_DISKS[kind]}")
            monitors: tuple[str, ...] = ()
            if kind == "rbd":  # defaults as the API server applies them (SetDefaults_RBDVolumeSource)
                ident = f"{ctx.string(src.get('pool'), f'{f}.rbd.pool') or 'rbd'}/{ident}"
                monitors = tuple(str(m) for m in ctx.seq(src.get("monitors"), f"{f}.rbd.monitors"))
            disk = (kind, ident, monitors, src.get("readOnly") is True)
        out.append(PodVolume(name, kind, claim, disk, image))
    return tuple(out)
