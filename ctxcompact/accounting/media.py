"""Fixed token costs of images and documents: what :func:`ctxcompact.accounting.tokens.block_pieces`
adds on top of a block's text (the rules are listed in :mod:`ctxcompact.accounting.tokens`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ctxcompact.ir import Block

IMAGE_TOKENS_DEFAULT = 1600
DOCUMENT_TOKENS_PER_PAGE = 1500
IMAGE_MAX_EDGE = 1568


def image_tokens(block: Block) -> int:
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        size = image_size(str(source.get("data", "")))
        if size:
            width, height = size
            longest = max(width, height)
            scale = min(1.0, IMAGE_MAX_EDGE / longest) if longest else 1.0
            return max(1, math.ceil(width * scale * height * scale / 750))
    return IMAGE_TOKENS_DEFAULT


def image_size(data_b64: str) -> tuple[int, int] | None:
    """Width and height from the first bytes of a base64 PNG, GIF, WebP or JPEG."""
    import base64  # (and struct: only a transcript with an image loads them)
    import struct

    try:
        head = base64.b64decode(data_b64[:64_000] + "=" * (-len(data_b64[:64_000]) % 4), validate=False)
    except ValueError:
        return None
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
        return int(width), int(height)
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return int(width), int(height)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
        chunk = head[12:16]
        if chunk == b"VP8X":
            return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", head[26:30])
            return int(width) & 0x3FFF, int(height) & 0x3FFF
        if chunk == b"VP8L" and len(head) >= 25:
            bits = int.from_bytes(head[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if head[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(head):
            if head[i] != 0xFF:
                i += 1
                continue
            marker = head[i + 1]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                height, width = struct.unpack(">HH", head[i + 5 : i + 9])
                return int(width), int(height)
            length = int.from_bytes(head[i + 2 : i + 4], "big")
            i += 2 + length
    return None


def document_pieces(block: Block) -> tuple[list[str], int]:
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "text":
            return [str(source.get("data", ""))], 0
        if source.get("type") == "base64" and source.get("media_type") == "application/pdf":
            import base64

            try:
                pdf = base64.b64decode(str(source.get("data", "")), validate=False)
            except ValueError:
                pdf = b""
            pages = pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")
            pages = max(pages, pdf.count(b"/Type/Page") - pdf.count(b"/Type/Pages"), 1)
            return [], pages * DOCUMENT_TOKENS_PER_PAGE
    return [], DOCUMENT_TOKENS_PER_PAGE
