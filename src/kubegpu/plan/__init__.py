"""Change plans for one node's GPU resource model: MIG re-partition and time-slicing rollout (R6.2, R6.3, R15).

Owns the pure planning: given a Node and its pods as ``kubegpu.model`` objects and the desired
configuration, what capacity the node will advertise, which pods must move, and the step-by-step
procedure with its rollback (every mutating ``kubectl`` line with ``-n <namespace>`` and its
``--dry-run=server`` form first). The CLI (``kubegpu.cli.plan_cmd``) reads files and renders.

Must not: read files or the cluster, import ``click``/``rich``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``).
"""

from kubegpu.devices.time_slicing import plugin_config_text
from kubegpu.plan.mig import plan_mig
from kubegpu.plan.procedure import AffectedPod, NodeChange, Step
from kubegpu.plan.time_slicing import plan_time_slicing

__all__ = ["AffectedPod", "NodeChange", "Step", "plan_mig", "plan_time_slicing", "plugin_config_text"]
