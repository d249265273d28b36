"""The live control plane: kubegpu running in a cluster (R5, R6.1, R7.3, R8, R11 on a running cluster).

``scheduler`` is a second kube-scheduler driven by the scheduling core, with its ``queue``, ``events``
recorder and ``metrics``; ``extender`` answers kube-scheduler's extender API from the core; ``webhook``
serves the admission rules of ``kubegpu.admission.lint`` as a validating webhook. Only this package and
``kubegpu.kube`` talk to an API server; scheduling rules stay in ``kubegpu.scheduler`` and are never
re-implemented here. See docs/live.md.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``).
"""
