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


def test_deepeyes_without_canvas_names_the_flag(monkeypatch, capsys):
    # The parser's warning says the canvas size is unknown; the note says how to give it.
    reply = '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 50, 20]}}</tool_call>'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(reply.encode())))
    assert main(["parse", "-", "--dialect", "deepeyes"]) == 0
    captured = capsys.readouterr()
    assert msgspec.json.decode(captured.out)["actions"] == []
    assert "--canvas WxH" in captured.err


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
    assert captured.err.startswith("vaot parse: error: ")


def test_unknown_dialect_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["parse", "-", "--dialect", "gpt"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


_ZOOM = {"type": "zoom", "target": [0, 0, 500, 500]}


@pytest.mark.parametrize("calls", [
    # As each API returns them: OpenAI's tool_calls, Anthropic's tool_use blocks, Gemini's
    # parts, and plain objects.
    [{"id": "call_1", "type": "function",
      "function": {"name": "visual_action", "arguments": msgspec.json.encode(_ZOOM).decode()}}],
    [{"type": "tool_use", "id": "toolu_1", "name": "visual_action", "input": _ZOOM}],
    [{"functionCall": {"name": "visual_action", "args": _ZOOM}, "thoughtSignature": "c2ln"}],
    {"name": "visual_action", "arguments": _ZOOM},
])
def test_native_tool_calls_are_read_in_each_apis_shape(tmp_path, capsys, calls):
    reply, path = tmp_path / "reply.txt", tmp_path / "calls.json"
    reply.write_text("Step 1 (Text): I zoom on the legend.\n", encoding="utf-8")
    path.write_bytes(msgspec.json.encode(calls))
    assert main(["parse", str(reply), "--dialect", "openai", "--tool-calls", str(path)]) == 0
    out = msgspec.json.decode(capsys.readouterr().out)
    assert out["actions"] == [_ZOOM] and out["thought"] == "I zoom on the legend."
    assert out["raw_actions"][0]["name"] == "visual_action"


@pytest.mark.parametrize(("argv", "content", "said"), [
    (["--dialect", "vaot"], "[]", "the vaot dialect reads no native tool calls"),
    (["--dialect", "openai"], "[{", "not JSON"),
    (["--dialect", "openai"], '[{"arguments": {}}]', "call 0 has no name"),
    (["--dialect", "openai"], '"zoom"', "expected a list of tool calls"),
    (["--dialect", "openai"], None, "calls.json: No such file or directory"),
])
def test_bad_tool_calls_get_one_line(tmp_path, capsys, argv, content, said):
    reply, path = tmp_path / "reply.txt", tmp_path / "calls.json"
    reply.write_text("Step 1 (Text): zoom.\n", encoding="utf-8")
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["parse", str(reply), *argv, "--tool-calls", str(path)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_tool_calls_that_are_not_utf8_are_named_by_their_flag(tmp_path, capsys):
    # The line named the file alone ("calls.json is not UTF-8 text …"), unlike every other
    # refusal of --tool-calls, and so read as if the reply's FILE were at fault.
    reply, path = tmp_path / "reply.txt", tmp_path / "calls.json"
    reply.write_text("Step 1 (Text): zoom.\n", encoding="utf-8")
    path.write_bytes(b'[{"name": "\xff"}]')
    assert main(["parse", str(reply), "--dialect", "openai", "--tool-calls", str(path)]) == 2
    assert capsys.readouterr().err == (f"vaot parse: error: --tool-calls {path}: not UTF-8 text "
                                       "(byte 11); save it as UTF-8\n")


def test_a_reply_that_is_not_utf8_is_named_as_before(tmp_path, capsys):
    reply = tmp_path / "reply.txt"
    reply.write_bytes(b"Step 1 \xff")
    assert main(["parse", str(reply)]) == 2
    assert capsys.readouterr().err == (f"vaot parse: error: {reply} is not UTF-8 text (byte 7); "
                                       "save it as UTF-8\n")


def test_a_lone_option_letter_is_read_with_the_choices_given(tmp_path, capsys):
    path = tmp_path / "reply.txt"
    path.write_text("B. 15 cm\n", encoding="utf-8")
    assert main(["parse", str(path)]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["final_answer"] is None
    assert main(["parse", str(path), "--choice", "10 cm", "--choice", "15 cm"]) == 0
    out = msgspec.json.decode(capsys.readouterr().out)
    assert (out["final_answer"], out["answer_choice"]) == ("B. 15 cm", "B")
