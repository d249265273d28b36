"""Doubling backoff: the one rule for how long to wait after the n-th failure in a row.

The live control plane's API client and reflectors (``kubegpu.kube``) jitter it so replicas that failed
together do not retry together (client-go's ``wait.Backoff`` with ``Factor: 2`` and a ``Cap``); the node
agent's kubelet registration (``kubegpu.node.plugin``) does not (one agent per node: nothing to spread),
nor does a pod's backoff in the scheduling queues (``live.queue``, ``sim.schedqueue``: kube-scheduler's
``calculateBackoffDuration``, 1 s doubled per attempt up to 10 s).

Imports nothing of kubegpu (layer: bottom, beside ``kubegpu.errors``): every layer may use it.
"""

from __future__ import annotations

import random

# 2 ** 1024 does not convert to a float: past this many doublings every sane first wait is over its cap,
# and the OverflowError would end a retry loop that has failed ~1,000 times in a row
MAX_DOUBLINGS = 64

# A pod's backoff in kube-scheduler's queue, used by both queues (``live.queue``, ``sim.schedqueue``):
# pkg/scheduler/internal/queue/scheduling_queue.go DefaultPodInitialBackoffDuration (1 s),
# DefaultPodMaxBackoffDuration (10 s), DefaultPodMaxInUnschedulablePodsDuration (5 min)
POD_INITIAL_BACKOFF_S = 1.0
POD_MAX_BACKOFF_S = 10.0
POD_MAX_IN_UNSCHEDULABLE_S = 300.0


def doubling(failures: int, first_s: float, cap_s: float, *, jitter: bool = False) -> float:
    """Seconds to wait after the ``failures``-th failure in a row (1-based): ``first_s`` doubled for each
    failure after the first, at most ``cap_s``; ``jitter``: scaled down by a random factor in [0.5, 1)."""
    wait = min(first_s * 2.0 ** min(max(failures - 1, 0), MAX_DOUBLINGS), cap_s)
    return wait * (0.5 + random.random() / 2) if jitter else wait
