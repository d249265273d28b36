"""In-tree plugins, one module each, named after the upstream plugin (kube-scheduler 1.34).

Plugins do not import each other; shared rules live in ``kubegpu.model`` (affinity, resources) so that
``explain`` and tests call the same helpers. ``registry.in_tree_registry()`` maps names to factories and
``registry.default_profile()`` is upstream's default profile restricted to what kubegpu models.
"""
