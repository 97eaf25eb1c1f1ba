#!/usr/bin/env python3
"""Seed inputs for fuzz_virtio_pci: a driver that enables the function (memory decode, bus
mastering), negotiates features through the common configuration structure, sets up the rng's
queue there, sets DRIVER_OK and kicks through the notify area with valid and invalid chains,
with INTx or MSI-X interrupts; plus a reset and re-initialisation, and the same set-up done
through the PCI configuration access capability. So the fuzzer starts deep in the code.

Input (fuzz_virtio_pci.c): u8 n, n 8-byte operations {u8 kind, u8 flags, u16 offset,
u32 value} (kind 0 config space (ECAM), 1 BAR 0, 2 direct kick, 3 ports 0xcf8-0xcff; flags
bits 0-1 log2 length, bit 2 write), then bytes copied to the start of guest RAM."""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "virtio_pci")
os.makedirs(out, exist_ok=True)

LOG2 = {1: 0, 2: 1, 4: 2, 8: 3}

def cfg(offset, value=0, width=4, write=True):
    return struct.pack("<BBHI", 0, LOG2[width] | (4 if write else 0), offset, value)

def bar(offset, value=0, width=4, write=True):
    return struct.pack("<BBHI", 1, LOG2[width] | (4 if write else 0), offset, value)

def kick_direct(q=0):
    return struct.pack("<BBHI", 2, 0, 0, q)

def port(offset, value=0, width=4, write=True):
    return struct.pack("<BBHI", 3, LOG2[width] | (4 if write else 0), offset, value)

# devices/virtio/pci.h: BAR 0 layout and the common configuration fields.
COMMON, ISR, NOTIFY, MSIX_TABLE, MSIX_PBA = 0x0, 0x1000, 0x3000, 0x3800, 0x3c00
DFSELECT, DF, GFSELECT, GF, MSIX, NUMQ, STATUS = 0x00, 0x04, 0x08, 0x0c, 0x10, 0x12, 0x14
Q_SELECT, Q_SIZE, Q_MSIX, Q_ENABLE, Q_NOFF = 0x16, 0x18, 0x1a, 0x1c, 0x1e
Q_DESC, Q_DRIVER, Q_DEVICE = 0x20, 0x28, 0x30
# Capabilities of the rng function (no device configuration): common 0x40, notify 0x50,
# ISR 0x64, MSI-X 0x74, PCI configuration access 0x80 (its data at 0x90).
MSIX_CAP, CFG_CAP = 0x74, 0x80
PCI_COMMAND, MEM_MASTER = 0x04, 0x6

DESC, AVAIL, USED = 0x0, 0x400, 0x800
EVENT_IDX, INDIRECT = 29, 28

def negotiate(feats_lo):
    return [bar(STATUS, 0, 1), bar(STATUS, 1, 1), bar(STATUS, 3, 1),
            bar(DFSELECT, 0), bar(DF, write=False), bar(DFSELECT, 1), bar(DF, write=False),
            bar(GFSELECT, 0), bar(GF, feats_lo), bar(GFSELECT, 1), bar(GF, 1),
            bar(STATUS, 11, 1), bar(STATUS, write=False, width=1)]

def queue(size=16, vector=0xffff, split=True):
    ops = [bar(NUMQ, width=2, write=False), bar(Q_SELECT, 0, 2), bar(Q_SIZE, write=False, width=2),
           bar(Q_SIZE, size, 2), bar(Q_MSIX, vector, 2), bar(Q_NOFF, write=False, width=2)]
    for field, addr in ((Q_DESC, DESC), (Q_DRIVER, AVAIL), (Q_DEVICE, USED)):
        if split:
            ops += [bar(field, addr), bar(field + 4, 0)]
        else:
            ops += [bar(field, addr, 8)]
    return ops + [bar(Q_ENABLE, 1, 2), bar(Q_ENABLE, write=False, width=2)]

def msix():
    ops = [bar(MSIX, 1, 2)]  # config changes on vector 1
    for v in range(2):
        e = MSIX_TABLE + 16 * v
        ops += [bar(e, 0xfee00000), bar(e + 4, 0), bar(e + 8, 0x40 + v), bar(e + 12, 0)]
    return ops + [cfg(MSIX_CAP + 2, 0x8000, 2)]  # MSI-X enable

def kick():
    return [bar(NOTIFY, 0, 2), bar(ISR, write=False, width=1), bar(MSIX_PBA, write=False, width=8),
            bar(0x2000, write=False)]  # the device configuration (none for the rng)

