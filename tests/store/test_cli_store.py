"""The store's commands end to end: ``vaot tail --follow``, ``vaot verify``, ``vaot export``."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from store import LmdbStore, TrajectoryFinished
from store.recorder import blob_record
from tests.fakes.process import reap, reaped
from tests.store.helpers import (
    LineReader,
    png_blob,
    run_started,
    step,
    steps,
    where_permissions_apply,
)

ROOT = Path(__file__).resolve().parents[2]


def vaot(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A closed store with two trajectories, a run and one real PNG blob."""
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.append_sync([run_started("r"), *steps("a", 0, 3)])
        store.append_sync([step("b", 0), step("a", 3), step("b", 1)])
        key, data = png_blob(1)
        store.put_blob_sync(key, data)
    return path


# ---------------------------------------------------------------------- tail
def test_tail_follow_sees_every_event_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "store"
    batches = [steps("a", 0, 3), [step("b", 0)], steps("c", 0, 10), [step("a", 3), step("b", 1)]]
    total = sum(map(len, batches))
    with LmdbStore(path) as store:
        store.append_sync(batches[0])
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "tail", str(path), "--follow", "--json"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            reader = LineReader(proc.stdout)
            seqs = []

            def read(count: int) -> None:
                for _ in range(count):
                    line = reader.next()
                    assert line is not None, proc.stderr.read()
                    seqs.append(msgspec.json.decode(line)["seq"])

            read(len(batches[0]))  # the tail is up and has caught up with the log
            for batch in batches[1:]:  # every later batch is committed while it follows
                store.append_sync(batch)
                read(len(batch))
            assert seqs == list(range(total))
            assert proc.poll() is None  # still following
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            finally:
                reap(proc)  # killed if the SIGTERM did not stop it; its pipes closed


