"""The only package that talks to a Kubernetes API server.

Everything above the model layer works on ``(source, raw_dict)`` pairs and never knows whether they came
from a file or a cluster; this package is where the live ones come from. ``kubegpu.kube.live`` reads a
cluster (list calls only: no watch, no writes) with the official ``kubernetes`` client and hands back the
objects exactly as the API server serialised them, ready for ``kubegpu.model.snapshot.build_snapshot``.
"""

from kubegpu.kube.live import LISTED_KINDS, ListedKind, LiveRead, read_cluster

__all__ = ["LISTED_KINDS", "ListedKind", "LiveRead", "read_cluster"]
