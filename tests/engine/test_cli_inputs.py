"""The read-side commands and `vaot run` given what a first-time user gives them.

Each case came from a review that used the CLI on its own data: an output path inside the store
being read, an empty path from an unset variable, a folder name that is not UTF-8, a damaged
schema record, a reader that closes its pipe, a price or limit typed wrong. Real subprocesses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from engine.config import ConfigError, ModelConfig, RunConfig
from store import LmdbStore
from tests.fakes.process import reap, reaped
from tests.store.helpers import where_permissions_apply

ROOT = Path(__file__).resolve().parents[2]


def vaot(*args: str | Path | bytes, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *(a if isinstance(a, bytes) else
                                                             str(a) for a in args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
                          **kwargs)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "store"
    done = vaot("run", "--model", "reference:calibrated", "--limit", "1", "--store", path,
                "--no-progress")
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def store(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(made, copy)
    return copy


def test_an_output_inside_the_store_being_read_is_refused(store: Path, tmp_path: Path) -> None:
    before = (store / "data.mdb").read_bytes()
    done = vaot("export", store, "-o", store / "data.mdb")
    assert done.returncode == 2 and "inside the store" in done.stderr
    assert (store / "data.mdb").read_bytes() == before  # it had been replaced by JSON lines
    done = vaot("images", store, "-o", store / "pngs")
    assert done.returncode == 2 and "inside the store" in done.stderr
    assert not (store / "pngs").exists()
    assert vaot("verify", store).returncode == 0


@pytest.mark.parametrize("args", [("export", "{store}", "-o", ""), ("images", "{store}", "-o", ""),
                                  ("images", "{store}", "-o", "{store}.pngs", "--traj", ""),
                                  ("tail", ""), ("verify", ""), ("export", "")])
def test_an_empty_path_is_an_unset_variable_not_the_current_folder(store: Path, args) -> None:
    done = vaot(*(a.format(store=store) for a in args))
    assert done.returncode == 2 and "empty" in done.stderr and "Traceback" not in done.stderr


def test_the_run_header_is_no_trajectory_to_write_images_of(store: Path, tmp_path: Path) -> None:
    done = vaot("images", store, "-o", tmp_path / "out", "--traj", "run")
    assert done.returncode == 2 and "no trajectory 'run'" in done.stderr
    assert "(4 trajectories;" in done.stderr  # the header stream is not counted


def test_an_in_memory_store_is_nothing_to_read() -> None:
    for command in ("verify", "tail", "export"):
        done = vaot(command, ":memory:")
        assert done.returncode == 2 and "nothing to read" in done.stderr, done


# (command line, the bad input its error line must name); {store} a real store, {tmp} a folder.
_REFUSED = [
    (("run", "--limit", "many"), "'many'"),
    (("run", "--dataset", "jsonl:{tmp}/missing.jsonl", "--store", "{tmp}/s"), "missing.jsonl"),
    (("run", "--model", "nosuch:model", "--store", "{tmp}/s"), "nosuch:model"),
    (("report", "{tmp}/nostore"), "nostore"),
    (("report", "{store}", "--run", "zzzz"), "'zzzz'"),
    (("verify", "{tmp}/nostore"), "nostore"),
    (("tail", ":memory:"), ":memory:"),
    (("export", "{store}", "-o", "{store}/out.jsonl"), "out.jsonl"),
    (("images", "{store}", "-o", "{tmp}/pngs", "--traj", "nope"), "'nope'"),
    (("parse", "{tmp}/reply.txt"), "reply.txt"),
    (("render", "{tmp}/image.png", "{{}}", "-o", "{tmp}/out.png"), "image.png"),
]


@pytest.mark.parametrize(("args", "named"), _REFUSED, ids=[" ".join(a[:2]) for a, _ in _REFUSED])
def test_every_command_says_its_error_in_one_line_of_one_format(store: Path, tmp_path: Path,
                                                                args, named: str) -> None:
    # Each command had its own prefix ("vaot: …", "vaot images: …", argparse's "vaot run:
    # error: …"): one format lets a script or an eye find a command's error by one prefix.
    done = vaot(*(a.format(store=store, tmp=tmp_path) for a in args))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"vaot {args[0]}: error: ") and named in lines[0], lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("command", "statuses"), [
    # 129: a closed terminal's SIGHUP stops each of them (as it does `vaot run`), unsaid.
    ("export", (0, 1, 2, 129, 130, 141, 143)),
    ("tail", (0, 1, 2, 129, 130, 141, 143)),
    ("verify", (0, 1, 2, 129, 130, 143)),
    ("images", (0, 1, 2, 129, 130, 143)),
    ("parse", (0, 2)),
    ("render", (0, 2)),
])
def test_every_read_command_help_says_each_exit_status(command: str, statuses) -> None:
    # A script that runs them wants the codes: export, tail, parse and render said none.
    done = vaot(command, "--help")
    assert done.returncode == 0
    said = " ".join(done.stdout.split())
    assert "Exit status: " in said, said
    codes = said.split("Exit status: ", 1)[1]
    for status in statuses:
        assert f"{status} " in codes or f"{status}," in codes, (status, codes)


def test_a_read_only_command_does_not_make_an_empty_file_a_store(tmp_path: Path) -> None:
    folder = tmp_path / "notastore"
    folder.mkdir()
    (folder / "data.mdb").write_bytes(b"")
    done = vaot("tail", folder)
    assert done.returncode == 2 and "empty or cut short" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["data.mdb"]
    assert (folder / "data.mdb").stat().st_size == 0


def test_a_store_folder_whose_name_is_not_utf8_opens(store: Path, tmp_path: Path) -> None:
    odd = os.fsencode(tmp_path) + b"/old\xffarchive.lmdb"
    os.rename(store, odd)
    done = vaot("verify", odd)
    assert done.returncode == 0 and "ok:" in done.stdout, done.stderr


def test_a_damaged_schema_record_is_said_in_one_line(store: Path) -> None:
    env = lmdb.open(str(store), max_dbs=8)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"x", db=env.open_db(b"meta", txn=txn))
    env.close()
    done = vaot("verify", store)
    assert done.returncode == 2 and "schema version record is damaged" in done.stderr
    assert "Traceback" not in done.stderr


def test_export_to_a_closed_pipe_is_141_with_or_without_o(store: Path) -> None:
    for extra in ((), ("-o", "/dev/stdout")):
        proc = subprocess.Popen([sys.executable, "-m", "engine", "export", str(store), *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        with reaped(proc):
            proc.stdout.close()  # the reader is gone before the first line
            assert proc.wait(timeout=60) == 141, proc.stderr.read()


def test_a_run_whose_reader_went_away_still_runs_and_ends_as_itself(tmp_path: Path) -> None:
    # rich exited with status 1 at the first print to a closed pipe: nothing ran at all.
    path = tmp_path / "s.lmdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "--model", "reference:calibrated", "--limit",
         "2", "--store", str(path), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    with reaped(proc):
        proc.stdout.close()
        assert proc.wait(timeout=120) == 0
    with LmdbStore(path, create=False, readonly=True) as s:
        assert len(s.trajectory_ids()) == 2 * 4 + 1  # every trajectory, and the run header
    assert '"run_end"' in (tmp_path / "s.log").read_text()


def _closed(*args: str | Path, closing: str = ">&-") -> subprocess.CompletedProcess[str]:
    """``vaot ARGS`` started with a standard stream closed (``>&-``, ``2>&-``, ``<&-``)."""
    return subprocess.run(["sh", "-c", f'exec "$0" "$@" {closing}', sys.executable, "-m",
                           "engine", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)


@pytest.mark.parametrize("args", [("export", "{store}"), ("tail", "{store}"),
                                  ("tail", "{store}", "--json"), ("parse", "{reply}")])
def test_output_to_a_closed_standard_output_is_one_line(store: Path, tmp_path: Path,
                                                         args) -> None:
    # `vaot export STORE >&-`: sys.stdout was None, and the command died on it with a traceback.
    reply = tmp_path / "reply.txt"
    reply.write_text("Step 1: the answer is B")
    done = _closed(*(a.format(store=store, reply=reply) for a in args))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"vaot {args[0]}: error: standard output is closed (`>&-`), so what "
                           "it prints would be lost; redirect it to a file (> FILE)"
                           + (" or give -o FILE" if args[0] == "export" else "") + "\n")


def test_a_store_read_without_standard_streams_is_not_given_their_numbers(store: Path,
                                                                         tmp_path: Path) -> None:
    # Started without stdout and stderr, the store's lock.mdb and data.mdb took descriptors 1
    # and 2, where anything written to "standard output" would land in the store.
    out = tmp_path / "events.jsonl"
    probe = ("import os, sys; from engine import cli; cli._reserve_standard_streams(); "
             "from store import open_store; s = open_store(sys.argv[1], create=False); "
             "s.last_seq(); print(sorted(os.readlink(f'/proc/self/fd/{fd}') "
             "for fd in (1, 2)), file=open(sys.argv[2], 'w'))")
    done = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&- 2>&-', sys.executable, "-c", probe,
                           str(store), str(out)], cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0
    assert out.read_text() == f"{[os.devnull, os.devnull]}\n"
    done = _closed("export", store, "-o", out, closing=">&- 2>&-")
    assert done.returncode == 0
    assert out.read_text() == vaot("export", store).stdout


def test_tail_follow_stopped_by_sigterm_says_so_in_its_status(store: Path) -> None:
    # -X faulthandler: should it not stop, a SIGABRT makes it print where each thread was.
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "engine", "tail", "-f",
                             str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout.readline()  # it is running: the store's events are coming out
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            pytest.fail("vaot tail -f was still running 30 s after a SIGTERM; where it was:\n"
                        + proc.communicate(timeout=30)[1])
        assert status == 143, proc.stderr.read()
    finally:
        if proc.poll() is None:  # never left running for a later test's garbage collection
            proc.kill()
        proc.communicate()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("max_concurrency", 10**20, "max_concurrency must be from 1 to 100,000"),
    ("requests_per_minute", 1e-300, "requests_per_minute must be a number from 0.001"),
    ("extra", {"seed": 10**20}, "extra cannot be recorded"),
])
def test_a_model_table_value_no_run_could_use_is_refused(field, value, said) -> None:
    model = ModelConfig("openai:x", base_url="http://127.0.0.1:1/v1", **{field: value})
    with pytest.raises(ConfigError, match=said):
        RunConfig(models=(model,)).validate()


@pytest.mark.parametrize("price", [{"input_per_mtok": -5, "output_per_mtok": 1},
                                   {"input_per_mtok": 1, "output_per_mtok": float("nan")}])
def test_a_price_that_would_turn_the_cost_cap_off_is_refused(price) -> None:
    config = RunConfig(models=(ModelConfig("openai:x", base_url="http://127.0.0.1:1/v1"),),
                       prices={"openai:x": price}, max_cost=1.0)
    with pytest.raises(ConfigError, match=">= 0"):
        config.validate()


def test_tail_follow_started_before_the_run_waits_for_its_store(tmp_path: Path) -> None:
    path = tmp_path / "later.lmdb"
    follower = subprocess.Popen([sys.executable, "-m", "engine", "tail", "-f", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)
    try:
        assert "waiting for one" in follower.stderr.readline()  # said once, then it waits
        done = vaot("run", "--model", "reference:calibrated", "--limit", "1", "--store", path,
                    "--no-progress")
        assert done.returncode == 0, done.stderr
        expected = vaot("tail", path).stdout.splitlines()
        seen = [follower.stdout.readline().rstrip("\n") for _ in expected]
        assert seen == expected  # every event, once, in order
    finally:
        follower.send_signal(signal.SIGTERM)
        try:
            follower.wait(timeout=30)
        finally:
            reap(follower)  # killed if the SIGTERM did not stop it; its pipes closed


def test_a_record_key_of_the_wrong_width_is_damage_said_in_one_line(store: Path) -> None:
    env = lmdb.open(str(store), max_dbs=8)
    with env.begin(write=True) as txn:
        txn.put(b"abc", b"xyz", db=env.open_db(b"events", txn=txn))
    env.close()
    for command in ("verify", "tail", "export"):
        done = vaot(command, store)
        assert done.returncode == 1 and "the store is damaged" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        # verify stops on it too: none of them sends the user there for a list it cannot give.
        assert done.stderr.count("\n") == 1 and "lists what is damaged" not in done.stderr
        assert "restore the store from a copy" in done.stderr
    # The events are where the damage is: an export is not offered as a way to save them.
    assert "vaot export" not in vaot("verify", store).stderr


def test_damage_verify_cannot_walk_names_a_copy_and_what_an_export_still_saves(
        store: Path) -> None:
    # Index entries whose seq is not 8 bytes: report and verify stop on them (verify said
    # "beyond what verify can walk", report sent the user to verify for a list), while the
    # events an export reads are intact.
    env = lmdb.open(str(store), max_dbs=8)
    with env.begin(write=True) as txn:
        index = env.open_db(b"by_traj", txn=txn)
        for key in [bytes(k) for k, _ in txn.cursor(db=index)]:
            txn.put(key, b"xyz", db=index)
    env.close()
    for command in ("report", "verify"):
        done = vaot(command, store)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1
        assert done.stderr.startswith(f"vaot {command}: error: the store is damaged")
        assert "lists what is damaged" not in done.stderr
        assert done.stderr.rstrip("\n").endswith(
            "restore the store from a copy (`vaot export STORE -o FILE` reads the events "
            "alone, and saves them unless the damage is among them)")
    assert "verify can walk, so it cannot list" in vaot("verify", store).stderr
    assert "`vaot verify STORE` cannot walk this damage either" in vaot("report", store).stderr
    exported = vaot("export", store)  # as the advice says: every event
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == len(vaot("tail", store).stdout.splitlines()) > 0


@pytest.mark.parametrize(("flag", "value", "byte"), [
    ("--run-name", b"mine\xff", 4),
    ("--model", b"openai:gpt\xff", 10),
    ("--base-url", b"http://h\xff.example/v1", 8),
])
def test_a_run_flag_that_is_not_utf8_is_one_line(tmp_path: Path, flag: str, value: bytes,
                                                  byte: int) -> None:
    # A byte that is not UTF-8 arrived as a lone surrogate: the run met it as a traceback
    # when it hashed the run name or the model spec, or made the URL.
    done = vaot("run", "--model", "openai:gpt", flag, value, "--store", tmp_path / "s",
                "--no-progress", "--dry-run", env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (f"vaot run: error: argument {flag}: not UTF-8 text (byte {byte}) "
                           "(see vaot run --help)\n")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("args", [
    ("tail", "{long}"), ("export", "{long}"), ("images", "{long}", "-o", "{tmp}/pngs"),
    ("run", "--dry-run", "--limit", "1", "--store", "{long}"),
    ("run", "--limit", "1", "--store", "{tmp}/s", "--dataset", "jsonl:{long}"),
], ids=["tail", "export", "images", "run-store", "run-dataset"])
def test_a_path_longer_than_the_file_system_allows_is_one_line(tmp_path: Path, args) -> None:
    # Python 3.11's Path.exists() and is_dir() raise ENAMETOOLONG (where they say False of a
    # path that is not there): each command met it as a traceback.
    long = tmp_path / ("a" * 300)
    done = vaot(*(a.format(long=long, tmp=tmp_path) for a in args))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"vaot {args[0]}: error: {long}")
    assert done.stderr.endswith(": File name too long; give a shorter path\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_store_folder_the_os_will_not_make_is_said_in_its_words() -> None:
    # /proc holds no folder but the kernel's: making one there fails (ENOENT). The line
    # quoted the error's repr, naming the path twice: "[Errno 2] No such file or directory:
    # '/proc/x'".
    for store, said in (("/proc/vaot-test", "/proc/vaot-test: No such file or directory"),
                        ("/proc/vaot-test/s", "/proc/vaot-test/s: /proc/vaot-test: No such "
                                              "file or directory")):
        done = vaot("run", "--model", "reference:calibrated", "--limit", "1", "--store", store,
                    "--no-progress")
        assert done.returncode == 2
        assert done.stderr == f"vaot run: error: cannot open the store {said}\n"


def test_a_seed_out_of_range_says_both_bounds_alike() -> None:
    # The low bound was written without separators beside a high one with them:
    # "from -9223372036854775808 to 9,223,372,036,854,775,807".
    with pytest.raises(ConfigError) as refused:
        RunConfig(seed=2**70).validate()
    assert str(refused.value).startswith(
        "--seed: must be from -9,223,372,036,854,775,808 to 9,223,372,036,854,775,807, got ")


def test_a_key_with_a_line_break_inside_refuses_the_run_in_one_line(tmp_path: Path) -> None:
    done = vaot("run", "--model", "openai:gpt", "--base-url", "http://127.0.0.1:9/v1",
                "--api-key-env", "VAOT_TEST_KEY", "--store", tmp_path / "s", "--limit", "1",
                "--no-progress", env={**os.environ, "VAOT_TEST_KEY": "sk-one\nsk-two"})
    assert done.returncode == 2 and "sk-one" not in done.stderr + done.stdout
    assert done.stderr.startswith("vaot run: error: openai: the API key in VAOT_TEST_KEY holds "
                                  "a control character") and done.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ("--dry-run", "--store", "{locked}"),
    ("--store", "{locked}/s"),
    ("--store", "{tmp}/s", "--dataset", "jsonl:{locked}/rows.jsonl"),
], ids=["dry-run-store", "store-inside", "dataset-inside"])
def test_a_run_given_a_folder_that_may_not_be_entered_is_one_line(tmp_path: Path,
                                                                   args) -> None:
    # Python 3.11's Path.exists() and is_dir() raise EACCES (where they say False of a
    # missing path): the plan, the log's check and the dataset's met it as a traceback.
    locked = tmp_path / "locked"
    locked.mkdir(mode=0)
    try:
        done = subprocess.run(
            [*where_permissions_apply(), sys.executable, "-m", "engine", "run", "--limit", "1",
             "--no-progress", *(a.format(locked=locked, tmp=tmp_path) for a in args)],
            capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"vaot run: error: {locked}") and done.stderr.endswith(
            ": Permission denied; check its permissions, and its folders'\n")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["locked"]
    finally:
        locked.chmod(0o755)
