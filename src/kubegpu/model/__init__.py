"""Pure data: quantities, resource lists, typed Kubernetes objects and the cluster snapshot.

Owns R4.1 accounting (effective pod requests, limit-implies-request defaulting), R11.2 (init and sidecar
container rules) and R11.4 (exact resource names). Must not do I/O, talk to an API server, or import
``kubernetes``, ``grpc``, ``pynvml``, ``click`` or ``rich``.
"""
