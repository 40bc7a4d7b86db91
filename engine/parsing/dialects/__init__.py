"""The action dialects the parser understands, one module each.

Every dialect module has ``NAME``, ``EXPRESSES`` (the action types its ``format`` can write),
``parse(text, *, convention, canvas_size, tool_calls) -> Extraction`` and
``format(action, **options) -> str``. A dialect whose boxes have a fixed order says
``READS_CONVENTION = False``.
"""

from __future__ import annotations

from types import ModuleType

from engine.parsing.dialects import deepeyes, minio3, openai_tools, qwen3vl, vaot

__all__ = ["DIALECTS", "get_dialect"]

DIALECTS: dict[str, ModuleType] = {
    m.NAME: m for m in (vaot, deepeyes, qwen3vl, minio3, openai_tools)
}
"""Dialect name → module."""


def get_dialect(name: str) -> ModuleType:
    """The dialect called ``name``.

    Raises:
        ValueError: naming the dialects that exist.
    """
    try:
        return DIALECTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dialect {name!r} (known: {', '.join(DIALECTS)})") from None
