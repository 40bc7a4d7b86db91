"""Parse one raw model reply into a :class:`ParsedStep`; never raises on any text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from engine.actions import validate_action, validate_global_style
from engine.parsing.answer import FoundAnswer, find_final_answer
from engine.parsing.answer_text import PLACEHOLDER_WHY, clean_answer, placeholder, shown_answer
from engine.parsing.blocks import blank_spans
from engine.parsing.dialects import get_dialect
from engine.parsing.dialects.base import Extraction
from engine.parsing.headers import StepHeader, find_step_headers
from engine.parsing.lone_option import lone_option
from engine.parsing.result import FLAGS, ParsedStep
from engine.parsing.think import split_think

__all__ = ["parse_step"]

_CONVENTIONS = ("xyxy", "yxyx")
_NOISE_LINE = re.compile(r"^[\s*_#>=~\-]*$")  # emphasis or rules left behind by a cut
_HINTS = (
    (re.compile(r"<\s*tool_call\s*>", re.I), {"deepeyes", "qwen3vl", "openai"}, "<tool_call> blocks",
     "deepeyes, qwen3vl or openai"),
    (re.compile(r"<\s*grounding\s*>", re.I), {"minio3"}, "<grounding> blocks", "minio3"),
    (re.compile(r"[\"'“”]action[\"'“”]\s*:"), {"vaot"}, "a VAoT action block", "vaot"),
)  # fmt: skip
_HINT_WARNING = re.compile(r"which the '[^']*' dialect does not read \(try: ([^)]+)\)$")


def dialect_hint(warning: str) -> str | None:
    """The dialect(s) a step's warning suggests, when the reply held another dialect's action
    format (``"vaot"``, ``"deepeyes, qwen3vl or openai"``); None for any other warning."""
    found = _HINT_WARNING.search(warning)
    return found.group(1) if found else None


def parse_step(
    text: str,
    *,
    dialect: str = "vaot",
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
    expected_step: int | None = None,
    choices: Sequence[str] = (),
) -> ParsedStep:
    """Parse one model reply: thought, actions, final answer, warnings.

    Args:
        text: the reply's text, exactly as the model returned it.
        dialect: a key of :data:`engine.parsing.DIALECTS`.
        convention: ``xyxy`` or ``yxyx``, the order of coordinates in VAoT action objects.
        canvas_size: ``(width, height)`` in pixels of the image the model was last shown; needed
            by dialects whose boxes are in pixels (``deepeyes``).
        tool_calls: the provider's tool-call objects (``ToolCall``) for tool-native models.
        expected_step: the step the reply was asked for. A reply that restates earlier steps
            (their text and action blocks, as the see2think prompt shows them) before it is read
            from that step's first marker on: the restated actions were executed already.
        choices: the sample's options, in order. A reply that is only an option letter ("B",
            "(B)", "B. 15 cm" where B is 15 cm) is read as its final answer only with them.

    Raises:
        ValueError: for an unknown ``dialect`` or ``convention`` (a configuration error). Nothing
            about ``text`` or ``tool_calls`` ever raises: problems become warnings.
    """
    module = get_dialect(dialect)
    if convention not in _CONVENTIONS:
        raise ValueError(f"unknown coordinate convention {convention!r} (known: xyxy, yxyx)")
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = "" if text is None else str(text)
    # clean_answer's cache serves the readings of this reply only: a reply's answer is cleaned
    # by each reading that weighs it, and nothing of another reply (a long one) is kept alive.
    clean_answer.cache_clear()
    try:
        return _parse(text, module, dialect, convention, canvas_size, tuple(tool_calls),
                      expected_step, tuple(choices))
    except Exception as exc:  # the contract is "never raises": report instead
        return ParsedStep(
            thought=text.strip(),
            warnings=(f"parser error ({type(exc).__name__}: {exc}); nothing was extracted",),
            flags=("parser_error",),
            dialect=dialect,
            convention=convention,
        )


_VISIBLE = re.compile(r"\S")


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with each span replaced by a line break (keeping the surrounding paragraphs)."""
    pieces, pos = [], 0
    # Where the current line starts and ends, carried from span to span: found afresh for each,
    # one long line holding thousands of markers cost its length squared.
    line_start, scanned, line_end = 0, 0, -1
    for start, end in sorted(spans):
        start = max(start, pos)
        if end <= start:
            continue
        # A span inside a sentence leaves one space; one that starts or ends a line, a break.
        newline = text.rfind("\n", scanned, start)
        if newline >= 0:
            line_start = newline + 1
        scanned = start
        if line_end < end:
            line_end = text.find("\n", end)
            line_end = len(text) if line_end < 0 else line_end
        inline = (_VISIBLE.search(text, line_start, start) is not None
                  and _VISIBLE.search(text, end, line_end) is not None)
        if inline:
            pieces.append(text[pos:start].rstrip(" \t") + " ")
            while end < len(text) and text[end] in " \t":
                end += 1
        else:
            pieces.append(text[pos:start])
            pieces.append("\n")
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def _tidy(text: str) -> str:
    lines = ["" if _NOISE_LINE.match(line) else line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line.strip() if not out or not out[-1] else line.rstrip())
    return "\n".join(out).strip()


