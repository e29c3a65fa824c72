"""The child that decodes an image for `attachment_read`: run by `vault_core.child` under its
bounds, it imports the standard library and Pillow's one decoder the caller names, reads the
file from stdin and writes one JSON object (the image downscaled, or why it cannot be)."""

from __future__ import annotations

import base64
import importlib
import io
import json
import sys
import warnings
from typing import Any

PLUGINS = {"PNG": "PngImagePlugin", "JPEG": "JpegImagePlugin", "GIF": "GifImagePlugin",
           "WEBP": "WebPImagePlugin"}  # fmt: skip


class RefusedError(Exception):
    """The child's own refusal; its message quotes nothing of the file."""


def main(fmt: str, budget: int, max_side: int, max_pixels: int) -> int:
    try:
        found = shrink(sys.stdin.buffer.read(), fmt, budget, max_side, max_pixels)
    except RefusedError as exc:
        return _answer({"error": str(exc)}, 2)
    except MemoryError:
        raise  # the bounds' wrapper answers it
    except Exception as exc:  # noqa: BLE001 — the child's boundary: any failure is "unreadable"
        return _answer({"error": f"it is not a readable {fmt} image ({type(exc).__name__})"}, 2)
    return _answer(found, 0)


def shrink(data: bytes, fmt: str, budget: int, max_side: int, max_pixels: int) -> dict[str, Any]:
    """The image at most `max_side` pixels a side and `budget` bytes once encoded, as JSON."""
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 — after the bounds

    importlib.import_module(f"PIL.{PLUGINS[fmt]}")  # registers this decoder and no other
    Image.MAX_IMAGE_PIXELS = None  # the bound is checked below, with the size in the message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # damage a decoder repairs is no reason to refuse
        try:
            image = Image.open(io.BytesIO(data), formats=[fmt])
        except UnidentifiedImageError as exc:
            reason = f"it is not a readable {fmt} image: its bytes are another format, or damaged"
            raise RefusedError(reason) from exc
        with image:
            width, height = image.size
            if width * height > max_pixels:
                raise RefusedError(f"it has {width}x{height} pixels, over {max_pixels}")
            image.draft("RGB", (max_side, max_side))  # JPEG: decoded at 1/2 to 1/8 scale
            mode = "RGBA" if _has_alpha(image) else "RGB"
            frame = image if image.mode == mode else image.convert(mode)  # no copy of 200 MB
            frame.thumbnail((max_side, max_side))
            encoded, mime = _encode(frame)
            while len(encoded) > budget and min(frame.size) > 16:
                frame.thumbnail((frame.width // 2, frame.height // 2))
                encoded, mime = _encode(frame)
            shown = f"{frame.width}x{frame.height}"
    data64 = base64.b64encode(encoded).decode("ascii")
    return {"width": width, "height": height, "shown": shown, "mime": mime, "data": data64}


def _has_alpha(image: Any) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _encode(frame: Any) -> tuple[bytes, str]:
    out = io.BytesIO()
    if frame.mode == "RGBA":
        frame.save(out, "PNG", optimize=True)
        return out.getvalue(), "image/png"
    frame.save(out, "JPEG", quality=82)
    return out.getvalue(), "image/jpeg"


def _answer(found: dict[str, Any], code: int) -> int:
    sys.stdout.write(json.dumps(found))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *(int(arg) for arg in sys.argv[2:5])))
