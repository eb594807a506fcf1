"""Shared by the browser tests: the custodian token of the test server, and a minimal PNG reader
(8-bit RGB/RGBA, non-interlaced, as Chromium writes screenshots) to compare pixels."""

from __future__ import annotations

import struct
import zlib

CUSTODIAN_TOKEN = "browser-test-custodian-token-" + "b" * 16


def read_png(data: bytes, max_rows: int | None = None) -> tuple[int, int, list[bytes]]:
    """(width, height, the first ``max_rows`` rows of RGB bytes; all rows by default)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(min(height, max_rows or height)):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = prev[i]
            up_left = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[i] = (line[i] + pred) & 255
        prev = line
        rgb = bytes(line) if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3)
        rows.append(rgb)
    return width, height, rows


def share_of_color(rows: list[bytes], rgb: tuple[int, int, int], *, y0: int = 0, y1: int | None = None, tol: int = 6) -> float:
    """The share of pixels in rows [y0, y1) within ``tol`` of ``rgb``."""
    hit = total = 0
    for row in rows[y0:y1]:
        for i in range(0, len(row), 3):
            total += 1
            if abs(row[i] - rgb[0]) <= tol and abs(row[i + 1] - rgb[1]) <= tol and abs(row[i + 2] - rgb[2]) <= tol:
                hit += 1
    return hit / total if total else 0.0
