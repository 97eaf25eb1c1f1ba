#!/usr/bin/env python3
"""Write the seed corpora of the virtio device targets (fuzz_virtio_blk, _net, _rng, _balloon;
operation encoding: tests/fuzz/fuzz_vdev.h, per-target header: each target's comment).

Seeds are well-formed requests of every kind each device knows, so the fuzzer starts deep in
the request parsers rather than at chain-building.
Usage: tests/fuzz/gen_corpus_vdev.py [corpus-dir]  (default tests/fuzz/corpus)
"""
import os
import struct
import sys

POST, KICK, POST_KICK, DEVICE, RUN, CONFIG, RESET, INDIRECT = range(8)
F_INDIRECT, F_EVENT_IDX = 1 << 28, 1 << 29


def desc(length, data=b"", writable=False):
    d = struct.pack("<BH", 1 if writable else 0, length)
    if not writable:
        data = data[:64]  # the most a descriptor's contents can be given
        d += bytes([len(data)]) + data
    return d


def chain(*descs):
    return bytes([len(descs) - 1]) + b"".join(descs)


def post_kick(q, *descs):
    return bytes([POST_KICK | q << 3]) + chain(*descs)


def post_indirect(q, *descs):
    return bytes([INDIRECT | 8 | q << 3]) + chain(*descs)


def config(off, length_log2, write=False, value=0):
    return bytes([CONFIG | (8 if write else 0), off << 2 | length_log2]) + struct.pack("<Q", value)


def blk_hdr(rtype, sector):
    return struct.pack("<IIQ", rtype, 0, sector)


def blk():
    feats = struct.pack("<I", 0xFFFFFFFF)
    status = desc(1, writable=True)
    seg = struct.pack("<QII", 2, 4, 0)
    reqs = {
        "read": post_kick(0, desc(16, blk_hdr(0, 1)), desc(1024, writable=True), status),
        "write": post_kick(0, desc(16, blk_hdr(1, 3)), desc(512, b"\xab" * 16), status),
        "flush": post_kick(0, desc(16, blk_hdr(4, 0)), status),
        "get_id": post_kick(0, desc(16, blk_hdr(8, 0)), desc(20, writable=True), status),
        "discard": post_kick(0, desc(16, blk_hdr(11, 0)), desc(16, seg), status),
        "write_zeroes": post_kick(0, desc(16, blk_hdr(13, 0)), desc(16, seg[:12] + b"\1\0\0\0"),
                                  status),
        "unknown": post_kick(0, desc(16, blk_hdr(99, 0)), status),
        "past_end": post_kick(0, desc(16, blk_hdr(0, 15)), desc(1024, writable=True), status),
        "indirect_read": post_indirect(0, desc(16, blk_hdr(0, 0)), desc(512, writable=True),
                                       desc(512, writable=True), status),
    }
    out = {}
    for name, r in reqs.items():
        out[name] = bytes([16, 0]) + feats + r + bytes([DEVICE]) + config(0, 3)
        out[name + "_workers"] = bytes([16, 2]) + feats + r + bytes([DEVICE])
    # Written, then read back (the target compares it with its shadow of the image).
    out["write_read"] = (bytes([16, 0]) + feats + reqs["write"] + bytes([DEVICE])
                         + post_kick(0, desc(16, blk_hdr(0, 2)), desc(1536, writable=True), status)
                         + bytes([DEVICE]))
    out["readonly_write"] = bytes([16, 1]) + feats + reqs["write"] + bytes([DEVICE])
    out["reset_in_flight"] = bytes([16, 2]) + feats + reqs["read"] + reqs["write"] + bytes([RESET])
    return out


