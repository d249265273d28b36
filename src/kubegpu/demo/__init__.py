"""The embedded demo cluster: the seed's six-node situation and every pitfall a snapshot can show.

``cluster.yaml`` is a ``kubectl get nodes,pods,resourcequotas,priorityclasses,pdbs,namespaces -A -o yaml``
style List, written by hand to look exactly like API-server output. ``new-pods.yaml`` holds manifests
that have not been created yet (for ``kubegpu schedule --pods``): one valid, the rest rejected by the
API server or by quota. See ``docs/demo.md`` for what each object is there to show.

Data only: no module imports anything from here but ``importlib.resources``.
"""
