#!/usr/bin/env python3
"""Seed inputs for fuzz_virtio_mmio: a driver that initialises the rng device properly and
posts descriptor chains (valid, looping, out of RAM), so the fuzzer starts deep in the code."""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "virtio_mmio")
os.makedirs(out, exist_ok=True)

def op(offset, value, write=1, notify=0, width=2):
    return struct.pack("<HBBII", offset, width, write, value, notify)

DESC, AVAIL, USED = 0x0, 0x400, 0x800

def rd(offset, width=2):
    return op(offset, 0, write=0, width=width)

def init(event_idx):
    feats_lo = (1 << 29) if event_idx else 0
    # Identification registers, device features (both halves), QueueNumMax, QueueReady,
    # status, config generation and (empty for the rng) config space are read as a driver does.
    return [rd(0x000), rd(0x004), rd(0x008), rd(0x00c), op(0x70, 1), op(0x70, 3),
            op(0x14, 0), rd(0x010), op(0x14, 1), rd(0x010), op(0x24, 0), op(0x20, feats_lo),
            op(0x24, 1), op(0x20, 1), op(0x70, 11), rd(0x070), op(0x30, 0), rd(0x034), rd(0x044),
            op(0x38, 16), op(0x80, DESC), op(0x84, 0), op(0x90, AVAIL), op(0x94, 0),
            op(0xa0, USED), op(0xa4, 0), op(0x44, 1), rd(0x044), op(0x70, 15), rd(0x0fc),
            rd(0x100), rd(0x0b0), rd(0x002, 1)]

# After a kick: the interrupt status is read and acknowledged.
ack = [rd(0x060), op(0x064, 1), rd(0x060)]

def memory(descs, heads):
    ram = bytearray(0x1000)
    for i, (addr, length, flags, nxt) in enumerate(descs):
        struct.pack_into("<QIHH", ram, DESC + 16 * i, addr, length, flags, nxt)
    struct.pack_into("<HH", ram, AVAIL, 0, len(heads))
    for i, h in enumerate(heads):
        struct.pack_into("<H", ram, AVAIL + 4 + 2 * i, h)
    return bytes(ram)

cases = {
    "valid": [(0x2000, 64, 2, 0)],
    "chain": [(0x2000, 16, 1, 1), (0x3000, 64, 2, 0)],
    "loop": [(0x2000, 16, 3, 1), (0x3000, 16, 3, 0)],
    "past_ram": [(0xfff00000000, 4096, 2, 0)],
    "indirect": [(0x3000, 32, 4, 0)],
}
for name, descs in cases.items():
    for event_idx in (False, True):
        ops = init(event_idx) + [op(0x50, 0, notify=1)] + ack
        blob = bytes([len(ops)]) + b"".join(ops) + memory(descs, [0])
        with open(os.path.join(out, f"{name}{'_eventidx' if event_idx else ''}"), "wb") as f:
            f.write(blob)

# A full ring (16 buffers): the device stops after one pass and comes back in a bottom half.
ops = init(False) + [op(0x50, 0, notify=1)] + ack
full = [(0x2000 + 0x100 * i, 0x100, 2, 0) for i in range(16)]
with open(os.path.join(out, "full"), "wb") as f:
    f.write(bytes([len(ops)]) + b"".join(ops) + memory(full, list(range(16))))
