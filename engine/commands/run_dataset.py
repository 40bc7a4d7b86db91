"""What ``vaot run`` says of its dataset before it runs: the rows skipped at load, and the
samples whose answer names none of their choices (loaded and run, but worth a warning)."""

from __future__ import annotations

from rich.console import Console

from adapters.datasets.base import IMAGE_NOTE
from analysis.scoring import truth_option
from engine.config import RunConfig
from engine.logs import log_path_for
from engine.printable import printable

__all__ = ["answers_naming_no_choice", "images_noted", "questions_with_placeholder",
           "tell_image_notes", "tell_placeholders", "tell_skipped", "tell_unmatched"]


def tell_skipped(err: Console, config: RunConfig, skipped: list, *, any_usable: bool,
                  dry_run: bool) -> None:
    """Tell the first dataset rows skipped at load, and how many more there were.

    A few when the run goes on (all are logged once it starts, beside the store); more when
    nothing is usable or for a dry run, as no run starts and no log is written: the terminal
    is all there is, and a dry run is where the dataset is checked.
    """
    shown = 5 if any_usable and not dry_run else 50
    for row in skipped[:shown]:
        err.print(printable(f"skipped {row.source}:{row.line}: {row.reason}"), markup=False)
    if len(skipped) > shown:
        log_file = log_path_for(config.store)
        where = (f" (all listed in {log_file})" if any_usable and log_file and not dry_run
                 else "")
        err.print(f"… and {len(skipped) - shown} more skipped rows{where}", markup=False)


def answers_naming_no_choice(samples: list) -> list:
    """The samples with choices whose answer names none of them, as the scorer reads both
    (analysis.scoring.truth_option): "C" of two choices, or a typo in an option's text."""
    named: dict[tuple, bool] = {}  # (answer, choices) -> names one: datasets repeat their options
    out = []
    for sample in samples:
        if not sample.choices:
            continue
        key = (str(sample.answer), tuple(sample.choices))
        if key not in named:
            named[key] = truth_option(key[0], key[1]) is not None
        if not named[key]:
            out.append(sample)
    return out


def tell_unmatched(err: Console, unmatched: list, *, dry_run: bool) -> None:
    """Warn of samples whose answer names none of their choices: loaded and run, since a
    free-form reply may still match the answer as written, but a model that picks an offered
    option is scored wrong on them, which reads as the model's error in the tables."""
    shown = 50 if dry_run else 5
    for sample in unmatched[:shown]:
        choices = ", ".join(repr(choice) for choice in sample.choices)
        err.print(printable(f"warning: sample {sample.id}: its answer {str(sample.answer)!r} "
                            f"names none of its choices ({choices}); a model that picks one of "
                            f"them is scored wrong{_if_an_index(sample)}"), markup=False)
    if len(unmatched) > shown:
        err.print(f"warning: … and {len(unmatched) - shown} more samples whose answer names "
                  "none of their choices" + ("" if dry_run else " (all in the run's log)"),
                  markup=False)


IMAGE_PLACEHOLDER = "<image>"
"""Where LLaVA-style data puts the image in its text: vaot sends the image on its own."""


def questions_with_placeholder(samples: list) -> list:
    """The samples whose question holds :data:`IMAGE_PLACEHOLDER` (data converted from a
    LLaVA-style conversation, ``"<image>\\nWhat is …"``)."""
    return [sample for sample in samples if IMAGE_PLACEHOLDER in sample.question]


def tell_placeholders(err: Console, placed: list, *, dry_run: bool) -> None:
    """Warn of questions that hold an image placeholder: sent as written, a model reads
    "<image>" as text beside the image it is sent, and a server for LLaVA-style models may
    take it for an image of its own, which the request does not hold."""
    if not placed:
        return
    shown = 50 if dry_run else 5
    names = ", ".join(sample.id for sample in placed[:shown])
    more = f" and {len(placed) - shown} more" if len(placed) > shown else ""
    err.print(printable(
        f"warning: the question of {len(placed)} sample{'s' if len(placed) != 1 else ''} "
        f"({names}{more}) holds {IMAGE_PLACEHOLDER!r}, another format's placeholder for the "
        "image: vaot sends the image on its own and the question as written, so the model "
        f"reads {IMAGE_PLACEHOLDER!r} as text (a LLaVA-style server may take it for an image "
        "the request does not hold); remove it from the question"), markup=False)


def images_noted(samples: list) -> list:
    """The samples whose image is used but worth a warning (an animation, of which only the
    first frame is shown; 16-bit data shown nearly black), as the loader found it."""
    return [sample for sample in samples if sample.meta.get(IMAGE_NOTE)]


def tell_image_notes(err: Console, noted: list, *, dry_run: bool) -> None:
    """Warn of the images that are loaded and run as their files say, but likely not as the
    user meant them to be seen."""
    shown = 50 if dry_run else 5
    for sample in noted[:shown]:
        if sample.image_inline is not None:
            image = f"(inline, at line {sample.image_inline.line})"
        else:
            image = repr((sample.meta.get("image") or sample.meta.get("image_path") or "")[:120])
        err.print(printable(f"warning: sample {sample.id}: its image {image}: "
                            f"{sample.meta[IMAGE_NOTE]}"), markup=False)
    if len(noted) > shown:
        err.print(f"warning: … and {len(noted) - shown} more samples whose image is worth a look"
                  + ("" if dry_run else " (all in the run's log)"), markup=False)


def _if_an_index(sample) -> str:
    """A clause for an answer that looks like an option's position ("answer": 1 of two
    choices, as ScienceQA writes it): the scorer reads it as a number, not as an index."""
    answer = str(sample.answer).strip()
    if answer.isascii() and answer.isdigit() and int(answer) <= len(sample.choices):
        return (" (if it is the option's index, write the option's text or letter instead: an "
                "answer is not read as a position)")
    return ""
