"""``vaot render IMAGE ACTION_JSON -o OUT.png``: apply one action (or a block) and print the state hash.

For people writing prompts: see exactly what the Pillow renderer returns for an action.
``ACTION_JSON`` is a file or inline JSON: one action object, a list of them, or a VAoT block
``{"action": [...], "global_style": {...}}``; ``-`` reads stdin. A file that is not JSON is read as
a reply's text (a Step's ``raw_text``, as ``vaot export`` gives it). With ``--dialect`` other
than ``vaot`` it is the raw reply text in that dialect (a DeepEyes ``<tool_call>``, a Mini-o3
``<grounding>``, …). Reply text is read by the step parser. The hex pixel hash of the new state
goes to stdout, warnings to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from engine.commands._errors import print_error
from engine.commands._files import write_atomically

NAME = "render"
HELP = "apply one visual action to an image and print the state hash"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    parser.epilog = ("Prints the hex pixel hash of the new state on standard output; warnings "
                     "and the frame in the original on standard error. A file already at "
                     "OUT.png is replaced only once the new PNG is whole. Exit status: 0 when the "
                     "PNG was written, 2 for bad input (IMAGE unreadable, ACTION_JSON no "
                     "action, an action that cannot be drawn, OUT.png not writable).")
    parser.add_argument("image", metavar="IMAGE", help="the input image (any format Pillow reads)")
    parser.add_argument(
        "actions",
        metavar="ACTION_JSON",
        help='a file, inline JSON or - (stdin): an action, a list, or {"action": [...]}; or a '
        'file of reply text (in --dialect\'s format). Coordinates are 0-1000 across the '
        'image\'s width and height, not pixels',
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.png", help="where to write the PNG"
    )
    try:
        from engine.parsing import DIALECTS

        dialects = sorted(DIALECTS)
    except ImportError:  # the parser is optional here: plain VAoT JSON needs only the validator
        dialects = ["vaot"]
    parser.add_argument(
        "--dialect",
        default="vaot",
        choices=dialects,
        help="how ACTION_JSON is written (default vaot: JSON; others: reply text, as `vaot parse`)",
    )
    parser.add_argument(
        "--convention",
        default="xyxy",
        choices=("xyxy", "yxyx"),
        help="coordinate order (default xyxy)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for jitter (default 0)")


class _BadInput(Exception):
    """One line for stderr."""


def _read_spec(spec: str, inline_text: bool) -> str:
    """The ACTION_JSON argument's text: stdin for ``-``, a file if one exists, else inline."""
    if spec == "-":
        # As bytes: the text stream let a byte that is not UTF-8 through as a lone surrogate,
        # which JSON decoding then met as a traceback.
        return _utf8(sys.stdin.buffer.read(), "stdin")
    path = Path(spec)
    if spec.lstrip().startswith(("{", "[")) or (inline_text and not path.is_file()):
        # The argument's own bytes: one that is not UTF-8 arrived as a lone surrogate.
        return _utf8(os.fsencode(spec), "ACTION_JSON")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _BadInput(f"{spec}: no such file (and not inline JSON)") from None
    except OSError as exc:
        raise _BadInput(f"{spec}: {exc.strerror or exc}") from None
    return _utf8(data, spec)


def _utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _BadInput(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _vaot_actions(data: Any, convention: str) -> tuple[list[Any], Any, list[str]]:
    """The actions of decoded ACTION_JSON: an action, a list, or a block."""
    from engine.actions import validate_action, validate_global_style

    style_raw = None
    if isinstance(data, dict) and "action" in data:
        style_raw = data.get("global_style")
        data = data["action"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise _BadInput("ACTION_JSON holds no action")
    warnings: list[str] = []
    actions = []
    for i, item in enumerate(items):
        action, found = validate_action(item, convention)  # type: ignore[arg-type]
        prefix = f"action {i + 1}: " if len(items) > 1 else ""
        warnings += [prefix + w for w in found]
        if action is None:
            raise _BadInput(prefix + (found[-1] if found else "unusable action"))
        actions.append(action)
    style, found = validate_global_style(style_raw)
    return actions, style, warnings + found


def _dialect_actions(text: str, dialect: str, convention: str, size: tuple[int, int]):
    from engine.parsing import parse_step

    try:
        parsed = parse_step(text, dialect=dialect, convention=convention, canvas_size=size)
    except ValueError as exc:
        raise _BadInput(str(exc)) from None
    if not parsed.actions:
        reason = parsed.warnings[-1] if parsed.warnings else "no action found"
        raise _BadInput(f"no usable action in ACTION_JSON ({reason})")
    return list(parsed.actions), parsed.global_style, list(parsed.warnings)


def run(args: argparse.Namespace) -> int:
    """Render and print the state hash; 2 on bad input, with one line on stderr."""
    from adapters.renderers import CanvasState, RenderError, encode_png, render
    from engine.observation import undrawable_labels

    try:
        state = CanvasState.load(args.image)
        text = _read_spec(args.actions, inline_text=args.dialect != "vaot")
        data: Any = None
        if args.dialect == "vaot" and text.lstrip().startswith(("{", "[")):
            try:
                data = msgspec.json.decode(text.encode())
            except msgspec.DecodeError as exc:
                # A file's reply text may begin with its action block; inline JSON is JSON.
                if args.actions.lstrip().startswith(("{", "[")):
                    raise _BadInput(f"ACTION_JSON is not valid JSON ({exc})") from None
        if data is not None:
            actions, style, warnings = _vaot_actions(data, args.convention)
        else:
            actions, style, warnings = _dialect_actions(
                text, args.dialect, args.convention, state.size
            )
        # A run says so in the step's warnings; the same label drawn here says so too.
        warnings += undrawable_labels(actions)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        result = render(state, actions, style, seed=args.seed)
        if Path(args.output).suffix.lower() not in ("", ".png"):
            # Written as PNG all the same: lossless, so the file holds the pixels the printed
            # hash is of; a JPEG would not.
            print(f"warning: {args.output} is written as PNG (lossless, the pixels the hash "
                  "is of), whatever its name says", file=sys.stderr)
        # Beside it and renamed into place: a render killed midway leaves no half PNG.
        write_atomically(Path(args.output), encode_png(result.image))
    except (_BadInput, RenderError) as exc:
        print_error("render", str(exc))
        return 2
    except OSError as exc:
        print_error("render", f"{exc.filename or args.output}: {exc.strerror or exc}")
        return 2
    print(result.hash.hex())
    if not result.frame.is_identity:
        f = result.frame
        print(
            f"frame in original (0–1000 on each axis, not pixels): "
            f"[{f.x1:.1f}, {f.y1:.1f}, {f.x2:.1f}, {f.y2:.1f}]", file=sys.stderr
        )
    return 0
