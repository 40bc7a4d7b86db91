"""What parsing a reply costs the event loop: µs per reply, over replies of every dialect.

``parse_step`` runs once per model call on the engine's event loop. This prints the thread CPU
time per reply for three sets: the parser's test corpus (tests/engine/parsing/corpus, every
dialect, each reply parsed as the step its markers name), the short text-only reply of
``bench/rollout.py --phase A``, its zoom reply, and the final answer that ends every one of its
trajectories. Best of ``--repeat`` rounds, each parsing
every reply of the set ``--rounds`` times, so a noisy host shows less.

    python bench/parse.py [--repeat 7] [--rounds 200]
"""

from __future__ import annotations

import argparse
import re
import time
import tomllib
from pathlib import Path

from engine.parsing import parse_step

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "engine" / "parsing" / "corpus"
# The replies of bench/_fake_api.py, as phase A (text) and phase B (zoom) receive them.
ROLLOUT_TEXT = "Step 2 (Text): Comparing the parts of the image I have seen so far."
ROLLOUT_ZOOM = ('Step 2 (Text): I need a closer look at this part.\nStep 2 (Action Description):'
                '\n```json\n{"step": 2, "visual_rationale": "closer", "action": [{"type": "zoom",'
                ' "target": [180, 180, 660, 700]}]}\n```')
ROLLOUT_FINAL = "Step 9 (Text): That settles it.\nFinal Answer: 1"
_STEP = re.compile(r"(?:step|步骤|第)\s*(\d{1,4})", re.IGNORECASE)


def corpus() -> list[tuple[str, dict]]:
    """(reply, parse_step keywords) of every corpus reply, with the settings its test uses."""
    expected = tomllib.loads((CORPUS / "expected.toml").read_text("utf-8"))
    out = []
    for name, exp in sorted(expected.items()):
        text = (CORPUS / f"{name}.txt").read_text("utf-8")
        step = _STEP.search(text)
        canvas = exp.get("canvas")
        out.append((text, {"dialect": exp.get("dialect", "vaot"),
                           "convention": exp.get("convention", "xyxy"),
                           "canvas_size": tuple(canvas) if canvas else None,
                           "expected_step": int(step.group(1)) if step else None}))
    return out


def per_reply_us(replies: list[tuple[str, dict]], repeat: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(rounds):
            for text, kwargs in replies:
                parse_step(text, **kwargs)
        best = min(best, time.thread_time() - t0)
    return best / (rounds * len(replies)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    replies = corpus()
    chars = sum(len(text) for text, _ in replies) / len(replies)
    sets = [
        (f"corpus ({len(replies)} replies, {chars:.0f} characters on average)", replies, 1),
        ("rollout phase A reply", [(ROLLOUT_TEXT, {"expected_step": 2})], 20),
        ("rollout phase B reply", [(ROLLOUT_ZOOM, {"expected_step": 2})], 20),
        ("rollout final answer", [(ROLLOUT_FINAL, {"expected_step": 5})], 20),
    ]
    for label, chosen, more in sets:
        us = per_reply_us(chosen, args.repeat, args.rounds * more)
        print(f"{label}: {us:.1f} µs per reply")


if __name__ == "__main__":
    main()
