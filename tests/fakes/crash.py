"""What the tests that SIGKILL ``vaot run`` mid-run share: tagged replies, and a look at the store
and the fake server from outside the killed process.

Each reply the fake sends carries a unique tag (``reply-N``, N = the order the server answered
in), so a tag names the exact server call a step's reply came from.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import lmdb
import msgspec

from adapters.models.base import ModelReply
from store import Step, TrajectoryStarted, open_store
from store.events import decode_record
from store.recorder import cache_value
from tests.fakes.server import ReplySpec, RequestView

__all__ = [
    "TAG",
    "StoreWatch",
    "cached_tags",
    "kill_mid_run",
    "log_lines",
    "native_tool_reply",
    "seen",
    "trajectories_in",
    "wait_until_logged",
    "zoom_reply",
]

TAG = re.compile(r"reply-(\d+)\b")
ZOOM = {"type": "zoom", "target": [200, 200, 800, 800]}


def zoom_reply(n: int) -> str:
    """The ``n``-th reply of a scripted fake, tagged ``reply-n``: a zoom, valid at any step
    number, so every trajectory of a run ends at ``--max-steps``."""
    action = json.dumps({"step": 1, "visual_rationale": "look closer", "action": [ZOOM]})
    return (f"Step 1 (Text): I need a closer look (reply-{n}).\n\n"
            f"Step 1 (Action Description):\n```json\n{action}\n```")


def trajectories_in(store_path: Path) -> dict[str, list]:
    """Every trajectory's events in the store, in log order, by trajectory id (run headers
    left out)."""
    events: dict[str, list] = {}
    with open_store(store_path, create=False) as store:
        for stored in store.iter_events():
            events.setdefault(stored.event.traj, []).append(stored.event)
    return {t: evs for t, evs in events.items() if isinstance(evs[0], TrajectoryStarted)}


def native_tool_reply(view: RequestView) -> ReplySpec:
    """A tagged reply for ``--native-tools``: a visual_action zoom call when the request declares
    the tool and no step was taken yet, a final answer otherwise (``--replies`` of a fake)."""
    tag = f"reply-{view.served}"
    if view.body.get("tools") and "assistant" not in view.roles:
        return ReplySpec(text=f"Step 1 (Text): I need a closer look ({tag}).",
                         tool_calls=[{"name": "visual_action", "arguments": ZOOM,
                                      "id": f"call_{view.served}"}])
    return ReplySpec(text=f"Step 2 (Text): The zoomed view settles it ({tag}).\nFinal Answer: B")


def seen(port: int) -> list[dict]:
    """What a fake server process has received so far (``GET /_fake/requests``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_fake/requests", timeout=10) as resp:
        return json.load(resp)


def log_lines(log: Path) -> list[dict]:
    """A fake server's ``--requests-log``, one dict per request it finished with.

    Only whole lines: the server may be writing one as this reads (a line longer than its
    file buffer goes out in several writes), and a request half logged is not logged yet."""
    if not log.exists():
        return []
    text = log.read_text()
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines()]


class StoreWatch:
    """Reads the store another process is writing, raw, so a poll costs one read transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env: lmdb.Environment | None = None
        self.steps = 0
        self.kinds: Counter[str] = Counter()
        """Events committed so far by their class name (``Step``, ``TrajectoryFinished``…)."""
        self._after = b""

    def poll(self) -> tuple[int, int]:
        """(Step events committed, distinct replies cached) as of one consistent snapshot."""
        if self.env is None:
            if not (self.path / "data.mdb").exists():
                return 0, 0
            self.env = lmdb.open(str(self.path), readonly=True, max_dbs=8, subdir=True)
        try:
            events = self.env.open_db(b"events", create=False)
            cache = self.env.open_db(b"cache", create=False)
        except lmdb.Error:  # the writer has not created them yet
            return 0, 0
        with self.env.begin() as txn:
            cursor = txn.cursor(db=events)
            found = cursor.set_range(self._after) if self._after else cursor.first()
            while found:
                key, record = cursor.item()
                if key != self._after:
                    event = decode_record(0, record).event
                    self.steps += isinstance(event, Step)
                    self.kinds[type(event).__name__] += 1
                    self._after = key
                found = cursor.next()
            return self.steps, len(_reply_tags(txn, cache))

    def close(self) -> None:
        """Close the environment (this process may then open the store otherwise); the next
        poll opens it again and goes on counting from where this one stopped."""
        if self.env is not None:
            self.env.close()
            self.env = None


def _reply_tags(txn: lmdb.Transaction, cache) -> set[int]:
    """Tags of the replies in the reply cache (read raw: the store has no API to list it).

    A reply may sit under more than one key (per trajectory, and the cassette's bare request
    hash), so replies are counted by their tag, not by cache entries.
    """
    tags = set()
    for key, record in txn.cursor(db=cache):
        text = msgspec.msgpack.decode(cache_value(key, record, unchecked_ok=False),
                                      type=ModelReply).text
        found = TAG.findall(text)
        assert len(found) == 1, text
        tags.add(int(found[0]))
    return tags


def cached_tags(store_path: Path) -> set[int]:
    """Tags of the replies in a closed store's reply cache."""
    env = lmdb.open(str(store_path), readonly=True, max_dbs=8, subdir=True)
    try:
        cache = env.open_db(b"cache", create=False)
        with env.begin() as txn:
            return _reply_tags(txn, cache)
    finally:
        env.close()


def kill_mid_run(command: list[str], cwd: Path, env: dict[str, str], store_path: Path, out: Path,
                 after_steps: int) -> None:
    """Start ``vaot run``; SIGKILL it once ``after_steps`` steps are committed and a reply is
    cached whose step is not yet (the case the reply cache exists for). Polls the store from
    outside: the killed process can signal nothing."""
    with out.open("w") as sink:
        first = subprocess.Popen(command, cwd=cwd, env=env, stdout=sink,
                                 stderr=subprocess.STDOUT)
    watch = StoreWatch(store_path)
    try:
        deadline = time.monotonic() + 60
        while True:
            steps, cached = watch.poll()
            if steps >= after_steps and cached > steps:
                break
            assert first.poll() is None, (
                f"vaot run ended (code {first.returncode}) before it could be killed:\n"
                + out.read_text()
            )
            assert time.monotonic() < deadline, f"no kill point within 60 s ({steps} steps)"
            time.sleep(0.005)
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait(timeout=30)
        watch.close()
    assert first.returncode == -signal.SIGKILL


def wait_until_logged(log: Path, port: int) -> None:
    """Requests in flight at a kill are cancelled by the server: wait until each is logged."""
    deadline = time.monotonic() + 20
    while len(log_lines(log)) < len(seen(port)):
        assert time.monotonic() < deadline, "the fake server still has requests in flight"
        time.sleep(0.05)
