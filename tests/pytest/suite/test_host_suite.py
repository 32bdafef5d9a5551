"""A small suite for the pytest guard's own test: ten tests, one of which peaks far above the
others (64 MiB of host memory against 1-4 MiB), one with a tighter budget as a marker."""

import pytest

MIB = 1 << 20


def touch(size):
    """Holds `size` bytes written through (so resident, not only reserved) and drops them."""
    block = b"\x01" * size
    return len(block)


@pytest.mark.parametrize("index", range(8))
def test_small(index):
    assert touch((1 + index % 4) * MIB) >= MIB


def test_peaky():
    assert touch(64 * MIB) == 64 * MIB


@pytest.mark.memarena(host_budget="1MiB")
def test_marker_budget():
    assert touch(8 * MIB) == 8 * MIB
