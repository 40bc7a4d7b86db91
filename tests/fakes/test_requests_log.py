"""The crash tests' reading of a fake server's requests log while the server writes it."""

from __future__ import annotations

from tests.fakes.crash import log_lines


def test_a_line_still_being_written_is_not_read_yet(tmp_path) -> None:
    log = tmp_path / "requests.jsonl"
    assert log_lines(log) == []  # no request yet, no file yet
    # A long request's line goes out in several writes: a reader may come between them.
    log.write_text('{"index": 0}\n{"index": 1}\n{"index": 2, "body": "half of it')
    assert log_lines(log) == [{"index": 0}, {"index": 1}]
    log.write_text('{"index": 0}\n{"index": 1}\n{"index": 2, "body": "all of it"}\n')
    assert [line["index"] for line in log_lines(log)] == [0, 1, 2]
