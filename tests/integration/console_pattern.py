#!/usr/bin/env python3
"""console_pattern.py N SEED: the probe's test=console stream (firmware/tests/test_console.h:
a 32-bit LCG, each byte its state's top byte) on stdout, N bytes; with --crc32 only its CRC-32
(zlib's, 8 hex digits)."""
import sys
import zlib


def pattern(n, seed):
    out = bytearray(n)
    s = seed & 0xFFFFFFFF
    for i in range(n):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = s >> 24
    return bytes(out)


def main():
    args = [a for a in sys.argv[1:] if a != "--crc32"]
    if len(args) != 2:
        sys.exit("usage: console_pattern.py [--crc32] N SEED")
    data = pattern(int(args[0]), int(args[1]))
    if "--crc32" in sys.argv:
        print("%08x" % zlib.crc32(data))
    else:
        sys.stdout.buffer.write(data)


main()
