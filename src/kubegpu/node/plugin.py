"""The kubelet device plugin (API v1beta1) for one extended resource, over gRPC on a unix socket (R3, R6).

One ``DevicePluginServer`` serves one resource of ``kubegpu.devices.plan_resources`` (``nvidia.com/gpu``,
``nvidia.com/gpu.shared`` or ``nvidia.com/mig-<profile>``) on ``<socket dir>/nvidia-<name>.sock`` and
registers it with kubelet's ``Registration`` service on ``<socket dir>/kubelet.sock``, as the NVIDIA
device plugin does; ``serve_until`` serves and registers again whenever kubelet restarts. The RPCs,
with the upstream behaviour each mirrors:

* ``GetDevicePluginOptions``: ``get_preferred_allocation_available=true``, no PreStartContainer needed.
* ``ListAndWatch``: the full device list at once, then a new full list after every health change
  (Unhealthy on a critical XID, Healthy again when ``node.health.HealthMonitor`` recovers the device).
* ``GetPreferredAllocation``: with API access (``node.scheduler_choice``), the IDs kubegpu's scheduler
  recorded for the container being admitted; otherwise whole GPUs by ``devices.preferred_allocation``
  (NVLink, PCIe, NUMA); time-sliced replicas by ``devices.distributed_allocation``; MIG devices in
  advertised order.
* ``Allocate``: ``devices.allocate_response`` for every ``deviceListStrategy`` (envvar, volume-mounts,
  cdi-annotations, cdi-cri) and MPS, with CDI names of the kind ``kubegpu node cdi`` serves
  (``nvidia.com/gpu=<id>``), each device once, and a CDI annotation key of its own per container response
  (a fresh UUID, as upstream's ``uuid.New()``); errors carry the NVIDIA plugin's texts, for example "request for
  '<resource>: <n>' too large: maximum request size for shared resources is 1"; with ``passDeviceSpecs``
  also the ``DeviceSpec`` entries, the optional control nodes only where they exist on this host. With
  API access, IDs that differ from the scheduler's record are logged as a warning.
* ``PreStartContainer``: nothing to do (an empty response).

The device choice and every other rule live in ``kubegpu.devices``; this module only moves messages.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc

from kubegpu.backoff import doubling
from kubegpu.devices import (
    AdvertisedDevice,
    NodeInventory,
    PluginConfig,
    ResourcePlan,
    apply_health_event,
    distributed_allocation,
    plan_resources,
    preferred_allocation,
    topology_from_inventory,
)
from kubegpu.devices.cdi import CDI_KIND
from kubegpu.devices.container_view import AllocateError, allocate_response, new_response_id
from kubegpu.devices.health import DEFAULT_CHECKS, DeviceKey, HealthChecks, HealthEvent, mark_healthy
from kubegpu.devices.sharing import GPU_RESOURCE
from kubegpu.errors import InputError
from kubegpu.node.scheduler_choice import SchedulerChoice
from kubegpu.node.v1beta1 import DEVICE_PLUGIN_PATH, KUBELET_SOCKET, VERSION
from kubegpu.node.v1beta1 import api_pb2 as pb
from kubegpu.node.v1beta1 import api_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

# gRPC's synchronous server runs each RPC on a pool thread, and a ListAndWatch stream keeps its thread for
# as long as it is open: WORKERS threads, at most MAX_STREAMS of them held by streams, so at least
# WORKERS - MAX_STREAMS always serve Allocate, GetPreferredAllocation and the options call.
WORKERS = 16
MAX_STREAMS = 4
# Registration retries: the NVIDIA plugin retries a failed start every 30 s ("Failed to start one or more
# plugins. Retrying in 30s...", cmd/nvidia-device-plugin/main.go); kubegpu starts at 1 s and doubles to it.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0


def endpoint_name(resource: str) -> str:
    """Socket file name for a resource: ``nvidia.com/gpu`` → ``nvidia-gpu.sock``."""
    return f"nvidia-{resource.split('/', 1)[-1]}.sock"


class PluginState:
    """The inventory one plugin serves from, and a condition that wakes ListAndWatch on every change."""

    def __init__(
        self,
        inventory: NodeInventory,
        config: PluginConfig,
        base_name: str,
        checks: HealthChecks = DEFAULT_CHECKS,
    ) -> None:
        self.config = config
        self.base_name = base_name
        self.checks = checks
        self.topology = topology_from_inventory(inventory)
        self._inventory = inventory
        self._generation = 0
        self._stopped = False
        self._cond = threading.Condition()

    @property
    def plan(self) -> ResourcePlan:
        with self._cond:
            return self._plan_of(self._inventory)

    def _plan_of(self, inventory: NodeInventory) -> ResourcePlan:
        for plan in plan_resources(inventory, self.config):
            if plan.base_name == self.base_name:
                return plan
        return ResourcePlan(name=self.base_name, base_name=self.base_name, devices=())

    def gpu_memory(self) -> dict[int, int]:
        """Total memory in bytes per GPU index (the MPS pinned-memory limit divides it)."""
        with self._cond:
            return {g.index: g.memory_total for g in self._inventory.devices}

    def report(self, event: HealthEvent) -> bool:
        """Apply a health event; True (and ListAndWatch sends a new list) when it changed a device."""
        with self._cond:
            changed = self._swap(apply_health_event(self._inventory, event, self.checks))
        if changed:
            log.warning(
                "%s: %s on %s marks devices Unhealthy", self.base_name, event.reason, event.uuid or "all"
            )
        return changed

    def recover(self, key: DeviceKey) -> bool:
        """Mark a device Healthy again; True (and ListAndWatch sends a new list) when it was not."""
        with self._cond:
            return self._swap(mark_healthy(self._inventory, key))

    def _swap(self, updated: NodeInventory) -> bool:
        # Caller holds the condition's lock.
        if updated == self._inventory:
            return False
        self._inventory = updated
        self._generation += 1
        self._cond.notify_all()
        return True

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def wait_change(self, seen: int, timeout: float) -> tuple[int, ResourcePlan] | None:
        """Block until the generation differs from ``seen``; None when stopped or on timeout."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped or self._generation != seen, timeout=timeout)
            if self._stopped or self._generation == seen:
                return None
            return self._generation, self._plan_of(self._inventory)

    @property
    def stopped(self) -> bool:
        with self._cond:
            return self._stopped


