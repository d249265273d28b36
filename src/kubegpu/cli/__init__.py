"""Command line (click + rich). Thin: parse arguments, call one function of the core, render the result.

No scheduling rule lives here. Only this package imports ``click`` and ``rich``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): the top; may import every face. ``main``
defines the source-reading commands and registers the ``*_cmd`` modules lazily (``LAZY_COMMANDS``), so
``kubegpu --help`` loads none of them; the ``*_cmd`` modules share ``options`` and never import ``main``.
"""
