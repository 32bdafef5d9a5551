"""The device suite again, on the stand-in torch.cuda: 16 MiB of weights stay allocated, one
test peaks 64 MiB above them, the others 4-8 MiB."""

import torch

MIB = 1 << 20
WEIGHTS = 16 * MIB
torch.cuda.state.malloc(WEIGHTS)


def use_device(size):
    torch.cuda.state.malloc(size)
    torch.cuda.state.free(size)


def test_torch_small():
    use_device(4 * MIB)


def test_torch_peaky():
    use_device(64 * MIB)


def test_torch_after_peaky():
    use_device(8 * MIB)
