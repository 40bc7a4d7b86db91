"""A scripted model: replies from a fixture, chosen by the step the request asks for.

For tests and dry runs of a pipeline. ``scripted:NAME`` with ``options.extra["script"]`` a path
to a JSON object ``{"cot": "...", "steps": ["reply for step 1", "reply for step 2", ...]}`` (the
last reply repeats), or the built-in script: step 1 zooms on the centre, step 2 answers with the
first option. Every call is counted, so a test can assert that a rerun made none. A reply longer
than the request's ``max_tokens`` is cut there, as an API cuts it (``offline_reply``).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from adapters.models.base import (
    AdapterError,
    AdapterOptions,
    ModelReply,
    ModelRequest,
    TextPart,
    offline_reply,
)

__all__ = ["BUILTIN_SCRIPT", "Script", "ScriptedAdapter", "create"]


class Script(msgspec.Struct, frozen=True):
    steps: list[str]
    cot: str = "Step 1 (Text): I read the answer from the image.\nFinal Answer: {first_option}"


BUILTIN_SCRIPT = Script(steps=[
    "Step 1 (Text): The detail is small; I zoom on the centre.\n"
    "Step 1 (Action Description):\n```json\n"
    '{"step": 1, "visual_rationale": "enlarge the centre", '
    '"action": [{"type": "zoom", "target": [250, 250, 750, 750]}]}\n```',
    "Step 2 (Text): The zoomed image shows it clearly.\nFinal Answer: {first_option}",
])

_STEP = re.compile(r"Now write Step (\d+)\.")
# "Options: a; b", or one per line after "Options:" when one of them holds a ";".
_OPTIONS = re.compile(r"Options:(?: ([^;\n]+)|[ \t]*\n([^\n]+))")


class ScriptedAdapter:
    def __init__(self, name: str, script: Script) -> None:
        self.name = f"scripted:{name}"
        self.connection_key = self.name
        self.script = script
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        text = "\n".join(
            p.text for m in request.messages for p in m.content if isinstance(p, TextPart)
        )
        options = _OPTIONS.search(text)
        first = (options.group(1) or options.group(2)).strip() if options else "A"
        steps = _STEP.findall(text)
        if not steps:
            template = self.script.cot
        else:
            index = min(int(steps[-1]), len(self.script.steps)) - 1
            template = self.script.steps[index]
        reply = template.replace("{first_option}", first)
        return offline_reply(reply, request, len(text) // 4, self.name)  # cut at max_tokens

    async def aclose(self) -> None:
        return None


def create(model: str, options: AdapterOptions) -> ScriptedAdapter:
    path = options.extra.get("script")
    if path is None:
        return ScriptedAdapter(model, BUILTIN_SCRIPT)
    if not isinstance(path, str) or not path.strip():
        raise AdapterError(f"scripted model {model}: extra.script must be the path of a JSON "
                           f"script, got {path!r}")
    try:
        script = msgspec.json.decode(Path(path).read_bytes(), type=Script)
    except OSError as exc:
        raise AdapterError(f"scripted model {model}: cannot read script {path}: "
                           f"{exc.strerror or exc}") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AdapterError(f"scripted model {model}: cannot read script {path}: {exc}") from None
    if not script.steps:
        # Each call would pick a reply out of nothing: refused here, not failed per trajectory.
        raise AdapterError(f"scripted model {model}: script {path} has no steps; give at least "
                           f"one reply in \"steps\"")
    return ScriptedAdapter(model, script)
