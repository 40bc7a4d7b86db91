"""``vaot render``: one action or a block in, PNG and state hash out; bad input is one line."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from adapters.renderers import load_image
from adapters.renderers.encode import encode_png, image_hash
from engine.cli import main

from ._scene import scene

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "in.png"
    path.write_bytes(encode_png(scene()))
    return path


def test_inline_action_prints_the_state_hash(image, tmp_path, capsys):
    out = tmp_path / "out.png"
    action = '{"type": "annotate", "target": [100, 100, 500, 500], "content": "gear"}'
    assert main(["render", str(image), action, "-o", str(out)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == image_hash(load_image(out)).hex()


def test_a_label_the_fonts_cannot_draw_is_warned_of(image, tmp_path, capsys):
    # As a run's step warnings say: the characters come out as empty boxes.
    out = tmp_path / "out.png"
    action = '{"type": "annotate", "target": [100, 100, 500, 500], "content": "血管 ok"}'
    assert main(["render", str(image), action, "-o", str(out)]) == 0
    assert "cannot draw (血管)" in capsys.readouterr().err


def test_block_from_file_with_global_style_and_warnings(image, tmp_path, capsys):
    spec = tmp_path / "block.json"
    spec.write_text(
        json.dumps(
            {
                "global_style": {"theme": "biology"},
                "action": [
                    {
                        "type": "highlight",
                        "target": [0, 0, 500, 500],
                        "style": {"feather": "fuzzy"},
                    },
                    {"type": "zoom", "target": [0, 0, 500, 500]},
                ],
            }
        )
    )
    out = tmp_path / "out.png"
    assert main(["render", str(image), str(spec), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "style.feather" in captured.err
    assert "frame in original (0–1000 on each axis, not pixels): [0.0, 0.0, 500.0, 500.0]" in captured.err
    assert load_image(out).size == (320, 240)


def test_other_dialects_go_through_the_parser(image, tmp_path, capsys):
    reply = '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 160, 120]}}</tool_call>'
    out = tmp_path / "out.png"
    assert main(["render", str(image), reply, "--dialect", "deepeyes", "-o", str(out)]) == 0
    assert "frame in original (0–1000 on each axis, not pixels): [0.0, 0.0, 500.0, 500.0]" in capsys.readouterr().err


def test_a_file_of_vaot_reply_text_renders_as_its_action_block(image, tmp_path, capsys):
    # A Step's raw_text, as `vaot export` gives it: before, the default dialect took it for
    # JSON ("not valid JSON"), and the other dialects' hint said to use the default.
    block = {"step": 1, "visual_rationale": "closer", "action": [
        {"type": "zoom", "target": [0, 0, 500, 500]}]}
    reply = tmp_path / "reply.txt"
    reply.write_text("Step 1 (Text): The label is small.\n\nStep 1 (Action Description):\n"
                     f"```json\n{json.dumps(block)}\n```\n")
    assert main(["render", str(image), str(reply), "-o", str(tmp_path / "a.png")]) == 0
    from_reply = capsys.readouterr().out.strip()
    assert main(["render", str(image), json.dumps(block), "-o", str(tmp_path / "b.png")]) == 0
    assert from_reply == capsys.readouterr().out.strip()
    reply.write_text("Step 1 (Text): I cannot tell yet.")
    assert main(["render", str(image), str(reply), "-o", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert "no usable action" in err and err.count("\n") == 1


def test_a_file_of_reply_text_that_begins_with_its_action_block_renders(image, tmp_path,
                                                                        capsys):
    # A reply may open with its block and go on in words: being neither JSON nor read as a
    # reply, it was refused as "not valid JSON".
    block = {"step": 1, "action": [{"type": "zoom", "target": [0, 0, 500, 500]}]}
    reply = tmp_path / "reply.txt"
    reply.write_text(f"{json.dumps(block)}\nStep 1 (Text): the label is small, so closer.\n")
    assert main(["render", str(image), str(reply), "-o", str(tmp_path / "a.png")]) == 0
    from_reply = capsys.readouterr().out.strip()
    assert main(["render", str(image), json.dumps(block), "-o", str(tmp_path / "b.png")]) == 0
    assert from_reply == capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ('{"type": "zoom"', "not valid JSON"),
        ('{"type": "zoom"}', "missing required field 'target'"),
        ('{"type": "zoom", "target": [5, 5, 5, 9]}', "zero area"),
        ("[]", "holds no action"),
        ("no-such-file.json", "no such file"),
    ],
)
def test_bad_actions_get_one_line(image, tmp_path, capsys, spec, message):
    assert main(["render", str(image), spec, "-o", str(tmp_path / "o.png")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_image_gets_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    assert (
        main(
            [
                "render",
                str(bad),
                '{"type": "crop", "target": [0, 0, 9, 9]}',
                "-o",
                str(tmp_path / "o.png"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert str(bad) in err and err.count("\n") == 1


def test_an_output_named_otherwise_is_still_png_and_says_so(image, tmp_path, capsys):
    out = tmp_path / "out.jpg"
    action = '{"type": "zoom", "target": [0, 0, 500, 500]}'
    assert main(["render", str(image), action, "-o", str(out)]) == 0
    assert "is written as PNG" in capsys.readouterr().err
    assert out.read_bytes().startswith(b"\x89PNG")  # lossless: the pixels the hash is of


def _no_room_past(limit: int):
    def apply() -> None:
        # A file-size limit is a disk that fills midway through the PNG (EFBIG), without
        # filling this machine's disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_render_that_stops_midway_leaves_the_earlier_png_whole(tmp_path):
    # The PNG was written in place: a render stopped midway (a full disk here, a kill) left
    # the first half of a PNG where a whole one had been.
    noise = np.random.default_rng(7).integers(0, 256, (200, 200, 3), dtype=np.uint8)
    image = tmp_path / "noise.png"
    image.write_bytes(encode_png(Image.fromarray(noise)))  # ~120 kB: it does not compress
    out = tmp_path / "out.png"
    earlier = encode_png(scene())
    out.write_bytes(earlier)
    done = subprocess.run(
        [sys.executable, "-m", "engine", "render", str(image),
         '{"type": "annotate", "target": [100, 100, 500, 500], "content": "x"}', "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        preexec_fn=_no_room_past(len(earlier) + 1000),
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"vaot render: error: {out}: File too large"), done.stderr
    assert out.read_bytes() == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noise.png", "out.png"]


def test_a_render_writes_through_a_link_and_keeps_a_files_permissions(image, tmp_path):
    # Renamed into place, a symlink would become a plain file and the file it names go stale.
    action = '{"type": "zoom", "target": [0, 0, 500, 500]}'
    real, link = tmp_path / "real.png", tmp_path / "link.png"
    real.write_bytes(b"old")
    link.symlink_to(real)
    assert main(["render", str(image), action, "-o", str(link)]) == 0
    assert link.is_symlink() and load_image(real).size == (320, 240)
    private = tmp_path / "private.png"
    private.write_bytes(b"old")
    private.chmod(0o600)
    assert main(["render", str(image), action, "-o", str(private)]) == 0
    assert private.stat().st_mode & 0o777 == 0o600 and load_image(private).size == (320, 240)


@pytest.mark.parametrize(("spec", "stdin", "said"), [
    ("-", b'{"type": "zoom", "target": [0, 0, 500, 500], "content": "\xff"}',
     "stdin: not UTF-8 text (byte 57)"),
    (b'{"type": "zoom", "target": [0, 0, 500, 500], "content": "\xff"}', b"",
     "ACTION_JSON: not UTF-8 text (byte 57)"),
], ids=["stdin", "inline"])
def test_action_json_that_is_not_utf8_is_one_line(image, tmp_path, spec, stdin, said):
    # A byte that is not UTF-8 came through as a lone surrogate, which the JSON decoder's
    # encode met as a traceback (UnicodeEncodeError).
    done = subprocess.run(
        [sys.executable, "-m", "engine", "render", str(image), spec, "-o", str(tmp_path / "o.png")],
        cwd=ROOT, input=stdin, capture_output=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"})
    assert done.returncode == 2 and done.stderr.decode() == f"vaot render: error: {said}\n"
    assert not (tmp_path / "o.png").exists()
