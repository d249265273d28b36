"""Real parts the exporter tests run against: the HTTP server, a fake kubelet, a host's /proc, a timeline.

* ``Scraper``: the exporter's own HTTP server on a loopback port, scraped with urllib and parsed with
  client_python's text parser (what Prometheus-format consumers read, not our own encoder's view).
* ``FakePodResources``: kubelet's PodResourcesLister (``List``, ``GetAllocatableResources``) served by
  grpc over a real unix socket, from the committed v1 stubs.
* ``PodListServer``: kubelet's ``/pods`` (a PodList JSON) over real HTTP.
* ``write_proc``: a ``/proc``-shaped directory with ``<pid>/cgroup`` files as kubelet's cgroup layouts
  write them.
* ``stranded_cluster``: a small cluster (builders' objects) with stranded GPUs in two pools.
* ``timeline_reading``: one line of the shared two-processes NVML timeline as a reading (the node agent's
  fixture format), over the same GPU's recorded ``nvml.json``.
"""

from __future__ import annotations

import copy
import json
import shutil
import ssl
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import grpc
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from kubegpu.devices import NodeInventory, parse_reading
from kubegpu.devices.inventory import MIB
from kubegpu.exporter.podresources.v1 import api_pb2 as pb
from kubegpu.exporter.podresources.v1 import api_pb2_grpc as pb_grpc
from kubegpu.exporter.server import ExporterServer, start_server
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL
from kubegpu.testing.builders import make_node, make_pod

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"
TWO_PROCESSES = H200 / "two-processes"
H200_UUID = "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50"
DGX1 = REPO / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"

Labels = frozenset[tuple[str, str]]


def labels(**kw: str) -> Labels:
    return frozenset(kw.items())


# DCGM_FI_DRIVER_VERSION, a label field of dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv on every DCGM
# series: the readings' driver (h200-1gpu nvidia-smi-q.xml <driver_version>; dgx1-8xv100.json "driver").
H200_DRIVER = "580.159.04"
DGX1_DRIVER = "535.104.05"


def dgx_labels(index: int) -> dict[str, str]:
    """dcgm-exporter's labels of a DCGM series of GPU ``index`` of the DGX-1 reading (``DGX1``)."""
    bus = ["06", "07", "0A", "0B", "85", "86", "89", "8A"][index]
    return {
        "gpu": str(index),
        "UUID": f"GPU-0000d6e1-0000-4000-8000-00000000000{index}",
        "pci_bus_id": f"00000000:{bus}:00.0",
        "device": f"nvidia{index}",
        "modelName": "Tesla V100-SXM2-16GB",
        "DCGM_FI_DRIVER_VERSION": DGX1_DRIVER,
    }


def h200_labels() -> dict[str, str]:
    """dcgm-exporter's labels of a DCGM series of the recorded H200 (``H200``)."""
    return {
        "gpu": "0",
        "UUID": H200_UUID,
        "pci_bus_id": "00000000:00:06.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H200",
        "DCGM_FI_DRIVER_VERSION": H200_DRIVER,
    }


@dataclass
class Scrape:
    """One parsed scrape: raw text, and per family its type, HELP and {label set: value}."""

    text: str
    types: dict[str, str]
    helps: dict[str, str]
    series: dict[str, dict[Labels, float]]

    def one(self, family: str, **match: str) -> float:
        """The value of the only series of ``family`` whose labels include ``match``."""
        hits = [v for ls, v in self.series.get(family, {}).items() if set(match.items()) <= ls]
        assert len(hits) == 1, f"{family}{match}: {len(hits)} series in {self.series.get(family)}"
        return hits[0]


def parse(text: str) -> Scrape:
    types, helps, series = {}, {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name], helps[fam.name] = fam.type, fam.documentation
        # The parser names counter samples "<name>_total" (OpenMetrics); the family keeps the exposed name.
        series[fam.name] = {frozenset(s.labels.items()): s.value for s in fam.samples}
    return Scrape(text, types, helps, series)


class ServedCollector(Protocol):
    """What the exporters' HTTP server serves: a client_python collector with a health check."""

    def collect(self) -> Iterator[Metric]: ...

    def health(self) -> tuple[bool, str]: ...


