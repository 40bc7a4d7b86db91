"""``vaot parse``: JSON on stdout for any reply; one line on stderr and exit 2 for bad input."""

from __future__ import annotations

import io
import sys

import msgspec
import pytest

from engine.cli import main

REPLY = (
    "**Step 1 (Text):** zoom on the sign\n"
    '```json\n{"step": 1, "action": [{"type": "zoom", "target": [100, 100, 400, 300],}]}\n```\n'
)


def test_parse_a_file(tmp_path, capsys):
    path = tmp_path / "reply.txt"
    path.write_text(REPLY, encoding="utf-8")
    assert main(["parse", str(path)]) == 0
    out = msgspec.json.decode(capsys.readouterr().out)
    assert out["actions"] == [{"type": "zoom", "target": [100, 100, 400, 300]}]
    assert out["thought"] == "zoom on the sign"
    assert out["step"] == 1
    assert any("extra commas" in w for w in out["warnings"])


def test_parse_stdin_with_dialect_and_canvas(monkeypatch, capsys):
    reply = '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 50, 20]}}</tool_call>'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(reply.encode())))
    assert main(["parse", "-", "--dialect", "deepeyes", "--canvas", "100x40"]) == 0
    out = msgspec.json.decode(capsys.readouterr().out)
    assert out["actions"] == [{"type": "zoom", "target": [0, 0, 500, 500]}]
    assert out["dialect"] == "deepeyes"


def test_yxyx_convention(tmp_path, capsys):
    path = tmp_path / "reply.txt"
    path.write_text(REPLY, encoding="utf-8")
    assert main(["parse", str(path), "--convention", "yxyx"]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["actions"][0]["target"] == [
        100,
        100,
        300,
        400,
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["parse", "{missing}"], "No such file"),
        (["parse", "{dir}"], "Is a directory"),
        (["parse", "{bad}"], "not UTF-8"),
        (["parse", "{good}", "--canvas", "0x10"], "not a size"),
        (["parse", "{good}", "--canvas", "wide"], "not a size"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    (tmp_path / "bad.bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "good.txt").write_text(REPLY, encoding="utf-8")
    paths = {
        "missing": tmp_path / "nope.txt",
        "dir": tmp_path,
        "bad": tmp_path / "bad.bin",
        "good": tmp_path / "good.txt",
    }
    argv = [a.format(**paths) for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.err.startswith("vaot parse: ")


def test_unknown_dialect_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["parse", "-", "--dialect", "gpt"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
