"""Separate a reasoning model's ``<think>`` block from the reply it is meant to precede."""

from __future__ import annotations

import re

import msgspec

__all__ = ["ThinkSplit", "split_think"]

_OPEN = re.compile(r"<\s*think(?:ing)?\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*think(?:ing)?\s*>", re.IGNORECASE)


class ThinkSplit(msgspec.Struct, frozen=True):
    visible: str
    """The text to parse: what follows the last ``</think>``."""
    reasoning: str
    """The content of the think block(s), tags removed."""
    flags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def split_think(text: str) -> ThinkSplit:
    """Keep what follows the last ``</think>``; record that a think block was there.

    Chat templates of reasoning models often put the opening ``<think>`` in the prompt, so a lone
    ``</think>`` counts as a block too. Two repairs are recorded as warnings because they guess:
    an unclosed ``<think>`` (its content is parsed as the reply, since there is nothing else), and
    an empty remainder after ``</think>`` (the last think block is parsed instead).
    """
    if "<" not in text:  # both tags start with it: most replies, and each step's history
        return ThinkSplit(visible=text, reasoning="")
    closes = list(_CLOSE.finditer(text))
    if closes:
        last = closes[-1]
        visible = text[last.end() :]
        inner = text[: last.start()]
        # The last block's own content, for the empty-remainder fallback below.
        opens_before = list(_OPEN.finditer(inner))
        last_block = inner[opens_before[-1].end() :] if opens_before else inner
        last_block = _strip_tags(last_block)
        reasoning = _strip_tags(inner)
        tail_opens = list(_OPEN.finditer(visible))
        flags = ["think_block"]
        warnings = []
        if tail_opens:
            # A <think> reopened after the last </think> and never closed.
            flags.append("unclosed_think")
            warnings.append("a <think> after the last </think> is never closed; parsed its content")
            reasoning = (reasoning + "\n" + visible[tail_opens[-1].end() :]).strip()
            visible = _strip_tags(visible)
        if not visible.strip() and last_block.strip():
            flags.append("empty_after_think")
            warnings.append("nothing follows </think>; parsed the think block instead")
            visible = last_block
        return ThinkSplit(visible, reasoning.strip(), tuple(flags), tuple(warnings))
    opens = list(_OPEN.finditer(text))
    if opens:
        first = opens[0]
        return ThinkSplit(
            visible=text[: first.start()] + _strip_tags(text[first.end() :]),
            reasoning=_strip_tags(text[first.end() :]).strip(),
            flags=("think_block", "unclosed_think"),
            warnings=("<think> is never closed; parsed its content as the reply",),
        )
    return ThinkSplit(visible=text, reasoning="")


def _strip_tags(text: str) -> str:
    return _CLOSE.sub("\n", _OPEN.sub("\n", text))
