"""Peak memory of ten concurrent `attachment_read`s of the worst image: a 48 KB PNG of
7,071 x 7,071 pixels (just under the 50-megapixel cap).

Each way runs in a fresh Python process of its own, ten threads reading at once as the node's
workers do, and prints that process's peak RSS before and after the reads:
- before: the image decoded inside the reading process, as `attachment_read` did until the
  decoding moved out (Pillow: open, draft, convert to RGB, thumbnail; the same steps);
- after: `read_attachment` as it is, which hands the file to the bounded child processes
  (`vault_core.child`, at most SLOTS at once); the children's largest peak RSS is printed too,
  so the worst case for the whole node is its own peak plus SLOTS children.
BENCH_READS=10 sets the number of concurrent reads.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from vault_core import child
from vault_node.testing import blank_png
from vault_node.thumbnail import MAX_SIDE, MEMORY_BYTES

READS = int(os.environ.get("BENCH_READS", "10"))


def before(path: Path) -> None:
    from PIL import Image  # noqa: PLC0415 — the way the node decoded until now

    with Image.open(path) as image:
        image.draft("RGB", (MAX_SIDE, MAX_SIDE))
        frame = image.convert("RGB")
    frame.thumbnail((MAX_SIDE, MAX_SIDE))


def after(path: Path) -> None:
    from vault_core import Vault  # noqa: PLC0415
    from vault_node.tools.attachments import read_attachment  # noqa: PLC0415

    read_attachment(Vault(path.parent, "bench"), path.name)


def measure(way: str, path: Path) -> None:
    """In the fresh process: READS concurrent reads, then the peaks as one line."""
    work = {"before": before, "after": after}[way]
    first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    threads = [threading.Thread(target=work, args=(path,)) for _ in range(READS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(first // 1024, peak // 1024, children // 1024)


def run(way: str, path: Path) -> tuple[int, int, int]:
    done = subprocess.run(
        [sys.executable, __file__, way, str(path)], capture_output=True, check=True
    )
    first, peak, children = (int(n) for n in done.stdout.split())
    return first, peak, children


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "worst.png"
        path.write_bytes(blank_png(7071, 7071))
        print(f"image: {path.stat().st_size:,} bytes, 7071x7071 pixels; {READS} concurrent reads")
        for way in ("before", "after"):
            first, peak, children = run(way, path)
            print(
                f"{way:>6}: reading process {first} MB before the reads, peak {peak} MB "
                f"(+{peak - first} MB); largest child {children} MB"
            )
        bound = child.SLOTS * MEMORY_BYTES // 2**20
        print(
            f"bound: {child.SLOTS} children at once, each under {MEMORY_BYTES // 2**20} MiB "
            f"of address space: at most {bound} MiB for image decoding, whatever the calls"
        )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        measure(sys.argv[1], Path(sys.argv[2]))
    else:
        main()
