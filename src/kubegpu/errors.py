"""The error taxonomy every layer raises: bad input names its file, object and field.

``InputError`` is for anything a person wrote or a cluster returned that kubegpu cannot accept; the CLI
prints it as one line (never a traceback). ``ConfigError`` is for a profile or plugin configuration that
is invalid at construction time.
"""

from __future__ import annotations

from pathlib import Path


class KubegpuError(Exception):
    """Base class of every error kubegpu raises on purpose."""


class InputError(KubegpuError):
    """Bad input, located as precisely as possible: ``file: Kind ns/name: field: problem``."""

    def __init__(self, problem: str, *, source: str = "", obj: str = "", field: str = "") -> None:
        self.problem = problem
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.obj, self.field) if p]
        return ": ".join([*parts, self.problem])


class ConfigError(KubegpuError):
    """An invalid scheduler profile, plugin argument or sharing configuration."""


def read_text(path: Path, what: str) -> str:
    """``path`` as UTF-8 text, or one ``InputError`` naming the file: unreadable (``cannot read <what>: <OS
    reason>``) or not UTF-8 (a UTF-16 or Latin-1 file), never a traceback."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", source=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read {what}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            source=str(path),
        ) from exc
