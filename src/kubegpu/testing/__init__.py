"""Public test kit: fluent builders of API-shaped objects (the ``wrappers.go`` idea) and helpers.

Only tests and benchmarks import this package; nothing under ``src/`` does.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): above everything; nothing under ``src/`` may
import it.
"""
