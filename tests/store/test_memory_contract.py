"""The recorder contract against the in-memory recorder."""

from pathlib import Path

from store import MemoryStore, Recorder, open_store
from tests.store.contract import RecorderContract


class TestMemoryRecorder(RecorderContract):
    def create_recorder(self, path: Path) -> Recorder:
        return MemoryStore()


def test_open_store_memory():
    store = open_store(":memory:")
    assert isinstance(store, MemoryStore)