def preferred_for(state: PluginState, available: list[str], must: list[str], size: int) -> list[str]:
    """The device ids to suggest to kubelet for one container."""
    plan = state.plan
    if plan.shared:
        return distributed_allocation(available, must, size, plan.replicas_per_gpu())
    if any(d.mig_index is not None for d in plan.devices):
        # MIG devices of one profile are interchangeable; keep kubelet's must-include ones first.
        rest = [d for d in available if d not in must]
        return [*must, *rest][:size] if len(must) + len(rest) >= size else []
    return preferred_allocation(available, must, size, state.topology)


def container_response(state: PluginState, ids: list[str]) -> pb.ContainerAllocateResponse:
    """What kubelet injects for one container's device ids; raises ``AllocateError``."""
    # kubegpu's agent names CDI devices by the spec `kubegpu node cdi` serves (kind nvidia.com/gpu).
    alloc = allocate_response(
        state.plan,
        state.config,
        ids,
        gpu_memory=state.gpu_memory(),
        cdi_kind=CDI_KIND,
        node_exists=os.path.exists,
        # a key of its own per container response: kubelet keeps only the first of two equal keys
        response_id=new_response_id(),
    )
    response = pb.ContainerAllocateResponse(envs=dict(alloc.envs), annotations=dict(alloc.annotations))
    response.mounts.extend(
        pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
        for m in alloc.mounts
    )
    response.devices.extend(
        pb.DeviceSpec(container_path=d.container_path, host_path=d.host_path, permissions=d.permissions)
        for d in alloc.device_specs
    )
    response.cdi_devices.extend(pb.CDIDevice(name=n) for n in alloc.cdi_devices)
    return response


