"""kubegpu: GPU scheduling, allocation, isolation and diagnosis for Kubernetes.

One scheduling core (``kubegpu.scheduler``) over one cluster model (``kubegpu.model``), used by the
offline commands (explain, schedule, diagnose, simulate, plan) and the live control plane alike.
Layering, bottom to top (``.importlinter``; CI runs ``lint-imports``): ``errors`` → ``model`` →
``devices`` | ``admission`` → ``scheduler`` → ``batch`` → ``explain`` (the core) → ``kube`` → the node
agent ``node`` and the small shared adapters (``sources``, ``snapshot_writer``, ``page``, ``http_reply``,
``ttl_cache``) → the faces ``live`` | ``plan`` | ``sim`` | ``report`` | ``cluster_exporter`` | ``exporter``,
which never import each other → ``cli``. Lower layers never import higher ones; the core never loads
``kubernetes``, ``grpc``, ``prometheus_client``, ``pynvml`` or ``kubegpu.kube``; well-known names
live in ``kubegpu.model.names``.
"""

__version__ = "0.1.0"
