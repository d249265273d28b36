"""Pure data: quantities, resource lists, typed Kubernetes objects and the cluster snapshot.

Owns R4.1 accounting (effective pod requests, limit-implies-request defaulting), R11.2 (init and sidecar
container rules) and R11.4 (exact resource names). Must not do I/O, talk to an API server, or import
``kubernetes``, ``grpc``, ``pynvml``, ``click`` or ``rich``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): the bottom; imports only ``kubegpu.errors``,
never another kubegpu package, ``kubegpu.kube``, ``kubernetes``, ``grpc``, ``prometheus_client`` or
``pynvml``. ``names`` is the one place for well-known resource names, label and annotation keys.
"""
