"""libtiff's messages reach the image being decoded: finding the libtiff this process loaded."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import pytest

from adapters.renderers.libtiff_messages import _libtiff_path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_mapped_file_whose_name_is_not_utf8_does_not_stop_the_search(tmp_path: Path) -> None:
    # An LMDB store is mapped into the process; in a folder whose name is not UTF-8 (an old
    # archive's Latin-1 name), reading the map as text failed, and with it the import of the
    # renderers: `vaot verify` on such a store, and every run, ended in a UnicodeDecodeError.
    before = _libtiff_path()
    odd = os.fsencode(tmp_path) + b"/old\xffarchive.bin"
    with open(odd, "wb") as f:
        f.write(b"\0" * mmap.PAGESIZE)
    with open(odd, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ):
        assert _libtiff_path() == before
