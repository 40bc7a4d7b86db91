"""``vaot parse``: print how one raw model reply is parsed, as JSON.

For people writing prompts: paste a reply into a file (or pipe it in) and see the thought, the
canonical actions, the final answer and every warning the engine would record. A reply's native
tool calls (``--tool-calls FILE``) may be pasted as any of the three APIs returns them.
"""

from __future__ import annotations

import argparse
import re
import sys

import msgspec

from engine.commands._errors import print_error

NAME = "parse"
HELP = "parse one raw model reply and print thought, actions, answer and warnings"

_CANVAS = re.compile(r"^\s*(\d{1,6})\s*[xX×,]\s*(\d{1,6})\s*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the command's arguments."""
    from engine.parsing import DIALECTS

    parser.epilog = ("Prints the parse as JSON on standard output, a note on standard error "
                     "when a flag is missing to read it. Exit status: 0 when the reply was "
                     "parsed (a reply with no action or answer too: its warnings say why), 2 "
                     "for bad input (FILE or --tool-calls unreadable, not UTF-8 or not JSON, "
                     "a bad --canvas).")

    parser.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="the reply text; '-' or none: stdin"
    )
    parser.add_argument(
        "--dialect", default="vaot", choices=sorted(DIALECTS), help="action dialect (default vaot)"
    )
    parser.add_argument(
        "--convention",
        default="xyxy",
        choices=("xyxy", "yxyx"),
        help="coordinate order of VAoT boxes and points (default xyxy)",
    )
    parser.add_argument(
        "--canvas",
        metavar="WxH",
        help="pixel size of the image the model saw (needed by the deepeyes dialect)",
    )
    parser.add_argument(
        "--tool-calls", metavar="FILE",
        help="a JSON file with the reply's native tool calls (openai dialect), a list as the API "
        "returned it: OpenAI's tool_calls ({function: {name, arguments}}), Anthropic's tool_use "
        "blocks ({name, input}), Gemini's parts ({functionCall: {name, args}}) or plain "
        "{name, arguments} objects",
    )
    parser.add_argument(
        "--choice", action="append", default=[], metavar="TEXT", dest="choices",
        help="one of the sample's options, repeated for each in order (--choice '10 cm' "
        "--choice '15 cm'), as a run passes them: a reply that is only an option letter "
        "('B', '(B)', 'B. 15 cm') is read as the final answer only with them",
    )
    parser.add_argument(
        "--step", type=_positive, metavar="N",
        help="the step the reply was asked for, as a run passes it: earlier steps the reply "
        "restates before Step N are not read (their actions ran already); default: the "
        "whole reply is read",
    )


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def _canvas(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    m = _CANVAS.match(value)
    if not m or int(m.group(1)) == 0 or int(m.group(2)) == 0:
        raise ValueError(f"--canvas {value!r} is not a size like 1024x768")
    return int(m.group(1)), int(m.group(2))


def _tool_calls(path: str | None, dialect: str) -> tuple:
    """The native calls in ``path`` as the adapters record them (``ToolCall``)."""
    from adapters.models.base import ToolCall

    if path is None:
        return ()
    if dialect != "openai":
        raise ValueError(f"--tool-calls: the {dialect} dialect reads no native tool calls; "
                         "give --dialect openai")
    try:
        data = msgspec.json.decode(_read(path))
    except OSError as exc:
        raise ValueError(f"--tool-calls {path}: {exc.strerror or exc}") from None
    except _NotUtf8 as exc:
        raise ValueError(f"--tool-calls {path}: {exc.reason}") from None
    except msgspec.DecodeError as exc:
        raise ValueError(f"--tool-calls {path}: not JSON ({exc})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"--tool-calls {path}: expected a list of tool calls")
    calls = []
    for n, item in enumerate(data):
        call = item.get("function") or item.get("functionCall") or item if isinstance(
            item, dict) else None
        name = call.get("name") if isinstance(call, dict) else None
        if not isinstance(name, str):
            raise ValueError(f"--tool-calls {path}: call {n} has no name (expected "
                             "{function: {name, arguments}}, {name, input}, {functionCall: "
                             "{name, args}} or {name, arguments})")
        arguments = next((call[k] for k in ("arguments", "input", "args") if k in call), {})
        if not isinstance(arguments, str):  # the APIs' objects, as the adapters record them
            arguments = msgspec.json.encode(arguments).decode()
        calls.append(ToolCall(name=name, arguments=arguments,
                              id=str(item.get("id") or call.get("id") or "")))
    return tuple(calls)


class _NotUtf8(ValueError):
    """A file (or stdin) whose bytes are not UTF-8 text; ``reason`` says so without naming it,
    for a caller that names the flag it came from as well."""

    def __init__(self, where: str, byte: int) -> None:
        self.reason = f"not UTF-8 text (byte {byte}); save it as UTF-8"
        super().__init__(f"{where} is {self.reason}")


def _read(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read()
        where = "stdin"
    else:
        with open(path, "rb") as fh:
            data = fh.read()
        where = path
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _NotUtf8(where, exc.start) from None


def run(args: argparse.Namespace) -> int:
    """Parse the reply and print the result; 2 on bad input, with one line on stderr."""
    from engine.parsing import parse_step

    try:
        canvas = _canvas(args.canvas)
        text = _read(args.file)
        tool_calls = _tool_calls(args.tool_calls, args.dialect)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        where = f"{args.file}: " if isinstance(exc, OSError) else ""
        print_error("parse", f"{where}{reason}")
        return 2
    parsed = parse_step(text, dialect=args.dialect, convention=args.convention, canvas_size=canvas,
                        tool_calls=tool_calls, expected_step=args.step,
                        choices=args.choices)
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(parsed), indent=2).decode() + "\n")
    if args.dialect == "deepeyes" and canvas is None and parsed.raw_actions:
        # Its boxes are pixels of the original image: without its size none can be drawn, and
        # the warning above does not say which flag gives it.
        print("note: deepeyes boxes are in pixels of the original image; give its size with "
              "--canvas WxH (as a run states it in each request) to read them", file=sys.stderr)
    return 0
