#!/usr/bin/env python3
"""Write the seed corpus for fuzz_virtqueue (input layout: see tests/fuzz/fuzz_virtqueue.c).

Seeds are well-formed rings, so the fuzzer starts from deep paths instead of enable errors.
Usage: tests/fuzz/gen_corpus_virtqueue.py [outdir]  (default tests/fuzz/corpus/virtqueue)
"""
import os
import struct
import sys

NEXT, WRITE, INDIRECT = 1, 2, 4
RAM = 4096
DESC, AVAIL, USED, IND, BUF = 0x000, 0x400, 0x600, 0xA00, 0xC00
OPS_DRAIN = bytes([0, 4, 8 | 3, 1, 0, 3, 0, 4, 0, 2, 1, 0, 5 | (1 << 3), 0, 7, 0])


def seed(size_log2, flags, descs, heads, ind=(), ops=OPS_DRAIN, used_event=0, ram_size=RAM):
    ram = bytearray(ram_size)
    size = 1 << size_log2
    for i, (addr, ln, fl, nxt) in enumerate(descs):
        struct.pack_into("<QIHH", ram, DESC + 16 * i, addr, ln, fl, nxt)
    for i, (addr, ln, fl, nxt) in enumerate(ind):
        struct.pack_into("<QIHH", ram, IND + 16 * i, addr, ln, fl, nxt)
    for i, h in enumerate(heads):
        struct.pack_into("<H", ram, AVAIL + 4 + 2 * (i % size), h)
    struct.pack_into("<HH", ram, AVAIL, 0, len(heads) & 0xFFFF)
    struct.pack_into("<H", ram, AVAIL + 4 + 2 * size, used_event)
    hdr = struct.pack("<HBBIII", size_log2, flags, 0, DESC, AVAIL, USED) + ops
    assert len(hdr) == 32
    return hdr + bytes(ram)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/virtqueue"
    os.makedirs(out, exist_ok=True)
    seeds = {
        "simple": seed(3, 0, [(BUF, 16, NEXT, 1), (BUF + 16, 32, WRITE, 0)], [0]),
        "two_chains_event_idx": seed(
            3, 2, [(BUF, 8, 0, 0), (BUF + 8, 8, WRITE | NEXT, 2), (BUF + 16, 8, WRITE, 0)],
            [0, 1], used_event=1),
        "indirect": seed(
            2, 3, [(BUF, 4, NEXT, 1), (IND, 48, INDIRECT, 0)], [0],
            ind=[(BUF, 8, NEXT, 1), (BUF + 8, 8, WRITE | NEXT, 2), (BUF + 16, 8, WRITE, 0)]),
        "full_ring": seed(2, 0, [(BUF + 4 * i, 4, WRITE, 0) for i in range(4)], [3, 2, 1, 0]),
        "loop": seed(1, 0, [(BUF, 4, NEXT, 1), (BUF, 4, NEXT, 0)], [0]),
        "zero_len": seed(0, 1, [(0xFFFFFFFF00000000, 0, 0, 0)], [0]),
        # The largest legal indirect table (16 KiB) behind one direct buffer.
        "indirect_1024": seed(
            1, 1, [(BUF, 4, NEXT, 1), (IND, 16 * 1024, INDIRECT, 0)], [0],
            ind=[(BUF + i % 64, 1, NEXT if i < 1023 else 0, i + 1) for i in range(1024)],
            ram_size=IND + 16 * 1024),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
