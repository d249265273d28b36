"""The offline simulator: replays and packing runs of a workload through the one scheduling core.

Owns replay mode (``replay``, ``schedqueue``: pods arrive, queue, run and leave in simulated time),
packing mode (``packing``, ``bench``, ``ray_executor``: the FGD paper's protocol over the openb trace),
the openb trace readers (``openb``, ``openb_replay``), workloads from YAML (``workload``), the
before/after of ``kubegpu simulate`` (``whatif``, ``node_changes``, ``html_report``), a replay's inputs
(``replay_inputs``: the pod, node-event and batch types), a trace replayed onto a live cluster's free
capacity (``onto_cluster``), the queue benchmark (``queue_bench``), the packed openb cluster as report
data (``packed``), a replay's DRA claim lifecycle (``claim_controller``: reservedFor, deallocation and
generated claims, as the resourceclaim controller) and the claims a workload file brings
(``workload_claims``).

Layer (``.importlinter``, checked by ``lint-imports`` in CI): a face. It may import the core (``explain``,
``batch``, ``scheduler``, ``devices``, ``admission``, ``model``), the node agent and the adapters (``kube``,
``sources``, ``snapshot_writer``, ``page``, ``http_reply``, ``ttl_cache``); it never imports another face
(``cli``, ``live``, ``plan``, ``sim``, ``report``, ``cluster_exporter``, ``exporter``). One exception, with
its reason in ``.importlinter``: ``node_changes`` applies ``kubegpu.plan.mig``'s MIG re-partition (its
capacity is still computed inside the planner).
"""
