"""A PNG screenshot's pixels, decoded with zlib alone (no imaging dependency): enough to say
whether a page rendered anything (8-bit RGB or RGBA, non-interlaced, as Chromium writes)."""

from __future__ import annotations

import struct
import zlib

__all__ = ["drawn_fraction", "pixels"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes a pixel, and the unfiltered rows."""
    assert data.startswith(SIGNATURE), "not a PNG"
    position, idat = len(SIGNATURE), b""
    width = height = channels = 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[x] = (line[x] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def drawn_fraction(data: bytes) -> float:
    """The fraction of pixels that differ from the top-left one (the background)."""
    width, height, channels, rows = pixels(data)
    background = rows[0][:channels]
    drawn = sum(
        1
        for row in rows
        for x in range(0, width * channels, channels)
        if row[x : x + channels] != background
    )
    return drawn / (width * height)