@pytest.mark.parametrize("then", ["deleted", "replaced"])
def test_tail_follow_of_a_store_deleted_or_replaced_stops_and_says_so(store_path: Path,
                                                                      tmp_path: Path,
                                                                      then: str) -> None:
    # `rm -rf runs/x.lmdb; vaot run --store runs/x.lmdb …` while a tail followed it: the old
    # store stayed readable through its map, and the tail waited on it for good, silent, while
    # the new run's events went to another file.
    proc = subprocess.Popen([sys.executable, "-m", "engine", "tail", "-f", str(store_path)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reader = LineReader(proc.stdout)
        for _ in range(7):  # caught up: every event of the store is out
            assert reader.next() is not None, proc.stderr.read()
        if then == "deleted":
            shutil.rmtree(store_path)
        else:
            new = tmp_path / "new"
            with LmdbStore(new) as store:
                store.append_sync([step("c", 0)])
            shutil.rmtree(store_path)
            new.rename(store_path)
        assert proc.wait(timeout=30) == 1
        assert proc.stderr.read() == (f"vaot tail: error: {store_path} was {then} while "
                                      "followed; nothing more will come from it (`vaot tail -f "
                                      f"{store_path}` follows a store made there since)\n")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_tail_prints_one_line_per_event(store_path: Path) -> None:
    done = vaot("tail", store_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 7
    assert "run started r" in lines[0]
    assert "step 1" in lines[1]
    done = vaot("tail", store_path, "--from", "5", "--json")
    assert [msgspec.json.decode(line)["seq"] for line in done.stdout.splitlines()] == [5, 6]


@pytest.mark.parametrize("command", [("tail",), ("tail", "--json"), ("export", "--jsonl")])
def test_a_reader_that_stops_early_ends_it_quietly(tmp_path: Path, command) -> None:
    # `vaot tail STORE | head`: far more output than a pipe holds, and the reader goes away.
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.append_sync(steps("a", 0, 4000))
    proc = subprocess.Popen([sys.executable, "-m", "engine", command[0], str(path),
                             *command[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT)
    with reaped(proc):
        assert proc.stdout.readline()
        proc.stdout.close()
        _, err = proc.communicate(timeout=60)
    assert err.decode() == ""  # no traceback
    assert proc.returncode == 141  # as if killed by SIGPIPE, the shells' convention


def test_tail_follow_whose_reader_went_away_ends_with_no_event_to_come(store_path: Path) -> None:
    # `vaot tail -f STORE | head -3`: the reader's going was noticed only by the next write, so
    # with the run over (no event to come) the follower stayed for good.
    proc = subprocess.Popen([sys.executable, "-m", "engine", "tail", "-f", str(store_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=30) == 141  # as if killed by SIGPIPE, the shells' convention
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_tail_escapes_control_characters_of_a_reply(tmp_path: Path) -> None:
    # The thought is the model's text: an escape sequence in it (clear the screen, colour, a
    # bell) went to the terminal as it was, where the answer beside it was escaped.
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0, thought="look \x1b[2J\x1b[31mred\x07 here",
                                final_answer="\x1b[31mB")])
    done = vaot("tail", path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "look \\x1b[2J\\x1b[31mred\\x07 here" in done.stdout
    assert "answer='\\x1b[31mB'" in done.stdout


@pytest.mark.parametrize("bad", ["-1", "18446744073709551616", "x"])
def test_tail_from_a_bad_sequence_number_is_one_clear_line(store_path: Path, bad: str) -> None:
    done = vaot("tail", store_path, "--from", bad)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "argument --from" in done.stderr and done.stderr.count("\n") == 1


def test_tail_from_past_the_end_says_so(store_path: Path) -> None:
    done = vaot("tail", store_path, "--from", "99")
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == "vaot tail: no events from 99 on; the store's last is 6\n"


def test_tail_on_a_missing_store_is_one_clear_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = vaot("tail", missing)
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(missing) in done.stderr
    assert "Traceback" not in done.stderr
    assert not missing.exists()


# ---------------------------------------------------------------------- verify
def test_verify_a_good_store(store_path: Path) -> None:
    done = vaot("verify", store_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok: 7 events in 3 streams, 1 blobs, 0 reply-cache entries, 1 runs\n"


def _verify_on_a_terminal(*args: str | Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """``vaot verify ARGS`` with stderr on a pseudo-terminal (stdout piped): what it drew there."""
    import threading

    master, slave = os.openpty()
    drawn = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer is gone
                return
            if not chunk:
                return
            drawn.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "verify", *map(str, args)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60, check=False,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    finally:
        os.close(slave)
        reader.join(timeout=60)
        os.close(master)
    return done, drawn.decode("utf-8", "replace")


def test_verify_draws_its_progress_on_a_terminal_and_clears_it(store_path: Path) -> None:
    done, drawn = _verify_on_a_terminal(store_path)
    assert done.returncode == 0
    assert done.stdout == "ok: 7 events in 3 streams, 1 blobs, 0 reply-cache entries, 1 runs\n"
    assert "blobs" in drawn and "1/1" in drawn and "events" in drawn and "7/7" in drawn
    assert drawn.rstrip().endswith("\x1b[2K")  # erased: the terminal keeps the verdict alone


def test_verify_without_progress_draws_nothing(store_path: Path) -> None:
    done, drawn = _verify_on_a_terminal(store_path, "--no-progress")
    assert done.returncode == 0 and done.stdout.startswith("ok: 7 events")
    assert drawn == ""


def _flip(path: Path, db: str, key: bytes, offset: int) -> None:
    with LmdbStore(path, create=False) as store:
        record = bytearray(
            dict(store.iter_records())[int.from_bytes(key, "big")]
            if db == "events"
            else store.get_blob_record(key)
        )
        record[offset] ^= 0x01
        store.corrupt_for_test(db, key, bytes(record))


@pytest.mark.parametrize(
    ("seq", "traj"),
    [(1, "a"), (5, "a"), (6, "b")],  # a's first event, a's last, b's last (the store's last)
    ids=["first", "last-of-a", "last-of-store"],
)
@pytest.mark.parametrize("where", ["body-start", "body-middle", "body-end"])
def test_verify_names_a_flipped_event_byte(store_path: Path, seq: int, traj: str, where) -> None:
    with LmdbStore(store_path, create=False) as store:
        size = len(dict(store.iter_records())[seq])
    offset = {"body-start": 34, "body-middle": (33 + size) // 2, "body-end": size - 1}[where]
    _flip(store_path, "events", seq.to_bytes(8, "big"), offset)
    done = vaot("verify", store_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    bad = [line for line in done.stderr.splitlines() if line.startswith("BAD ")]
    assert any(f"seq {seq})" in line or f"seq {seq}:" in line for line in bad), done.stderr


def test_verify_names_a_flipped_blob_byte(store_path: Path) -> None:
    key, data = png_blob(1)
    _flip(store_path, "blobs", key, 33 + len(data) // 2)
    done = vaot("verify", store_path)
    assert done.returncode == 1
    assert f"BAD blob {key.hex()}" in done.stderr


def test_verify_re_hashes_blob_pixels(store_path: Path) -> None:
    """Consistent bytes with other pixels under the key: only decoding the image catches it."""
    key, _ = png_blob(1)
    _, other = png_blob(2)
    with LmdbStore(store_path, create=False) as store:
        store.corrupt_for_test("blobs", key, blob_record(other))
    done = vaot("verify", store_path)
    assert done.returncode == 1
    assert f"BAD blob {key.hex()}: pixels do not hash" in done.stderr
    assert vaot("verify", store_path, "--no-pixels").returncode == 0


def test_verify_names_a_damaged_cached_reply(store_path: Path) -> None:
    with LmdbStore(store_path, create=False) as store:
        asyncio.run(store.cache_put(b"request", b"reply"))
        (key, record), = store.iter_cache_records()
        store.corrupt_for_test("cache", key, record[:-1] + b"!")
    done = vaot("verify", store_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"BAD cache entry {key.hex()}: damaged" in done.stderr


@pytest.mark.parametrize("command", ["verify", "report", "export", "tail", "images"])
@pytest.mark.parametrize("cut", [4096, "a third"])
def test_a_data_file_cut_short_is_one_line_not_a_crash(store_path: Path, tmp_path: Path,
                                                      command: str, cut) -> None:
    # A copy that did not finish: LMDB maps the file, and the first page read past its end
    # killed the command by SIGBUS (exit 135, not a word said). Damage: exit 1, as each
    # command's --help says.
    data = store_path / "data.mdb"
    size = data.stat().st_size
    left = size - (cut if isinstance(cut, int) else size // 3)
    os.truncate(data, left)
    extra = ("-o", tmp_path / "images") if command == "images" else ()
    done = vaot(command, store_path, *extra)
    assert done.returncode == 1, done.stderr
    said = done.stderr.splitlines()[-1]
    assert said.startswith(f"vaot {command}: error: ") and "Traceback" not in done.stderr
    assert "cut short" in done.stderr and f"{left:,} bytes" in done.stderr
    assert "restore it from a whole copy" in done.stderr or command == "verify"
    if command == "verify":
        assert done.stderr.startswith("BAD data.mdb: ")


def test_a_store_damaged_where_opening_reads_it_is_damage_not_a_folder_of_something_else(
        store_path: Path) -> None:
    # The root page of the main table, in the header LMDB reads (the newer of its two meta
    # pages), flipped: "cannot open as a vaot store", exit 2, as for a folder holding none.
    data = bytearray((store_path / "data.mdb").read_bytes())
    txnid = [int.from_bytes(data[page + 144:page + 152], "little") for page in (0, 4096)]
    data[(0 if txnid[0] > txnid[1] else 4096) + 128] ^= 0x40  # MAIN_DBI's md_root: past the end
    (store_path / "data.mdb").write_bytes(bytes(data))
    done = vaot("verify", store_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("BAD data.mdb: ") and "the store is damaged" in done.stderr
    done = vaot("export", store_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "the store is damaged where opening reads it" in done.stderr
    assert "restore it from a copy" in done.stderr


# ---------------------------------------------------------------------- export
def test_export_without_a_format_flag_writes_jsonl(store_path: Path) -> None:
    # JSON Lines is the only format: asking for it is allowed, not required.
    plain, flagged = vaot("export", store_path), vaot("export", store_path, "--jsonl")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == flagged.stdout


def test_export_jsonl_one_decodable_line_per_event(store_path: Path, tmp_path: Path) -> None:
    done = vaot("export", store_path, "--jsonl")
    assert done.returncode == 0, done.stderr
    lines = [msgspec.json.decode(line) for line in done.stdout.splitlines()]
    assert [line["seq"] for line in lines] == list(range(7))
    assert lines[0]["event"] == {
        "type": "run_started",
        "traj": "run:r",
        "pos": 0,
        "run_id": "r",
        "config": {"model": "m", "n": 1},
    }
    out = tmp_path / "out.jsonl"
    done = vaot("export", store_path, "--jsonl", "-o", out)
    assert done.returncode == 0
    assert out.read_bytes().decode().splitlines() == done_lines(store_path)


class _NewerFinished(TrajectoryFinished, frozen=True, tag="trajectory_finished"):
    """A later vaot's ``TrajectoryFinished``, with a field appended last (schema rule 2)."""

    reviewed_by: str = ""


def test_an_export_keeps_the_fields_a_newer_vaot_appended(tmp_path: Path) -> None:
    # This version ignores them on decoding (rule 4), and re-encoded what it had decoded: an
    # export of a newer store silently lost them, as did `tail --json`.
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0), _NewerFinished(traj="a", pos=1, status="answered",
                                                        answer="Ω 1e-300", reviewed_by="β")])
    done = vaot("export", path)
    assert done.returncode == 0, done.stderr
    assert msgspec.json.decode(done.stdout.splitlines()[1])["event"] == {
        "type": "trajectory_finished", "traj": "a", "pos": 1, "status": "answered",
        "answer": "Ω 1e-300", "reviewed_by": "β"}
    assert vaot("tail", path, "--json").stdout == done.stdout


def done_lines(path: Path) -> list[str]:
    return vaot("export", path, "--jsonl").stdout.splitlines()


def test_an_export_that_stops_midway_leaves_the_earlier_file_whole(store_path: Path,
                                                                    tmp_path: Path) -> None:
    # The file was opened in place: an export that stopped (a damaged record here, a kill)
    # left a truncated file where a complete one had been.
    out = tmp_path / "out.jsonl"
    assert vaot("export", store_path, "-o", out).returncode == 0
    before = out.read_bytes()
    with LmdbStore(store_path, create=False) as store:
        record = bytearray(dict(store.iter_records())[5])
        record[34:] = b"\xc1" * (len(record) - 34)
        store.corrupt_for_test("events", (5).to_bytes(8, "big"), bytes(record))
    done = vaot("export", store_path, "-o", out)
    assert done.returncode == 1, done.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_export_keeps_a_files_permissions_and_writes_through_a_link(store_path: Path,
                                                                        tmp_path: Path) -> None:
    # Written beside and renamed over, a 0600 export became 0644, and a symlink (or
    # /dev/stdout) was replaced by a plain file, the file it named left stale.
    private = tmp_path / "private.jsonl"
    private.write_text("x\n")
    private.chmod(0o600)
    assert vaot("export", store_path, "-o", private).returncode == 0
    assert private.stat().st_mode & 0o777 == 0o600
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("x\n")
    link.symlink_to(real)
    assert vaot("export", store_path, "-o", link).returncode == 0
    assert link.is_symlink()
    assert real.read_text().splitlines() == done_lines(store_path)


def test_an_export_is_not_stopped_by_a_leftover_and_writes_into_a_hard_link(
        store_path: Path, tmp_path: Path) -> None:
    # A partial file left by a killed export (same name with O_EXCL: refused for good where
    # pids repeat), and a file with a second name, which a rename left stale.
    (tmp_path / ".out.jsonl.1.partial").write_text('{"half": ')
    out = tmp_path / "out.jsonl"
    assert vaot("export", store_path, "-o", out).returncode == 0
    assert out.read_text().splitlines() == done_lines(store_path)
    other = tmp_path / "other.jsonl"
    out.write_text("x\n")
    other.hardlink_to(out)
    assert vaot("export", store_path, "-o", out).returncode == 0
    assert other.read_text() == out.read_text()


@pytest.mark.parametrize("command", [("tail",), ("tail", "--json"), ("export", "--jsonl")])
def test_a_record_the_decoder_refuses_is_one_line_naming_verify(store_path: Path,
                                                                  command) -> None:
    # Bytes damaged on disk: an event body that is not valid msgpack any more.
    with LmdbStore(store_path, create=False) as store:
        record = bytearray(dict(store.iter_records())[2])
        record[34:] = b"\xc1" * (len(record) - 34)  # 0xc1: never used in msgpack
        store.corrupt_for_test("events", (2).to_bytes(8, "big"), bytes(record))
    done = vaot(command[0], store_path, *command[1:])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"vaot {command[0]}: error: the store is damaged")
    assert "vaot verify STORE" in done.stderr
    assert vaot("verify", store_path).returncode == 1  # which names it


def _mark_blob_pages_of_another_type(store_path: Path) -> None:
    """Damage the store's pages, not its records: every LMDB leaf page that holds the blob's
    key (the live one among copies a write left behind) is marked an overflow page, which
    LMDB refuses on reaching it ("Located page was wrong type")."""
    path = store_path / "data.mdb"
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[40:44], "little")  # the meta page's free-DB md_pad
    key = png_blob(1)[0]
    marked = 0
    for at in range(2 * page_size, len(data), page_size):
        flags = int.from_bytes(data[at + 10:at + 12], "little")
        lower = int.from_bytes(data[at + 12:at + 14], "little")
        if flags != 0x02 or lower <= 16:  # a leaf page with a node
            continue
        node = at + int.from_bytes(data[at + 16:at + 18], "little")
        if data[node + 8:node + 8 + int.from_bytes(data[node + 6:node + 8], "little")] == key:
            data[at + 10:at + 12] = (0x04).to_bytes(2, "little")
            marked += 1
    assert marked
    path.write_bytes(bytes(data))


def test_damaged_pages_verify_cannot_walk_are_not_sent_to_verify(store_path: Path) -> None:
    # verify said "damaged beyond what verify can walk" and the others "`vaot verify STORE`
    # lists what is damaged": each sent the user to the other.
    events = vaot("export", store_path).stdout
    _mark_blob_pages_of_another_type(store_path)
    for command in (("verify",), ("images", "-o", store_path.parent / "images")):
        done = vaot(*command[:1], store_path, *command[1:])
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "CorruptedError" in done.stderr
        assert "lists what is damaged" not in done.stderr
        assert done.stderr.rstrip("\n").endswith(
            "restore the store from a copy (`vaot export STORE -o FILE` reads the events "
            "alone, and saves them unless the damage is among them)")
    # What it says an export saves, it saves: the events are on pages of their own.
    exported = vaot("export", store_path)
    assert exported.returncode == 0 and exported.stdout == events, exported.stderr


def test_writing_to_a_full_disk_is_one_line(store_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "engine", "export", "--jsonl",
                               str(store_path)], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("vaot export: error: a write failed: No space left on device")


# ---------------------------------------------------------------------- read-only stores
def test_a_store_opened_read_only_reads_and_refuses_writes(store_path: Path) -> None:
    from store.errors import StoreClosedError

    with LmdbStore(store_path, create=False) as store:
        expected = list(store.iter_records())
    (store_path / "lock.mdb").unlink()  # as a copy made without it
    with LmdbStore(store_path, create=False, readonly=True) as store:
        assert list(store.iter_records()) == expected
        with pytest.raises(StoreClosedError, match="read-only"):
            store.append_sync([step("z", 0)])
    assert not (store_path / "lock.mdb").exists()  # nothing written, not even a lock


def test_the_read_commands_open_a_store_they_may_not_write(store_path: Path, monkeypatch,
                                                           capsys) -> None:
    import os

    from engine.cli import main

    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: (
        False if mode == os.W_OK and str(p).startswith(str(store_path)) else real(p, mode)))
    (store_path / "lock.mdb").unlink()
    assert main(["verify", str(store_path)]) == 0
    assert main(["tail", str(store_path)]) == 0
    assert "run started r" in capsys.readouterr().out
    assert not (store_path / "lock.mdb").exists()  # opened read-only: nothing written


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0
                    or shutil.which("setpriv") is None,
                    reason="needs root to hand the store to another user")
def test_verify_export_and_tail_read_a_store_in_a_read_only_directory(store_path: Path,
                                                                      tmp_path: Path) -> None:
    # As a user with no write permission at all (root ignores permissions), in a folder that
    # user can reach (pytest's own are private to root).
    import tempfile

    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = subprocess.run([*as_nobody, "-c", "import lmdb, msgspec, engine.commands.verify"],
                           capture_output=True, timeout=60, cwd="/", env=env)
    if probe.returncode != 0:  # the interpreter, its packages or the checkout are root's only
        pytest.skip("another user cannot run this checkout here")
    shared = Path(tempfile.mkdtemp(prefix="vaot-ro-"))
    try:
        shared.chmod(0o755)
        copy = shared / "store"
        shutil.copytree(store_path, copy)
        for path in copy.iterdir():
            path.chmod(0o444)
        copy.chmod(0o555)
        for command in (["verify"], ["export", "--jsonl"], ["tail"]):
            done = subprocess.run([*as_nobody, "-m", "engine", command[0], str(copy),
                                   *command[1:]], capture_output=True, text=True, timeout=60,
                                  cwd="/", env=env)
            assert done.returncode == 0, (command, done.stderr)
    finally:
        copy.chmod(0o755)
        shutil.rmtree(shared)


@pytest.mark.parametrize("command", [("tail",), ("export",), ("verify",), ("report",),
                                     ("images", "-o", "{tmp}/pngs")])
def test_a_store_folder_that_may_not_be_entered_is_one_line(store_path: Path, tmp_path: Path,
                                                             command) -> None:
    # Python 3.11's Path.exists() raises EACCES (where it says False of a missing path):
    # each command met the folder, or a path inside it, as a PermissionError traceback.
    store_path.chmod(0)
    try:
        for given, refused in ((store_path, store_path / "data.mdb"),
                               (store_path / "inner", store_path / "inner")):
            done = subprocess.run(
                [*where_permissions_apply(), sys.executable, "-m", "engine", command[0],
                 str(given), *(a.format(tmp=tmp_path) for a in command[1:])],
                capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
            assert done.returncode == 2, done.stderr
            assert done.stderr == (f"vaot {command[0]}: error: {given}: cannot open as a vaot "
                                   f"store: {refused}: Permission denied\n")
    finally:
        store_path.chmod(0o755)


@pytest.mark.parametrize("command", ["report", "tail", "verify", "export"])
def test_a_store_named_by_its_folder_file_or_stem_is_pointed_at(tmp_path: Path,
                                                               command: str) -> None:
    # What a user types next to `vaot run --store runs/x.lmdb`: the folder of the stores, the
    # store without its suffix, the data file in it, another file in it (lock.mdb, which
    # completes first) or the run's log beside it. Each was "not a vaot store" alone.
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("b.lmdb", "a.lmdb"):
        with LmdbStore(runs / name) as store:
            store.append_sync([run_started("r")])
    (runs / "a.log").write_text("{}\n")
    for given, hint in ((runs, f"the stores in it: {runs / 'a.lmdb'}, {runs / 'b.lmdb'}"),
                        (runs / "a", f"did you mean {runs / 'a.lmdb'}?"),
                        (runs / "a.lmdb" / "data.mdb", f"the store is its folder, "
                                                         f"{runs / 'a.lmdb'}"),
                        (runs / "a.lmdb" / "lock.mdb", f"the store is its folder, "
                                                         f"{runs / 'a.lmdb'}"),
                        (runs / "a.log", f"it is the log of the store {runs / 'a.lmdb'}")):
        done = vaot(command, given)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and hint in done.stderr, done.stderr


def test_verify_counts_cache_entries_not_replies(tmp_path: Path) -> None:
    # A paid reply is cached under two keys (the engine's and the cassette's): "N cached
    # replies" gave twice the calls the run had made.
    store = tmp_path / "demo.lmdb"
    ran = vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1", "--settings",
               "cot", "--model", "reference:blind", "--store", store)
    assert ran.returncode == 0, ran.stderr
    assert "model calls this session 1;" in ran.stdout
    done = vaot("verify", store)
    assert done.returncode == 0, done.stderr
    assert "2 reply-cache entries" in done.stdout and "cached replies" not in done.stdout


def test_a_run_on_a_store_cut_short_names_it_once(store_path: Path) -> None:
    data = store_path / "data.mdb"
    size = data.stat().st_size
    os.truncate(data, size - size // 3)
    done = vaot("run", "--store", store_path, "--dataset", "synthetic:1", "--limit", "1",
                "--settings", "cot", "--model", "reference:blind", "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    said = done.stderr.strip()
    assert "the store is cut short" in said and said.count(str(store_path)) == 1, said
