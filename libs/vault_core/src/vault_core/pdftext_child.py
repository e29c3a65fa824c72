"""The child that reads a PDF's text: run by `vault_core.child` under its bounds, it imports
the standard library and pypdf only, reads the file from stdin and writes one JSON object.
Only the kind of a failure leaves it, never pypdf's message (which may quote the file)."""

from __future__ import annotations

import io
import json
import logging
import sys


def main(max_pages: int, max_chars: int) -> int:
    logging.disable(logging.CRITICAL)  # pypdf warns about damage it repairs, on stderr
    try:
        import pypdf  # noqa: PLC0415 — loaded after the bounds, by the child alone

        reader = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
        if reader.is_encrypted:
            return _answer({"error": "it is encrypted"}, 2)
        count = len(reader.pages)
        pages = [
            (reader.pages[i].extract_text() or "")[:max_chars] for i in range(min(count, max_pages))
        ]
    except MemoryError:
        raise  # the bounds' wrapper answers it
    except Exception as exc:  # noqa: BLE001 — the child's boundary: any failure is "malformed"
        return _answer({"error": f"it is malformed ({type(exc).__name__})"}, 2)
    return _answer({"pages": pages, "count": count}, 0)


def _answer(found: dict[str, object], code: int) -> int:
    sys.stdout.write(json.dumps(found))
    return code


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