def memory(descs, heads, avail_idx=None):
    ram = bytearray(0x1000)
    for i, (addr, length, flags, nxt) in enumerate(descs):
        struct.pack_into("<QIHH", ram, DESC + 16 * i, addr, length, flags, nxt)
    struct.pack_into("<HH", ram, AVAIL, 0, len(heads) if avail_idx is None else avail_idx)
    for i, h in enumerate(heads):
        struct.pack_into("<H", ram, AVAIL + 4 + 2 * i, h)
    # An indirect table at 0x3000 is past the seeded page (zeroes); one inside it, at 0xc00:
    struct.pack_into("<QIHH", ram, 0xc00, 0x2000, 64, 2, 0)
    return bytes(ram)

# (descriptors, heads, avail idx); flags: 1 NEXT, 2 WRITE, 4 INDIRECT.
cases = {
    "valid": ([(0x2000, 64, 2, 0)], [0], None),
    "two": ([(0x2000, 64, 2, 0), (0x2400, 128, 2, 0)], [0, 1], None),
    "chain": ([(0x2000, 16, 3, 1), (0x3000, 64, 2, 0)], [0], None),
    "readonly": ([(0x2000, 64, 0, 0)], [0], None),
    "loop": ([(0x2000, 16, 3, 1), (0x3000, 16, 3, 0)], [0], None),
    "past_ram": ([(0xfff00000000, 4096, 2, 0)], [0], None),
    "indirect": ([(0xc00, 16, 4, 0)], [0], None),
    "bad_indirect": ([(0xc00, 15, 4, 0)], [0], None),
    "bad_head": ([(0x2000, 64, 2, 0)], [200], None),
    "bad_next": ([(0x2000, 16, 3, 40)], [0], None),
    "avail_ahead": ([(0x2000, 64, 2, 0)], [0], 0x8000),
    # A full ring: the device stops after one pass and comes back in a bottom half.
    "full": ([(0x2000 + 0x100 * i, 0x100, 2, 0) for i in range(16)], list(range(16)), None),
}

def write(name, ops, ram):
    assert len(ops) < 256, name
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([len(ops)]) + b"".join(ops) + ram)

enable = [cfg(0, write=False), cfg(PCI_COMMAND, MEM_MASTER, 2)]
# The same through configuration mechanism #1: address at 0xcf8 (slot 1, register 4), data at
# 0xcfc; first a read of the vendor ID.
enable_ports = [port(0, 0x80000000 | 1 << 11), port(4, write=False),
                port(0, 0x80000000 | 1 << 11 | 4), port(4, MEM_MASTER, 2)]
for name, (descs, heads, idx) in cases.items():
    ram = memory(descs, heads, idx)
    for variant in ("", "_msix", "_eventidx"):
        feats = (1 << INDIRECT) | ((1 << EVENT_IDX) if variant == "_eventidx" else 0)
        ops = (enable_ports if variant == "_eventidx" else enable) + negotiate(feats)
        ops += msix() + queue(vector=0) if variant == "_msix" else queue(split=variant == "")
        ops += [bar(STATUS, 15, 1)] + kick() + [kick_direct()]
        write(name + variant, ops, ram)

# Reset after use, then set up again with a smaller ring and kick.
ram = memory(*cases["two"][:2])
ops = enable + negotiate(1 << INDIRECT) + queue() + [bar(STATUS, 15, 1)] + kick()
ops += [bar(STATUS, 0, 1)] + negotiate(0) + queue(size=8) + [bar(STATUS, 15, 1)] + kick()
write("reset_reinit", ops, ram)

# DRIVER_OK without FEATURES_OK (refused), a queue enabled before negotiation, bus mastering
# switched off under a live queue, then on again.
ops = enable + [bar(STATUS, 1, 1), bar(STATUS, 3, 1)] + queue() + [bar(STATUS, 7, 1)] + kick()
ops += negotiate(0) + queue() + [bar(STATUS, 15, 1), cfg(PCI_COMMAND, 0x2, 2)] + kick()
ops += [cfg(PCI_COMMAND, MEM_MASTER, 2)] + kick()
write("misordered", ops, ram)

# Everything through the PCI configuration access capability: pick bar 0, offset, length, then
# write or read pci_cfg_data.
def via_cfg(op):
    kind, flags, offset, value = struct.unpack("<BBHI", op)
    if kind != 1:
        return [op]
    width = 1 << (flags & 3)
    return [cfg(CFG_CAP + 4, 0, 1), cfg(CFG_CAP + 8, offset), cfg(CFG_CAP + 12, width),
            cfg(CFG_CAP + 16, value, 4, bool(flags & 4))]

ops = [cfg(PCI_COMMAND, 0x4, 2)]  # bus mastering only: BAR 0 not decoded
for op in negotiate(0) + queue(size=4) + [bar(STATUS, 15, 1), bar(NOTIFY, 0, 2)]:
    ops += via_cfg(op)
write("cfg_window", ops[:255], memory(*cases["valid"][:2]))
