"""Prometheus exporter for the whole cluster: stranded GPUs and fragmentation per pool (R13, R14.1, R16).

The node exporter (``kubegpu.exporter``) sees one node's devices; whether an idle GPU can be used at all,
and how fragmented a pool's free GPU is for the pod shapes people ask for, needs the cluster state and
the scheduling core. This package measures a snapshot through that core (``measure``, reusing the
per-pool summary of ``kubegpu.explain.cards`` and ``fragmentation``, FGD's measure from ``kubegpu.scheduler.gpu_share``),
serves it with a client_python custom collector behind a short cache (``collector``) on the node
exporter's HTTP server and text encoding, and keeps a live cluster current by list+watch (``watch``).
``docs/exporter.md`` describes the series, rules and dashboard panels.

Must not: write to the API server, or compute idle, stranded or fragmentation by rules of its own.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``). The per-pool
summaries come from ``kubegpu.explain.cards``, the scrape cache from ``kubegpu.ttl_cache``, and the CLI
serves it on ``kubegpu.exporter``'s HTTP server and text encoding (this package imports neither).
"""