def net():
    feats = struct.pack("<Q", (1 << 64) - 1)
    hdr = bytes(12)
    csum_hdr = struct.pack("<BBHHHHH", 1, 0, 0, 0, 34, 16, 0)
    tso_hdr = struct.pack("<BBHHHHH", 1, 1, 54, 1400, 34, 16, 0)
    frame = bytes(range(60))
    rx_buf = desc(1526, writable=True)
    inject = bytes([DEVICE, 0]) + struct.pack("<H", 12 + 60) + bytes([16]) + bytes(12) + b"\x01" * 4
    return {
        "tx": bytes([0x3E, 0]) + feats + post_kick(1, desc(12, hdr), desc(60, frame[:64])),
        "tx_one_desc": bytes([0x3E, 4]) + feats + post_kick(1, desc(72, hdr + frame)),
        "tx_csum": bytes([0x3E, 0]) + feats + post_kick(1, desc(72, csum_hdr + frame)),
        "tx_tso": bytes([0x3E, 0]) + feats + post_kick(1, desc(1500, tso_hdr + frame)),
        "tx_short_hdr": bytes([0, 0]) + feats + post_kick(1, desc(8, hdr[:8])),
        "tx_timer_eagain": bytes([1, 0]) + feats + bytes([DEVICE, 1])
        + post_kick(1, desc(72, hdr + frame)) + bytes([DEVICE, 4, DEVICE, 2]),
        "rx": bytes([0x3E, 0]) + feats + post_kick(0, rx_buf) + inject,
        "rx_no_mrg": bytes([0, 0]) + struct.pack("<Q", 1 << 32) + post_kick(0, rx_buf) + inject,
        "rx_split": bytes([0, 0]) + feats + post_kick(0, desc(10, writable=True),
                                                      desc(100, writable=True)) + inject,
        "rx_too_small": bytes([0, 0]) + feats + post_kick(0, desc(8, writable=True)) + inject,
        "link_down": bytes([0, 0]) + feats + post_kick(0, rx_buf) + bytes([DEVICE, 3]) + inject,
        "config": bytes([0, 0]) + feats + config(0, 2) + config(6, 1) + config(8, 1),
        # poll-us=20 (option bit 7): the waits poll; a frame and a receive buffer posted
        # without a kick are found by the poll.
        "tx_poll": bytes([0xBE, 0]) + feats + post_kick(1, desc(72, hdr + frame))
        + bytes([DEVICE, 4, POST | 1 << 3]) + chain(desc(72, hdr + frame))
        + bytes([DEVICE, 4, DEVICE, 4]),
        "rx_poll_stalled": bytes([0xBE, 0]) + feats + inject + bytes([DEVICE, 4, POST])
        + chain(rx_buf) + bytes([DEVICE, 4, DEVICE, 4]),
    }


def rng():
    return {
        "one": struct.pack("<I", 0) + post_kick(0, desc(64, writable=True)),
        "chain": struct.pack("<I", F_EVENT_IDX) + post_kick(0, desc(16, writable=True),
                                                           desc(4096, writable=True)),
        "indirect": struct.pack("<I", F_INDIRECT) + post_indirect(0, desc(32, writable=True)),
        "readable": struct.pack("<I", 0) + post_kick(0, desc(8, b"x")),
        "reset": struct.pack("<I", 0) + bytes([POST]) + chain(desc(64, writable=True))
        + bytes([RESET, KICK]),
    }


def balloon():
    feats = struct.pack("<Q", (1 << 64) - 1)
    pfns = struct.pack("<4I", 40, 41, 42, 9999)
    stats = b"".join(struct.pack("<HQ", tag, 1000 + tag) for tag in range(10))
    return {
        "inflate": bytes([0]) + feats + post_kick(0, desc(16, pfns)),
        "inflate_deflate": bytes([1]) + feats + post_kick(0, desc(16, pfns))
        + post_kick(1, desc(8, pfns[:8])) + bytes([DEVICE, 2]),
        "stats": bytes([0]) + feats + post_kick(2, desc(100, stats[:64]))
        + bytes([DEVICE, 1]) + post_kick(2, desc(10, stats[:10])),
        "report": bytes([2]) + feats + post_kick(3, desc(0x3000, writable=True))
        + bytes([DEVICE, 2]),
        "target": bytes([0]) + feats + bytes([DEVICE, 0]) + struct.pack("<I", 64)
        + config(4, 2, True, 64) + config(0, 3),
        "odd_pfn_array": bytes([0]) + feats + post_kick(0, desc(6, pfns[:6])),
    }


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus"
    for target, seeds in (("virtio_blk", blk()), ("virtio_net", net()),
                          ("virtio_rng", rng()), ("virtio_balloon", balloon())):
        out = os.path.join(base, target)
        os.makedirs(out, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
