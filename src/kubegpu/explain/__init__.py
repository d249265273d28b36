"""Evidence-based explanations: why a pod is Pending, and what a snapshot says is broken (R1, R2, R11, R16, R17).

Consumes the scheduling core's ``Diagnosis`` and its structured reasons (``scheduler.reasons``: a kind
plus its data, never parsed back from text) to attach numbers, the layer at fault, the fix, the pitfall
and the next ``kubectl`` command: ``causes`` holds one module of evidence/advice hooks per plugin,
``pending`` runs the cycle and groups nodes, ``explanation`` is the result as data, ``grants`` the
devices a schedulable pod gets, ``notes`` the pod-level pitfalls. Never decides feasibility on its own. Every kubectl line carries ``-n <namespace>``; every change it
proposes shows the ``--dry-run=server`` form first and the rollback.
"""