class DevicePluginServicer(pb_grpc.DevicePluginServicer):
    """The v1beta1 ``DevicePlugin`` service over one ``PluginState``."""

    def __init__(
        self,
        state: PluginState,
        poll_seconds: float = 1.0,
        choice: SchedulerChoice | None = None,
        max_streams: int = MAX_STREAMS,
    ) -> None:
        self.state = state
        self.poll_seconds = poll_seconds
        self.choice = choice
        self.max_streams = max_streams
        self._streams_lock = threading.Lock()
        self._streams: list[threading.Event] = []  # one "end now" flag per open stream, oldest first

    def _open_stream(self) -> threading.Event:
        """Register a new ListAndWatch stream; beyond ``max_streams`` the oldest is told to end.

        Each open stream holds one of the server's worker threads while it waits for a change, so
        without a bound a client that opens streams and keeps them would leave no thread for Allocate.
        kubelet keeps one stream per plugin and opens a new one after it restarts, so the newest stream
        is the live one and the oldest the likeliest to be stale."""
        ended = threading.Event()
        with self._streams_lock:
            self._streams.append(ended)
            while len(self._streams) > self.max_streams:
                self._streams.pop(0).set()
        return ended

    def _close_stream(self, ended: threading.Event) -> None:
        with self._streams_lock:
            if ended in self._streams:
                self._streams.remove(ended)

    @property
    def open_streams(self) -> int:
        with self._streams_lock:
            return len(self._streams)

    def GetDevicePluginOptions(
        self, request: pb.Empty, context: grpc.ServicerContext
    ) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)

    def ListAndWatch(
        self, request: pb.Empty, context: grpc.ServicerContext
    ) -> Iterator[pb.ListAndWatchResponse]:
        seen = -1
        ended = self._open_stream()
        try:
            while not self.state.stopped and not ended.is_set() and context.is_active():
                # Polling with a timeout lets the stream end when kubelet hangs up, not only on a change.
                change = self.state.wait_change(seen, self.poll_seconds)
                if change is None or ended.is_set():
                    continue
                seen, plan = change
                yield pb.ListAndWatchResponse(devices=[_device_message(d) for d in plan.devices])
        finally:
            self._close_stream(ended)

    def GetPreferredAllocation(
        self, request: pb.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> pb.PreferredAllocationResponse:
        response = pb.PreferredAllocationResponse()
        resource = self.state.plan.name
        for req in request.container_requests:
            available, must = list(req.available_deviceIDs), list(req.must_include_deviceIDs)
            recorded = (
                self.choice.preferred(resource, available, must, req.allocation_size)
                if self.choice is not None
                else None
            )
            if recorded is not None:
                response.container_responses.add(deviceIDs=recorded)
                continue
            try:
                ids = preferred_for(self.state, available, must, req.allocation_size)
            except KeyError as exc:
                context.abort(grpc.StatusCode.UNKNOWN, f"unknown device: {exc.args[0]}")
            response.container_responses.add(deviceIDs=ids)
        return response

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        response = pb.AllocateResponse()
        for req in request.container_requests:
            if self.choice is not None:
                self.choice.check_allocation(self.state.plan.name, list(req.devices_ids))
            try:
                response.container_responses.append(container_response(self.state, list(req.devices_ids)))
            except AllocateError as exc:
                # Go's plugin returns a plain error, which gRPC delivers as code Unknown.
                context.abort(grpc.StatusCode.UNKNOWN, str(exc))
        return response

    def PreStartContainer(
        self, request: pb.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()


def _device_message(d: AdvertisedDevice) -> pb.Device:
    msg = pb.Device(ID=d.id, health=str(d.health))
    if d.numa_node is not None:
        msg.topology.nodes.add(ID=d.numa_node)
    return msg


class DevicePluginServer:
    """Serve one resource on a unix socket and register it with kubelet."""

    def __init__(
        self,
        inventory: NodeInventory,
        config: PluginConfig,
        base_name: str = GPU_RESOURCE,
        socket_dir: Path = DEVICE_PLUGIN_PATH,
        checks: HealthChecks = DEFAULT_CHECKS,
        poll_seconds: float = 1.0,
        choice: SchedulerChoice | None = None,
        max_streams: int = MAX_STREAMS,
    ) -> None:
        self.state = PluginState(inventory, config, base_name, checks)
        self.choice = choice
        self.resource_name = self.state.plan.name
        self.socket_dir = socket_dir
        self.endpoint = endpoint_name(self.resource_name)
        self._poll_seconds = poll_seconds
        self._max_streams = max_streams
        self._server: grpc.Server | None = None
        self.servicer: DevicePluginServicer | None = None
        self.socket_identity: tuple[int, int] | None = None

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / self.endpoint

    def start(self) -> None:
        """Serve on a fresh socket; ``SocketPathError`` (one line naming the path) where none can be bound."""
        check_socket_path(self.socket_path)
        try:
            # A socket left by a previous run would make bind fail; kubelet expects the plugin to replace it.
            self.socket_path.unlink(missing_ok=True)
        except OSError as exc:
            raise SocketPathError(f"cannot replace it: {exc.strerror}", source=str(self.socket_path)) from exc
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=WORKERS))
        self.servicer = DevicePluginServicer(self.state, self._poll_seconds, self.choice, self._max_streams)
        # Generated gRPC code carries no annotations; the messages it moves are typed (api_pb2.pyi).
        pb_grpc.add_DevicePluginServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]
        try:
            server.add_insecure_port(f"unix://{self.socket_path}")
        except RuntimeError as exc:  # gRPC says only "Failed to bind"; the checks above name the usual causes
            raise SocketPathError("cannot bind a unix socket there", source=str(self.socket_path)) from exc
        server.start()
        self._server = server
        self.socket_identity = socket_identity(self.socket_path)

    def register(self, timeout: float = 5.0) -> None:
        """Call kubelet's ``Registration.Register`` for this resource; ``grpc.RpcError`` on refusal."""
        with grpc.insecure_channel(f"unix://{self.socket_dir / KUBELET_SOCKET}") as channel:
            pb_grpc.RegistrationStub(channel).Register(  # type: ignore[no-untyped-call]
                pb.RegisterRequest(
                    version=VERSION,
                    endpoint=self.endpoint,
                    resource_name=self.resource_name,
                    options=pb.DevicePluginOptions(get_preferred_allocation_available=True),
                ),
                timeout=timeout,
            )

    def report(self, event: HealthEvent) -> bool:
        return self.state.report(event)

    def recover(self, key: DeviceKey) -> bool:
        return self.state.recover(key)

    def restart(self) -> None:
        """Serve on a fresh socket and register again (kubelet wipes plugin sockets when it restarts)."""
        if self._server is not None:
            self._server.stop(grace=None).wait()
        self.start()
        self.register()

    def stop(self) -> None:
        self.state.stop()
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None
        if self.socket_path.is_socket():  # never a directory or file that stopped it from serving
            self.socket_path.unlink(missing_ok=True)


