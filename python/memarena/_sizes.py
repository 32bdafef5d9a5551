"""Sizes as memarena writes and reads them: "512MiB" in, "1.50 GiB" out (the C++ side's
ParseSize and FormatBytes, so budgets and reports read the same in gtest and pytest)."""

import re

SIZE_FORM = ("a size: a whole number of bytes with an optional suffix B, K/KiB, M/MiB, G/GiB "
             "or T/TiB (e.g. 1048576, 512MiB, 8GiB)")

_SHIFTS = {"": 0, "b": 0, "k": 10, "kib": 10, "kb": 10, "m": 20, "mib": 20, "mb": 20,
           "g": 30, "gib": 30, "gb": 30, "t": 40, "tib": 40}


def parse_size(key, value):
    """Bytes in `value`; ValueError naming `key` and the allowed form when it is not a size."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(value))
    if not match or match.group(2).lower() not in _SHIFTS:
        raise ValueError(f"bad value '{value}' for {key}: expected {SIZE_FORM}")
    return int(match.group(1)) << _SHIFTS[match.group(2).lower()]


def format_bytes(count):
    """'0 B', '512 B', '1.50 KiB' ... as memarena::FormatBytes writes them."""
    if count is None:
        return "-"
    sign = "-" if count < 0 else ""
    count = abs(count)
    if count < 1024:
        return f"{sign}{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024.0
        if value < 1024.0 or unit == "TiB":
            return f"{sign}{value:.2f} {unit}"
    raise AssertionError("unreachable")
