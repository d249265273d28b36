"""kubegpu: GPU scheduling, allocation, isolation and diagnosis for Kubernetes.

One scheduling core (``kubegpu.scheduler``) over one cluster model (``kubegpu.model``), used by the
offline commands (explain, schedule, diagnose, simulate, plan) and the live control plane alike.
Layering, bottom to top: ``model`` → ``devices`` → ``scheduler`` / ``admission`` → ``explain`` /
``kube`` / ``node`` → ``cli``. Lower layers never import higher ones, and only the edge packages
(``kube``, ``node``, ``cli``) do I/O against the outside world.
"""

__version__ = "0.1.0"