class Scraper:
    """The exporter's real HTTP server on 127.0.0.1 (a free port), around one collector."""

    def __init__(self, collector: ServedCollector) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        self.server: ExporterServer = start_server(registry, collector.health, "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def get(self, path: str) -> tuple[int, str, str]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as resp:
                return resp.status, resp.headers["Content-Type"], resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()

    def scrape(self) -> Scrape:
        status, _, body = self.get("/metrics")
        assert status == 200, body
        return parse(body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakePodResources(pb_grpc.PodResourcesListerServicer):  # type: ignore[misc]
    """kubelet's Pod Resources API: answers List with ``pods`` (namespace, name, {container: devices}) and,
    per (namespace, pod, container), the ``dynamic`` resources (DRA claims) kubelet would add."""

    def __init__(self) -> None:
        self.pods: list[tuple[str, str, dict[str, list[tuple[str, list[str]]]]]] = []
        self.dynamic: dict[tuple[str, str, str], list[pb.DynamicResource]] = {}
        self.allocatable: list[tuple[str, list[str]]] = []
        self.calls = 0

    def List(
        self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> pb.ListPodResourcesResponse:
        self.calls += 1
        return pb.ListPodResourcesResponse(
            pod_resources=[
                pb.PodResources(
                    name=name,
                    namespace=ns,
                    containers=[
                        pb.ContainerResources(
                            name=cname,
                            devices=[pb.ContainerDevices(resource_name=r, device_ids=ids) for r, ids in devs],
                            dynamic_resources=self.dynamic.get((ns, name, cname), []),
                        )
                        for cname, devs in containers.items()
                    ],
                )
                for ns, name, containers in self.pods
            ]
        )

    def GetAllocatableResources(
        self, request: pb.AllocatableResourcesRequest, context: grpc.ServicerContext
    ) -> pb.AllocatableResourcesResponse:
        return pb.AllocatableResourcesResponse(
            devices=[pb.ContainerDevices(resource_name=r, device_ids=ids) for r, ids in self.allocatable]
        )


@contextmanager
def fake_kubelet() -> Iterator[tuple[FakePodResources, Path]]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer than that.
    directory = Path(tempfile.mkdtemp(prefix="kgpr", dir="/tmp"))
    socket = directory / "kubelet.sock"
    fake = FakePodResources()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(fake, server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    try:
        yield fake, socket
    finally:
        server.stop(grace=None).wait()
        shutil.rmtree(directory, ignore_errors=True)


class PodListServer:
    """kubelet's ``/pods`` over HTTP on 127.0.0.1; ``pods`` is the PodList's items."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.items: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = (
                True  # as a real server does: no delayed-ACK stall between headers and body
            )

            def do_GET(self) -> None:
                outer.auth.append(self.headers.get("Authorization"))
                body = json.dumps({"kind": "PodList", "apiVersion": "v1", "items": outer.items}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:  # (certificate, key): kubelet serves /pods over TLS on :10250
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/pods"

    def add_pod(self, namespace: str, name: str, uid: str, containers: dict[str, str]) -> None:
        """``containers``: name -> containerd container ID (64 hex)."""
        self.items.append(
            {
                "metadata": {"namespace": namespace, "name": name, "uid": uid},
                "status": {
                    "containerStatuses": [
                        {"name": c, "containerID": f"containerd://{cid}"} for c, cid in containers.items()
                    ]
                },
            }
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_proc(root: Path, cgroups: dict[int, str]) -> Path:
    """A /proc-shaped directory: ``<root>/<pid>/cgroup`` holding each given text."""
    for pid, text in cgroups.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cgroup").write_text(text, encoding="utf-8")
    return root


def timeline() -> list[dict[str, Any]]:
    lines = (TWO_PROCESSES / "nvml_timeline.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def timeline_reading(point: dict[str, Any]) -> dict[str, Any]:
    """The recorded H200 reading with the telemetry NVML gave at one timeline point."""
    reading = json.loads((H200 / "nvml.json").read_text(encoding="utf-8"))
    dev = copy.deepcopy(reading["devices"][0])
    total = dev["memory"]["total"]
    # The recorder floored NVML's used and free bytes to MiB separately (used + free = total, with fractions),
    # so the bytes are rebuilt as the largest free that floors to fb_free_mib; used must then floor to fb_used_mib.
    free = (point["fb_free_mib"] + 1) * MIB - 1
    assert (total - free) // MIB == point["fb_used_mib"], point
    dev["memory"] = {"total": total, "used": total - free, "free": free}
    dev["util"] = {"gpu": point["util_gpu"], "memory": point["util_mem"]}
    dev["power_mw"] = round(point["power_w"] * 1000)
    dev["temp"] = point["temp_c"]
    dev["clocks"] = {"sm": point["sm_mhz"], "mem": dev["clocks"]["mem"]}
    dev["procs"] = [{"pid": p["pid"], "used_memory": p["used_mib"] * MIB} for p in point["procs"]]
    reading["devices"] = [dev]
    return reading


def scrape_once(collector: ServedCollector) -> Scrape:
    """One scrape of ``collector`` through a Scraper that is closed after it."""
    scraper = Scraper(collector)
    try:
        return scraper.scrape()
    finally:
        scraper.close()


class ReadingBackend:
    """A discovery backend over an in-memory reading that the test replaces between scrapes."""

    def __init__(self, reading: dict[str, Any]) -> None:
        self.reading = reading
        self.reads = 0

    def inventory(self) -> NodeInventory:
        self.reads += 1
        return parse_reading(self.reading, source="test reading")


def stranded_cluster() -> list[dict[str, Any]]:
    """Pool a: a1 (4 GPUs, 1 held) and a2 (4 GPUs, 2 held, cordoned); pool b: b1 (8 GPUs, 1 held by a pod
    taking all 4 CPUs); c1 (2 GPUs, no pool label). Pending: q1 (2 GPUs), q2 (tolerates the GPU taint only)."""
    return [
        make_node("a1").gpus(4).label(DEFAULT_POOL_LABEL, "a").obj(),
        make_node("a2").gpus(4).label(DEFAULT_POOL_LABEL, "a").cordon().obj(),
        make_node("b1").gpus(8).label(DEFAULT_POOL_LABEL, "b").capacity(cpu=4).obj(),
        make_node("c1").gpus(2).obj(),
        make_pod("p1").ns("ml").requests(cpu="2").gpu(1).on("a1").obj(),
        make_pod("p2").ns("ml").requests(cpu="2").gpu(2).on("a2").obj(),
        make_pod("p3").ns("ml").requests(cpu="4").gpu(1).on("b1").obj(),
        make_pod("q1").ns("ml").requests(cpu="2").gpu(2).obj(),
        make_pod("q2").ns("ml").requests(cpu="1").tolerate("nvidia.com/gpu", operator="Exists").obj(),
    ]
