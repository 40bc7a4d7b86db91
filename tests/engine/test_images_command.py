"""``vaot images``: a real run's images written as files whose pixels hash to the log's names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adapters.renderers.encode import image_hash
from adapters.renderers.images import load_image
from store import LmdbStore
from store.events import Step, TrajectoryStarted
from tests.store.helpers import png_blob

ROOT = Path(__file__).resolve().parents[2]


def vaot(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=False)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> Path:
    """A store of a real run: the reference model, one sample per family, vaot and wrong_render."""
    path = tmp_path_factory.mktemp("images") / "store"
    done = vaot("run", "--model", "reference:calibrated", "--dataset", "synthetic:1",
                "--settings", "vaot,wrong_render", "--store", path, "--max-steps", "4")
    assert done.returncode == 0, done.stderr
    return path


def pixels_of(path: Path) -> str:
    return image_hash(load_image(path.read_bytes())).hex()


def events(store_path: Path):
    with LmdbStore(store_path, create=False, readonly=True) as store:
        return [stored.event for stored in store.iter_events()]


def test_every_image_is_written_under_the_hash_of_its_pixels(store_path: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "all"
    done = vaot("images", store_path, "-o", out)
    assert done.returncode == 0, done.stderr
    files = sorted(out.iterdir())
    named = {e.input_state for e in events(store_path) if isinstance(e, TrajectoryStarted)}
    named |= {s for e in events(store_path) if isinstance(e, Step)
              for s in (e.faithful_state, e.returned_state) if s}
    assert {f.stem for f in files} >= named and len(named) > 10
    for f in files:
        assert f.suffix == ".png" and pixels_of(f) == f.stem
    assert f"wrote {len(files)} image(s)" in done.stderr

    again = vaot("images", store_path, "-o", out)
    assert again.returncode == 0 and f"wrote 0 image(s) to {out} ({len(files)} already there)" \
        in again.stderr


def test_one_trajectory_in_step_order_with_the_faithful_render_beside_what_was_shown(
        store_path: Path, tmp_path: Path) -> None:
    evs = events(store_path)
    changed = [e for e in evs if isinstance(e, Step) and e.returned_state
               and e.faithful_state != e.returned_state]
    assert changed, "wrong_render showed no corrupted image"
    traj = changed[0].traj
    done = vaot("images", store_path, "-o", tmp_path, "--traj", traj[:10])
    assert done.returncode == 0, done.stderr
    folder = tmp_path / traj
    expected = {"step00-original.png": next(e.input_state for e in evs
                                            if isinstance(e, TrajectoryStarted)
                                            and e.traj == traj)}
    for e in evs:
        if isinstance(e, Step) and e.traj == traj:
            if e.returned_state:
                expected[f"step{e.step:02d}-returned.png"] = e.returned_state
            if e.faithful_state and e.faithful_state != e.returned_state:
                expected[f"step{e.step:02d}-faithful.png"] = e.faithful_state
    assert {f.name for f in folder.iterdir()} == set(expected)
    assert {name: pixels_of(folder / name) for name in expected} == expected
    assert any(name.endswith("-faithful.png") for name in expected)


def test_an_unknown_or_ambiguous_trajectory_is_one_line(store_path: Path, tmp_path: Path) -> None:
    unknown = vaot("images", store_path, "-o", tmp_path, "--traj", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        unknown.stderr.strip()] and "no trajectory 'nope'" in unknown.stderr
    assert unknown.stderr.startswith("vaot images: error: ")
    ids = [e.traj for e in events(store_path) if isinstance(e, TrajectoryStarted)]
    first = {t[0] for t in ids}
    letter = next(c for c in sorted(first) if sum(t.startswith(c) for t in ids) > 1)
    ambiguous = vaot("images", store_path, "-o", tmp_path, "--traj", letter)
    assert ambiguous.returncode == 2 and "give more of it" in ambiguous.stderr
    assert "Traceback" not in unknown.stderr + ambiguous.stderr


def test_an_output_that_is_a_file_is_said_to_be_one(store_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.png"
    out.write_bytes(b"mine")
    done = vaot("images", store_path, "-o", out)
    assert done.returncode == 2 and out.read_bytes() == b"mine"
    assert done.stderr == (f"vaot images: error: {out} is there and is not a folder; -o names "
                           "the folder to write the images into (made if missing)\n")


@pytest.mark.parametrize("offset", [-1, 0], ids=["image-byte", "format-byte"])
def test_a_damaged_image_is_named_and_not_written(store_path: Path, tmp_path: Path,
                                                  offset: int) -> None:
    # A changed format byte (PNG recorded as JPEG) wrote the PNG as a .jpeg file.
    copy = tmp_path / "store"
    copy.mkdir()
    for f in store_path.glob("*.mdb"):
        (copy / f.name).write_bytes(f.read_bytes())
    with LmdbStore(copy) as store:
        key, record = next(iter(store.iter_blob_records()))
        damaged = bytearray(record)
        damaged[offset] ^= 0x02
        store.corrupt_for_test("blobs", key, bytes(damaged))
    out = tmp_path / "out"
    done = vaot("images", copy, "-o", out)
    assert done.returncode == 1
    # Named on a line of its own, with the store it is damaged in; the command's error last.
    lines = done.stderr.splitlines()
    assert f"not written: image {key.hex()} ({key.hex()}.png) is damaged in {copy}" in lines[0]
    assert lines[-1].startswith("vaot images: error: 1 image(s) missing or damaged")
    assert not list(out.glob(f"{key.hex()}.*"))
    assert not list(out.glob(".*"))  # no leftover partial files


def test_step_numbers_are_as_wide_as_the_largest_step_so_the_names_sort_in_step_order(
        tmp_path: Path) -> None:
    # Padded to two digits always: step100 sorted between step10 and step11.
    key, png = png_blob(3)
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.put_blob_sync(key, png)
        store.append_sync([
            TrajectoryStarted(traj="long", pos=0, run_id="r", sample_id="s", setting="vaot",
                              model="m", input_state=key.hex()),
            *(Step(traj="long", pos=n, step=n, request_hash=f"req{n}", raw_text="look",
                   returned_state=key.hex() if n in (1, 9, 10, 11, 99, 100) else None)
              for n in range(1, 101))])
    done = vaot("images", path, "-o", tmp_path / "out", "--traj", "long")
    assert done.returncode == 0, done.stderr
    names = sorted(f.name for f in (tmp_path / "out" / "long").iterdir())
    assert names == ["step000-original.png", "step001-returned.png", "step009-returned.png",
                     "step010-returned.png", "step011-returned.png", "step099-returned.png",
                     "step100-returned.png"]


def test_a_file_where_a_trajectorys_folder_goes_is_said_to_be_in_its_way(
        store_path: Path, tmp_path: Path) -> None:
    # The line said "-o names the folder to write the images into", of a folder -o named
    # rightly: the file in the way was the one named by the trajectory's id, inside it.
    traj = next(e.traj for e in events(store_path) if isinstance(e, TrajectoryStarted))
    (tmp_path / traj).write_bytes(b"mine")
    done = vaot("images", store_path, "-o", tmp_path, "--traj", traj)
    assert done.returncode == 2 and (tmp_path / traj).read_bytes() == b"mine"
    assert done.stderr == (f"vaot images: error: {tmp_path / traj} is there and is not a "
                           "folder; a trajectory's images go into a folder named by its id, in "
                           "the -o folder; move that file away or choose another -o\n")
