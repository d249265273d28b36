"""Kubelet-side node agent: NVML discovery, v1beta1 device plugin, health watching (R1, R2.2, R3, R6, R12).

Owns the edges of a GPU node: reading NVML (``discovery``; ``pynvml`` is imported lazily, so importing
this package needs no driver), serving kubelet's Device Plugin API over gRPC on a unix socket and
registering with kubelet (``plugin``, stubs in ``v1beta1``), and turning NVML XID events into health
events (``health``). The only package that imports ``grpc`` or ``pynvml``.

Must not: decide anything itself. Which devices to offer, which to prefer, what to inject, which XIDs
matter, which labels and CDI entries a node gets: all of it is ``kubegpu.devices``, shared with the
scheduler. Must not import ``kubegpu.kube``, ``kubegpu.sim`` or ``kubegpu.exporter``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): the node agent, above ``kube`` and the core;
never imports a face.
"""
