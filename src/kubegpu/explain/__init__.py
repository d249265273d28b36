"""Evidence-based explanations: why a pod is Pending, and what a snapshot says is broken (R1, R2, R11, R16, R17).

Consumes the scheduling core's ``Diagnosis`` and the same pure helpers the plugins use (fit, taints,
affinity) to attach numbers, the layer at fault, the fix, the pitfall and the next ``kubectl`` command.
Never decides feasibility on its own. Every kubectl line carries ``-n <namespace>``; every change it
proposes shows the ``--dry-run=server`` form first and the rollback.
"""