# An answer marker followed by no answer: the model says it will answer later.
_DEFERRED = re.compile(r"[\s(\[*_]*(?:to be (?:determined|confirmed|decided)|tbd|pending|not yet"
                       r"|unknown yet|after (?:the )?(?:zoom|crop|action|next step))\b", re.I)


_JSON_STEP = re.compile(r"""["']step["']\s*:\s*["']?(\d{1,6})""")


def _from_expected_step(visible: str, expected: int, warnings: list[str], module: Any,
                        convention: str, canvas_size: tuple[int, int] | None
                        ) -> tuple[str, list[StepHeader] | None]:
    """``visible`` from the first marker of step ``expected`` on, when what comes before it
    restates earlier steps: their markers, and action blocks that all say an earlier step
    ("step": 1 at step 2). A model that numbers its own reasoning "Step 1:", or whose new
    action comes before its header, keeps its action: all of it is read. Also the step markers
    of the text returned, when it is ``visible`` itself (None when it was cut)."""
    headers = find_step_headers(visible)
    first = next((h for h in headers if h.number == expected), None)
    if first is None:
        return visible, headers
    earlier = sorted({h.number for h in headers if h.start < first.start and h.number < expected})
    if not earlier:
        return visible, headers
    head = visible[:first.start]
    before = module.parse(head, convention=convention, canvas_size=canvas_size, tool_calls=())
    said = [int(n) for n in _JSON_STEP.findall(head)]
    # Restated: no action at all before the step asked for, or blocks that all say an earlier
    # step. An action with no step number there may be this step's: all of it is read.
    restated = not before.candidates or (said and max(said) < expected)
    if not restated:
        return visible, headers
    warnings.append(f"the reply restates step{'s' if len(earlier) > 1 else ''} "
                    f"{', '.join(map(str, earlier))} before Step {expected}; read from Step "
                    f"{expected} on")
    return visible[first.start:], None


_NO_OPS = frozenset({"none", "no_action", "noop", "no-op", "null", "nothing", "", "stop",
                     "answer", "final", "final_answer", "done", "finish"})
# A step marker opening a line, as before an answer written on the marker's line.
# Possessive runs: a long run of spaces or asterisks must not be tried every way (quadratic).
_HEADER_LEAD = re.compile(r"[ \t>#*_-]*+step[ \t]*+\d++[ \t]*+(?:\([^)\n]{0,40}\))?[ \t*_]*+"
                          r"[:：.-]?[ \t*_]*+", re.IGNORECASE)


