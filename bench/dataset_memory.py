"""Memory a loaded dataset holds: images are named, not held (DESIGN.md §5, memory bar).

Writes ``--samples`` noise PNGs (incompressible, so each file is as large as its pixels) and a
JSONL naming them (or, with ``--inline``, holding them as ``data:`` URIs), loads it the way
``vaot run`` does, and prints the resident memory the loaded samples hold ÷ the bytes of the
images. Goal: far below 1 (the images are read again when a trajectory needs them); a loader
that kept the bytes would print about 1.

    python bench/dataset_memory.py [--samples 1000] [--side 256] [--inline]
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from adapters.datasets.loading import load_dataset


def rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--side", type=int, default=256, help="image width and height")
    parser.add_argument("--inline", action="store_true",
                        help="write the images into the JSONL as data: URIs, not as files")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vaot-dataset-memory-"))
    try:
        (root / "img").mkdir()
        rows, on_disk = [], 0
        for i in range(args.samples):
            path = root / "img" / f"{i}.png"
            noise = os.urandom(args.side * args.side * 3)
            Image.frombytes("RGB", (args.side, args.side), noise).save(path, compress_level=1)
            on_disk += path.stat().st_size
            image = f"img/{i}.png"
            if args.inline:
                image = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
                path.unlink()
            rows.append(json.dumps({"id": str(i), "image": image, "question": "Which?",
                                    "answer": "A", "category": "bench", "group": "2D"}))
        (root / "set.jsonl").write_text("\n".join(rows) + "\n")
        gc.collect()
        before = rss_bytes()
        samples, skipped = load_dataset(f"jsonl:{root / 'set.jsonl'}")
        gc.collect()
        held = rss_bytes() - before
        assert len(samples) == args.samples and not skipped, skipped[:3]
    finally:
        shutil.rmtree(root)
    where = "inline in the JSONL" if args.inline else "on disk"
    print(f"{args.samples} samples, {args.side}x{args.side} noise PNGs, {on_disk / 1e6:.1f} MB "
          f"{where}: the loaded samples hold {held / 1e6:.1f} MB resident = {held / on_disk:.3f} "
          f"of the image bytes (goal: far below 1; {held / args.samples / 1e3:.1f} kB per sample)")


if __name__ == "__main__":
    main()
