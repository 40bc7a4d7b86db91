"""The recorder contract against the LMDB store."""

from pathlib import Path

from store import LmdbStore, Recorder
from tests.store.contract import RecorderContract


class TestLmdbRecorder(RecorderContract):
    def create_recorder(self, path: Path) -> Recorder:
        return LmdbStore(path / "store")
