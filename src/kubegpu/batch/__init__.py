"""The batch layer: team queues with quotas in GPU shapes, cohorts with borrowing and lending, gangs,
dominant-resource fair share, and preemption that counts what it destroys (R8, R9.1, R14).

Volcano's split, with kube-scheduler's typing: a *session* orders queues and workloads (the policy),
and asks the one scheduling core (``kubegpu.scheduler``) whether and where each workload fits — there is
no second copy of any placement rule here. Quota and placement use one unit: the exact extended
resource names the device plugin advertises (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``,
``nvidia.com/mig-1g.18gb``), so a MIG slice, a time-sliced replica and a full GPU are never confused.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): core, above ``scheduler``; never imports
``explain``, the node agent, a face, or ``kubegpu.kube``, ``kubernetes``, ``grpc``, ``prometheus_client`` or
``pynvml``.
"""
