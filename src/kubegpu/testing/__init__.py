"""Public test kit: fluent builders of API-shaped objects (the ``wrappers.go`` idea) and helpers.

Only tests and benchmarks import this package; nothing under ``src/`` does.
"""
