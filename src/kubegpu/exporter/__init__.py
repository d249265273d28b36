"""Prometheus exporter for a GPU node: dcgm-exporter-compatible series, per-pod attribution, idle GPUs (R13, R16).

Owns the metrics a GPU node serves: the DCGM fields NVML can give, with dcgm-exporter's names, types,
HELP texts and labels (``values``, ``nvml_counters``, ``xids``); which pod holds which device,
from kubelet's Pod Resources API v1 (``podresources``; a DRA claim's device mapped to its GPU through
the driver's per-claim CDI spec, ``dra_devices``), and how much GPU memory each container's
processes use, from NVML per-process memory, ``/proc/<pid>/cgroup`` and kubelet's ``/pods``
(``cgroups``, ``kubelet_pods``, ``attribution``); kubegpu's own series for allocated-but-idle GPUs,
time-sliced memory pressure and health; the client_python custom collector that reads all of it at
scrape time behind a short cache (``collector``), its text encoding (``exposition``) and the HTTP server
with ``/metrics`` and ``/healthz`` (``server``). The rules, dashboard and manifests are in ``deploy/``;
``docs/exporter.md`` describes the whole.

With ``kubegpu.cluster_exporter`` (which serves through this package's server and encoding), the only
package that imports ``prometheus_client``. It reads devices through ``kubegpu.node`` (NVML or a
recorded reading, the XID watcher) and decides device health by ``kubegpu.devices``; it imports ``grpc``
for the Pod Resources client, as ``kubegpu.node`` does for the device plugin.

Must not: talk to the API server (``kubegpu.kube``), change anything on the GPU (every NVML call is a
read), or decide scheduling; stranded GPUs and fragmentation are the scheduling core's to compute.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``). Its metric names
live in ``kubegpu.devices.dcgm_fields`` / ``gpu_series`` and its scrape cache in ``kubegpu.ttl_cache``, so
that ``explain`` and ``cluster_exporter`` share them without importing this face.
"""
