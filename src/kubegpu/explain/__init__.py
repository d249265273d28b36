"""Evidence-based explanations: why a pod is Pending, and what a snapshot says is broken (R1, R2, R11, R16, R17).

Consumes the scheduling core's ``Diagnosis`` and its structured reasons (``scheduler.reasons``: a kind
plus its data, never parsed back from text) to attach numbers, the layer at fault, the fix, the pitfall
and the next ``kubectl`` command: ``causes`` holds one module of evidence/advice hooks per plugin,
``pending`` runs the cycle and groups nodes, ``explanation`` is the result as data, ``grants`` the
devices a schedulable pod gets, ``notes`` the pod-level pitfalls. Never decides feasibility on its own. Every kubectl line carries ``-n <namespace>``; every change it
proposes shows the ``--dry-run=server`` form first (``kubectl.mutate``, ``plan``'s too) and the rollback.

Also owns ``cards``: the per-node GPU cards and per-pool summaries that ``kubegpu.report`` draws and
``kubegpu.cluster_exporter`` measures (shared by two faces, so it lives here, below both).

Layer (``.importlinter``, checked by ``lint-imports`` in CI): the top of the core, above ``batch``; may
import ``batch``, ``scheduler``, ``devices``, ``admission`` and ``model``; never the node agent, a face (the
exporter's series names come from ``kubegpu.devices.gpu_series``), or ``kubegpu.kube``, ``kubernetes``,
``grpc``, ``prometheus_client`` or ``pynvml``.
"""
