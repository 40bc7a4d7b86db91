"""A real store whose process "dies" the moment a step is to be recorded: what a kill or a
Ctrl-C leaves when it falls after a reply is cached and before its Step is written."""

from __future__ import annotations

from store import Step, StoreError

__all__ = ["Died", "DiesAtTheFirstStep"]


class Died(StoreError):
    """The process dies; a StoreError, so the runner stops rather than failing a trajectory."""


class DiesAtTheFirstStep:
    """The run's real store, but every append holding a Step raises :class:`Died` instead."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def _check(self, events) -> None:
        if any(isinstance(e, Step) for e in events):
            raise Died

    def append_nowait(self, events):
        self._check(events)
        return self._store.append_nowait(events)

    async def append(self, events):
        self._check(events)
        return await self._store.append(events)
