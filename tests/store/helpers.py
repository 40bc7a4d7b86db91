"""Small builders shared by the store tests."""

from __future__ import annotations

import errno
import io
import os
import queue
import shutil
import threading
import typing
from pathlib import Path

import pytest
from PIL import Image

from store.blobs import pixel_hash
from store.events import RunStarted, Step, run_stream


def step(traj: str, pos: int, text: str = "", **fields) -> Step:
    """A step event at ``pos`` of ``traj`` with a recognisable body."""
    return Step(
        traj=traj,
        pos=pos,
        step=pos + 1,
        request_hash=f"req-{traj}-{pos}",
        raw_text=text or f"thought {pos} of {traj} ✓",
        **fields,
    )


def steps(traj: str, start: int, count: int) -> list[Step]:
    return [step(traj, pos) for pos in range(start, start + count)]


def run_started(run_id: str) -> RunStarted:
    return RunStarted(traj=run_stream(run_id), pos=0, run_id=run_id, config={"model": "m", "n": 1})


def png_blob(seed: int = 0, size: tuple[int, int] = (8, 6)) -> tuple[bytes, bytes]:
    """(pixel-hash key, PNG bytes) of a small RGB image that differs per ``seed``."""
    width, height = size
    raw = bytes((seed * 7 + i * 13) % 256 for i in range(width * height * 3))
    image = Image.frombytes("RGB", size, raw)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return pixel_hash("RGB", width, height, raw), out.getvalue()


def pixel_hasher(data: bytes) -> bytes:
    """The pixel hash of an encoded image (what ``vaot verify`` checks blob keys against)."""
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return pixel_hash(image.mode, image.width, image.height, image.tobytes())


class LineReader:
    """Reads a process's stdout on a thread so the test can wait for lines with a timeout."""

    def __init__(self, stream: typing.IO[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: typing.IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout: float = 30.0) -> str | None:
        """The next line (with its newline), or ``None`` at end of output."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout} s") from None

    def rest(self, timeout: float = 30.0) -> list[str]:
        """Every remaining line, once the process has closed its output."""
        lines = []
        while (line := self.next(timeout)) is not None:
            lines.append(line)
        return lines


def fill_disk(folder: Path) -> Path:
    """Fill the filesystem holding ``folder`` with one file, to its last byte; returns the file
    (delete it to make room again)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 4096, 1):  # what is left after the big writes is filled too
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler


def where_permissions_apply() -> list[str]:
    """What to run a command under so that file permissions bind it: as root, which passes
    every check, without the capabilities to (setpriv); as another user, nothing."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: permissions cannot be made to apply")
    dropped = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={dropped}", f"--inh-caps={dropped}"]
