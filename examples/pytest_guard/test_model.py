"""Ten tests of a model on a 1 GiB device with 256 MiB of weights. Nine run small batches;
test_long_sequence draws a sequence length, as a test fed by sampled data does, and needs
roughly 520-880 MiB of activations: about 3 runs in 10 it needs more than the device has
left."""

import os
import random

import pytest

MIB = 1 << 20


@pytest.mark.parametrize("batch", range(9))
def test_small_batch(device, batch):
    device.run(32 * MIB, (16 + 8 * batch) * MIB)


def test_long_sequence(device):
    rng = random.Random(os.environ.get("EXAMPLE_SEED"))
    length = rng.randint(520, 880)  # MiB of activations for the sampled sequence
    device.run(256 * MIB, (length - 256) * MIB)