class SocketPathError(InputError):
    """The plugin's socket cannot be served at its path (the CLI prints it as one line, exit status 2)."""


# AF_UNIX sun_path holds 108 bytes with the terminating NUL (Linux unix(7)); gRPC refuses longer paths.
MAX_SOCKET_PATH_BYTES = 107


def check_socket_path(path: Path) -> None:
    """Raise ``SocketPathError`` where a unix socket cannot be bound at ``path``: a path too long for
    AF_UNIX, a missing plugin directory, or a directory where the socket goes."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        raise SocketPathError(
            f"socket path is {size} bytes; a unix socket path holds at most {MAX_SOCKET_PATH_BYTES}",
            source=str(path),
        )
    if not path.parent.is_dir():
        raise SocketPathError("plugin directory does not exist", source=str(path.parent))
    if path.is_dir():
        raise SocketPathError("is a directory, not a socket", source=str(path))


def socket_identity(path: Path) -> tuple[int, int] | None:
    """Inode and change time of a socket file: a new value means it was recreated; None while it is absent."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_ctime_ns


def kubelet_socket_identity(socket_dir: Path) -> tuple[int, int] | None:
    """The identity of kubelet.sock: a new value means kubelet restarted."""
    return socket_identity(socket_dir / KUBELET_SOCKET)