def _no_op(raw: Any) -> bool:
    if raw is None or raw == {}:
        return True
    if isinstance(raw, dict):
        kind = raw.get("type", raw.get("action"))
        # No type ({"name": "zoom", …}) is still an attempt at an action.
        return isinstance(kind, str) and kind.strip().lower() in _NO_OPS
    return False


def _not_an_answer_beside_an_action(answer: FoundAnswer, text: str) -> bool:
    """Whether an answer found beside a proposed action is thought, not the answer: only a
    "Final Answer:" marker opening its line (or right after the line's step marker) that gives
    an answer counts there."""
    if answer.source in ("answer_line", "answer_is"):
        return True
    if answer.source == "final_answer" and not answer.at_line_start:
        line_start = text.rfind("\n", 0, answer.start) + 1
        if _HEADER_LEAD.fullmatch(text, line_start, answer.start) is None:
            return True
    return _DEFERRED.match(answer.text) is not None or placeholder(answer.text) is not None


def _placeholder_read(answer: FoundAnswer, kind: str, warnings: list[str]) -> FoundAnswer | None:
    """A final answer that names nothing yet, with no action beside it: a template's blank
    ("?", "[your answer]") or an answer put off ("to be determined after zooming") is thought,
    and the trajectory goes on (taken as the answer, it ended the trajectory scored wrong); a
    bare "To be determined", "TBD" or "Pending" is kept, as the image may say it, and warned."""
    shown = shown_answer(answer.text)
    if kind == "maybe":
        warnings.append(f"the final answer {shown!r} reads like a placeholder; kept as the "
                        "answer (the image may say it)")
        return answer
    warnings.append(f"the final answer {shown!r} names no answer yet ({PLACEHOLDER_WHY[kind]}); "
                    "read as thought, "
                    "not as the final answer")
    return None


