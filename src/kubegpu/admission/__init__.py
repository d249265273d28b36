"""What the API server does to a pod before any scheduler sees it (R4.1, R8, R11.5).

Validation of resource requirements with the API server's own messages, LimitRange defaulting, and
ResourceQuota admission with the exact ``exceeded quota`` text. Pure functions over raw objects and
the snapshot; used by ``kubegpu schedule --pods`` for pods that are not yet created and by ``explain``
to say why a manifest would never reach the scheduler.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): core, beside ``devices`` (independent of it),
above ``model``; never imports ``scheduler``, ``batch``, ``explain``, a face, or ``kubegpu.kube``,
``kubernetes``, ``grpc``, ``prometheus_client`` or ``pynvml``.
"""
