"""What LMDB's meta pages tell before the environment is opened: whether the file is whole."""

from __future__ import annotations

import struct
from pathlib import Path

from store.errors import StoreCutShortError

__all__ = ["refuse_cut_short"]

_LMDB_MAGIC = 0xBEEFC0DE


def _last_commit_end(data_file: Path) -> int | None:
    """How many bytes of ``data_file`` its newest commit reaches, from LMDB's two meta pages
    (None when they are not the 64-bit layout this reads: then LMDB itself judges the file).

    Each meta page is a 16-byte page header, then MDB_meta: magic and version (u32 each), the
    map address and size, the free and main databases (48 bytes each; the free one's first
    field is the page size), the last used page number and the commit's transaction id.
    """
    if struct.calcsize("P") != 8:
        return None
    with open(data_file, "rb") as fh:
        head = fh.read(16 + 152)
        page_size = struct.unpack_from("<I", head, 40)[0] if len(head) >= 44 else 0
        if page_size < 512 or page_size & (page_size - 1):
            return None
        fh.seek(page_size)
        metas = [head, fh.read(16 + 152)]
    newest = None
    for meta in metas:
        if len(meta) < 16 + 152 or struct.unpack_from("<II", meta, 16) != (_LMDB_MAGIC, 1):
            continue
        last_page, txnid = struct.unpack_from("<QQ", meta, 136)
        if newest is None or txnid > newest[1]:
            newest = (last_page, txnid)
    return None if newest is None else (newest[0] + 1) * page_size


def refuse_cut_short(data_file: Path) -> None:
    """Raise :class:`StoreCutShortError` if ``data_file`` ends before its last commit does.

    The meta page is read before the file's size: a commit that lands between the two only
    grows the file, never the other way round.
    """
    try:
        needed = _last_commit_end(data_file)
        size = data_file.stat().st_size
    except OSError:
        return  # unreadable: LMDB's own open says why
    if needed is not None and size < needed:
        raise StoreCutShortError(
            f"{data_file.parent}: the store is cut short: its data.mdb holds {size:,} bytes of "
            f"the {needed:,} its last commit reaches (a copy that stopped midway, or a disk "
            "that filled), so nothing in it can be read safely; copy it again whole, or "
            "restore it from a backup")
