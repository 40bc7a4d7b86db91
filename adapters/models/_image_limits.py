"""A provider's documented limits on the images of one request, checked before it is sent.

Over such a limit the provider refuses the request (HTTP 400 or 413) on every attempt, and only
after the whole request was uploaded: a dataset of large photos (sent as lossless PNG: a
12-megapixel photo is ~22 MB as base64) would pay for that upload on every call and learn little
from the refusal. Said here instead, naming the image, its size and the limit, as a fault the
engine does not retry. Images are never resized: what a model is shown is what the log holds.

Each adapter checks only against its provider's own API (its default base URL): a vLLM, SGLang
or local server, or a proxy, sets limits of its own.
"""

from __future__ import annotations

import base64

import msgspec

from adapters.models.base import ImagePart, ModelCallError, ModelRequest

__all__ = ["ImageLimits", "check_image_limits", "png_size", "request_images"]

_FEWER = "--image-history original+last:K"
_NO_RESIZE = "vaot never resizes what a model is shown"


class ImageLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What one API documents it refuses; ``None`` where it documents no limit."""

    api: str
    """How a message names the API: ``"the Messages API"``."""
    max_images: int | None = None
    max_request_base64: int | None = None
    """Bytes of base64 over all the request's images."""
    max_image_base64: int | None = None
    max_side: int | None = None
    """Pixels per side of any PNG image; over :attr:`many_images` images, :attr:`many_side`."""
    many_images: int | None = None
    many_side: int | None = None


def png_size(b64: str) -> tuple[int, int] | None:
    """(width, height) from a base64 PNG's header (its first 24 bytes), or None if not a PNG."""
    try:
        head = base64.b64decode(b64[:32])
    except ValueError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def request_images(request: ModelRequest) -> list[ImagePart]:
    """Every image the request sends, in order."""
    return [p for m in request.messages for p in m.content if isinstance(p, ImagePart)]


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def check_image_limits(name: str, request: ModelRequest, limits: ImageLimits) -> None:
    """Raise if ``request`` breaks one of ``limits``; ``name`` (``provider:model``) leads the message.

    Raises:
        ModelCallError: (``retry="no"``) kind ``request_too_large`` for too many images or too
            many bytes in all, ``image_too_large`` for one image too large; the message names
            the image (its sha's first 12 digits), its size, the limit and what to change.
    """
    images = request_images(request)
    api = limits.api
    if limits.max_images is not None and len(images) > limits.max_images:
        raise ModelCallError(
            f"{name}: the request holds {len(images)} images, over {api}'s "
            f"{limits.max_images}; send fewer ({_FEWER})",
            retry="no", kind="request_too_large")
    side = limits.max_side
    many = limits.many_images is not None and len(images) > limits.many_images
    if many and limits.many_side is not None:
        side = limits.many_side
    total = 0
    for part in images:
        size = png_size(part.b64) if side is not None else None
        if side is not None and size is not None and max(size) > side:
            why = f"over {limits.many_images} images in one request" if many else "any request"
            raise ModelCallError(
                f"{name}: image {part.sha[:12]} is {size[0]}x{size[1]} pixels; {api} takes at "
                f"most {side} a side in {why}; use smaller images ({_NO_RESIZE})"
                + (f" or send fewer ({_FEWER})" if many else ""),
                retry="no", kind="image_too_large")
        total += len(part.b64)
        if limits.max_image_base64 is not None and len(part.b64) > limits.max_image_base64:
            raise ModelCallError(
                f"{name}: image {part.sha[:12]} is {_mib(len(part.b64))} as base64, over "
                f"{api}'s {limits.max_image_base64 / 2**20:.0f} MiB per image; use smaller "
                f"images in the dataset ({_NO_RESIZE})", retry="no", kind="image_too_large")
    if limits.max_request_base64 is not None and total > limits.max_request_base64:
        largest = max(images, key=lambda p: len(p.b64))
        raise ModelCallError(
            f"{name}: the request's {len(images)} images are {_mib(total)} as base64 (the "
            f"largest, image {largest.sha[:12]}, {_mib(len(largest.b64))}), over {api}'s "
            f"{limits.max_request_base64 / 2**20:.0f} MiB per request; send fewer ({_FEWER}) "
            "or smaller images in the dataset",
            retry="no", kind="request_too_large")
