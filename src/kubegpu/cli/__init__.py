"""Command line (click + rich). Thin: parse arguments, call one function of the core, render the result.

No scheduling rule lives here. Only this package imports ``click`` and ``rich``.
"""