def _parse(
    text: str,
    module: Any,
    dialect: str,
    convention: str,
    canvas_size: tuple[int, int] | None,
    tool_calls: tuple[Any, ...],
    expected_step: int | None = None,
    choices: tuple[str, ...] = (),
) -> ParsedStep:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    think = split_think(text)
    flags = set(think.flags)
    warnings = list(think.warnings)
    visible = think.visible
    markers = None  # the step markers of ``visible``, once found
    if expected_step is not None:
        visible, markers = _from_expected_step(visible, expected_step, warnings, module,
                                               convention, canvas_size)

    ext: Extraction = module.parse(
        visible, convention=convention, canvas_size=canvas_size, tool_calls=tool_calls
    )
    flags.update(ext.flags)
    warnings.extend(ext.warnings)

    # Validated first: whether the reply proposes an action decides how its answer is read.
    validated = []
    for cand in ext.candidates:
        notes = list(cand.warnings)
        action = None
        if cand.vaot is not None:
            action, more = validate_action(cand.vaot, cand.convention)  # type: ignore[arg-type]
            notes.extend(more)
        validated.append((cand, action, notes))
    # Anything but an explicit no-op ({"type": "none"}, filling the protocol's one-action slot)
    # is an attempt at an action, valid or not: an answer beside it is read as beside an action.
    tries = any(not _no_op(cand.raw) for cand, _, _ in validated)

    # The answer and the step markers are looked for outside the action blocks only.
    rest = blank_spans(visible, ext.spans)
    cuts = list(ext.spans)
    unread: list[str] = []
    answer = find_final_answer(rest, unread)
    if answer is not None and tries and _not_an_answer_beside_an_action(answer, rest):
        # "Answer: pending", "…decide the final answer: the colour…", "Final Answer: (to be
        # determined after zooming)" beside an action block: part of the thought. The trajectory
        # goes on and the action runs; taken as the answer, it ended the trajectory with prose.
        warnings.append("an answer marker next to a proposed action, not at a line's start or "
                        "not giving an answer, is read as thought, not as the final answer")
        answer = None
    elif answer is not None and (kind := placeholder(answer.text)) is not None:
        answer = _placeholder_read(answer, kind, warnings)
    elif answer is None and not tries:
        # "B" and nothing else, for a sample with choices: the answer with no marker. Not from
        # a think block read as the reply (never closed, or nothing after it).
        if choices and not ext.candidates and not flags & {"unclosed_think",
                                                            "empty_after_think"}:
            answer = lone_option(visible, choices)
        if answer is None:
            warnings.extend(unread)  # "Answer: TBD", "So the answer is TBD.": why none was read
    if answer is not None:
        if answer.source != "boxed":  # \boxed{} sits inside a sentence of the reasoning
            cuts.append((answer.start, answer.end))
        flags.add("final_answer")
        flags.update(
            {"boxed": {"boxed_answer"}, "answer_tag": {"answer_tag"}}.get(answer.source, set())
        )
        warnings.extend(answer.warnings)
    scanned = blank_spans(rest, [(answer.start, answer.end)] if answer else [])
    # Most replies hold no block and no answer to blank: the markers were found already.
    headers = markers if scanned is visible and markers is not None else find_step_headers(scanned)
    cuts.extend((h.start, h.end) for h in headers)
    if headers:
        flags.add("step_headers")
        if any(h.bold for h in headers):
            flags.add("bold_markers")
        if any(not h.colon for h in headers):
            flags.add("missing_colon")
    numbers = list(dict.fromkeys(h.number for h in headers))
    if len(numbers) > 1:
        flags.add("multiple_steps")
        warnings.append(f"the reply holds steps {', '.join(map(str, numbers))}; parsed them as one")
    step = numbers[0] if numbers else ext.step
    if numbers and ext.step is not None and ext.step not in numbers:
        warnings.append(f"the marker says step {numbers[0]} but the JSON says step {ext.step}")

    thought = _tidy(_cut(visible, cuts))
    if not thought and think.reasoning and "unclosed_think" not in flags:
        thought = think.reasoning.strip()
        flags.add("thought_from_think")

    actions, sources, raws = [], [], []
    several = len(ext.candidates) > 1
    for i, (cand, action, notes) in enumerate(validated, 1):
        prefix = f"action {i}: " if several else ""
        raws.append(cand.raw)
        if action is None:
            flags.add("invalid_action")
            if cand.vaot is None:  # the dialect's last note says why it could not convert
                notes[-1:] = [f"invalid action: {notes[-1] if notes else 'could not be converted'}"]
        else:
            actions.append(action)
            sources.append(cand.source)
        warnings.extend(prefix + n for n in notes)
    if len(actions) > 1:
        flags.add("multiple_actions")
        warnings.append(f"{len(actions)} actions in one step (the protocol asks for one); kept all")
    if actions and answer is not None:
        flags.add("action_and_answer")
        warnings.append("the reply both proposes an action and gives a final answer")

    global_style, style_warnings = validate_global_style(ext.global_style)
    warnings.extend(style_warnings)

    if not ext.candidates:
        for pattern, readers, what, suggestion in _HINTS:
            if dialect not in readers and pattern.search(visible):
                warnings.append(
                    f"the reply holds {what}, which the {dialect!r} dialect does not read "
                    f"(try: {suggestion})"
                )

    unknown = flags - FLAGS.keys()
    assert not unknown, unknown  # a flag outside the documented vocabulary is a bug here
    return ParsedStep(
        thought=thought,
        actions=tuple(actions),
        action_sources=tuple(sources),
        raw_actions=tuple(raws),
        final_answer=answer.text if answer else None,
        answer_choice=answer.choice if answer else None,
        step=step,
        global_style=global_style,
        visual_rationale=ext.visual_rationale,
        reasoning=think.reasoning,
        warnings=tuple(dict.fromkeys(warnings)),
        flags=tuple(sorted(flags)),
        dialect=dialect,
        convention=convention,
    )
