"""The only package that talks to a Kubernetes API server.

Everything above the model layer works on ``(source, raw_dict)`` pairs and never knows whether they came
from a file or a cluster; this package is where the live ones come from, exactly as the API server
serialised them:

* ``live``: ``read_cluster`` reads a cluster with list calls only (the read-only ``--kube`` source), and
  ``list_kind`` lists one kind for an informer;
* ``client``: ``KubeApi``, JSON requests and watches with client-go's retry rules, for the live
  control plane (``kubegpu.live``), which also writes (bindings, events, status, Leases);
* ``informer``: ``Reflector``, list+watch kept current across dropped connections and ``410 Gone``;
* ``leader``: leader election on a ``coordination.k8s.io/v1`` Lease.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): an adapter above the core; imports
``kubernetes`` and ``kubegpu.errors`` only, never the core or a face. The core may not import it.
"""

from kubegpu.kube.listed_kinds import LISTED_KINDS, ListedKind
from kubegpu.kube.live import LiveRead, read_cluster

__all__ = ["LISTED_KINDS", "ListedKind", "LiveRead", "read_cluster"]
