"""Dataset text on the terminal: escapes shown, not obeyed; brackets printed, not read as markup."""

from __future__ import annotations

import io

from rich.console import Console

from analysis.records import TrajectoryRecord
from engine.printable import printable
from engine.progress import summary_tables


def test_control_characters_are_written_as_escapes() -> None:
    assert printable("a\nb\x1b[31mred\x9b\tc") == "a\\nb\\x1b[31mred\\x9b\\tc"
    assert printable("plain 2D, über") == "plain 2D, über"


def test_a_group_is_printed_as_written_whatever_it_holds() -> None:
    groups = ["\x1b[31mred", "[bold]x", "a[/b]"]  # an escape, markup, a closing tag alone
    records = [TrajectoryRecord(traj=g, run_id="r", sample_id=g, model="m", setting="vaot",
                                group=g, status="answered", correct=True) for g in groups]
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    for table in summary_tables(records, ["vaot"]):
        console.print(table)
    text = out.getvalue()
    assert "\\x1b[31mred" in text and "\x1b" not in text
    assert "[bold]x" in text and "a[/b]" in text