def register_with_retry(
    servers: list[DevicePluginServer],
    done: threading.Event,
    first_s: float = RETRY_FIRST_S,
    max_s: float = RETRY_MAX_S,
    restart: bool = False,
) -> bool:
    """Register every server (first attempt with ``restart``: serve on a fresh socket, then register),
    retrying failures with a doubling delay up to ``max_s`` until each is registered or ``done`` is set;
    True when all are. Every retry serves on a fresh socket before it registers again.

    kubelet may not be up yet when the agent starts (or is restarting itself), so a refused or unanswered
    Register is a reason to wait and try again, never to exit. A kubelet that starts meanwhile has deleted
    every socket in the plugin directory (device manager ``Start`` → ``CleanupPluginDirectory``) and its
    ``Register`` dials the plugin's endpoint, so registering again on the old, deleted socket can never
    succeed; the NVIDIA plugin likewise restarts its servers after a failed start (cmd/nvidia-device-plugin
    main.go: "Failed to start one or more plugins. Retrying in 30s...", then ``goto restart``)."""
    todo, rounds = list(servers), 0
    while todo:
        rounds += 1
        delay = doubling(rounds, first_s, max_s)
        failed = []
        for server in todo:
            try:
                server.restart() if restart or rounds > 1 else server.register()
            except (grpc.RpcError, SocketPathError) as exc:
                # A socket that cannot be served now (the directory recreated by a restarting kubelet)
                # may be servable on the next try: the agent keeps running, as on a refused Register.
                reason = _rpc_text(exc) if isinstance(exc, grpc.RpcError) else str(exc)
                log.warning("registering %s with kubelet failed, retrying in %.0f s: %s",
                            server.resource_name, delay, reason)  # fmt: skip
                failed.append(server)
        todo = failed
        if todo and done.wait(delay):
            return False
    return True


def _rpc_text(exc: grpc.RpcError) -> str:
    details = getattr(exc, "details", None)
    return str(details()) if callable(details) else str(exc)


def serve_until(
    servers: list[DevicePluginServer], socket_dir: Path, done: threading.Event, poll_seconds: float = 1.0
) -> None:
    """Keep ``servers`` serving and registered until ``done`` is set.

    When kubelet restarts it deletes every socket in the device plugin directory, recreates
    ``kubelet.sock`` and forgets every plugin; the NVIDIA plugin watches the directory (fsnotify, a Create
    of kubelet.sock: "inotify: kubelet.sock created, restarting.") and restarts its servers. kubegpu polls
    the identities instead (no inotify dependency): a new kubelet.sock, or its own socket gone or replaced,
    and it serves on a fresh socket and registers again, retrying with backoff while kubelet does not answer.
    """
    seen = kubelet_socket_identity(socket_dir)
    while not done.wait(poll_seconds):
        now = kubelet_socket_identity(socket_dir)
        kubelet_restarted = now is not None and now != seen
        lost = [s for s in servers if socket_identity(s.socket_path) != s.socket_identity]
        if kubelet_restarted:
            log.warning("kubelet.sock was recreated: kubelet restarted; serving and registering again")
        for s in lost:
            log.warning("%s was removed or replaced; serving on a new socket", s.socket_path)
        stale = servers if kubelet_restarted else lost
        if stale and now is not None:
            if not register_with_retry(stale, done, first_s=poll_seconds, restart=True):
                return
            seen = now
