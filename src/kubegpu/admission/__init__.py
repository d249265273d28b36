"""What the API server, and kubegpu's admission webhook, do to a pod before any scheduler sees it (R4.1, R6.1, R8, R11.5).

Validation of resource requirements with the API server's own messages (every quantity bounded before any
arithmetic), LimitRange defaulting, ResourceQuota admission with the exact ``exceeded quota`` text, and
the GPU admission rules shared by ``kubegpu webhook`` and ``kubegpu lint`` (``lint``; ``gpu_access``: the
ways to reach GPUs past the device plugin and who is exempt). Pure functions over raw objects and the
snapshot; used by ``kubegpu schedule --pods`` for pods that are not yet created, by ``explain`` to say why
a manifest would never reach the scheduler, and by the webhook. Imports ``kubegpu.model`` and
``kubegpu.errors`` only: no Kubernetes client, no HTTP.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): core, beside ``devices`` (independent of it),
above ``model``; never imports ``scheduler``, ``batch``, ``explain``, a face, or ``kubegpu.kube``,
``kubernetes``, ``grpc``, ``prometheus_client`` or ``pynvml``.
"""
