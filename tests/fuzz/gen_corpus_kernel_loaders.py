#!/usr/bin/env python3
"""Write the seed corpus for fuzz_kernel_loaders (input layout: see
tests/fuzz/fuzz_kernel_loaders.c): a bzImage, an ELF64 vmlinux and ELF32/ELF64 kernels with a
PVH note, each small and loadable into 8 MiB, with and without initrd, command line and DTB.
Usage: tests/fuzz/gen_corpus_kernel_loaders.py [outdir]
(default tests/fuzz/corpus/kernel_loaders)
"""
import os
import struct
import sys

MIB = 1 << 20
RAM_8M = 2
PROTO_AUTO, PROTO_LINUX64, PROTO_PVH = 0, 1, 2
F_DTB, F_LONG_CMDLINE, F_PLACE = 4, 8, 16


def header(flags, cmdline, initrd=0, dtb=0, cpus=1, ram=RAM_8M, place=(0, 0)):
    h = struct.pack("<BBIHH6xII", flags | (cpus - 1) << 5, ram, initrd, len(cmdline), dtb, *place)
    assert len(h) == 24
    return h + cmdline


def bzimage(payload=0x200, setup_sects=4, version=0x020F):
    setup = (setup_sects + 1) * 512
    img = bytearray(setup + payload)
    img[0x1F1] = setup_sects
    struct.pack_into("<I", img, 0x1F4, payload // 16)
    struct.pack_into("<H", img, 0x1FE, 0xAA55)
    img[0x200] = 0xEB
    img[0x201] = 0x26C - 0x202
    struct.pack_into("<IH", img, 0x202, 0x53726448, version)
    img[0x211] = 1  # LOADED_HIGH
    struct.pack_into("<II", img, 0x22C, 0x7FFFFFFF, 0x200000)  # initrd_addr_max, align
    img[0x234] = 1  # relocatable
    struct.pack_into("<HH", img, 0x236, 1, 0)  # XLF_KERNEL_64
    struct.pack_into("<I", img, 0x238, 2047)  # cmdline_size
    struct.pack_into("<QI", img, 0x258, 0x100000, 0x100000)  # pref_address, init_size
    for i in range(payload):
        img[setup + i] = (i * 7 + 3) & 0xFF
    return bytes(img)


def note(name, ntype, desc):
    n = name + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def elf(is64, entry, segs):
    """segs: (type, paddr, data, memsz); data placed after the headers."""
    ehsize, phsize = (64, 56) if is64 else (52, 32)
    off = ehsize + phsize * len(segs)
    body, phdrs = b"", b""
    for ptype, paddr, data, memsz in segs:
        o = off + len(body)
        if is64:
            phdrs += struct.pack("<IIQQQQQQ", ptype, 7, o, paddr, paddr, len(data), memsz, 16)
        else:
            phdrs += struct.pack("<IIIIIIII", ptype, o, paddr, paddr, len(data), memsz, 7, 16)
        body += data + b"\0" * (-len(data) % 16)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1, 1]) + b"\0" * 9
    if is64:
        eh = ident + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, entry, ehsize, 0, 0, ehsize,
                                 phsize, len(segs), 0, 0, 0)
    else:
        eh = ident + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, entry, ehsize, 0, 0, ehsize,
                                 phsize, len(segs), 0, 0, 0)
    return eh + phdrs + body


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/kernel_loaders"
    os.makedirs(out, exist_ok=True)
    code = bytes(range(64))
    pvh = note(b"Xen", 18, struct.pack("<I", 0x100010))
    seeds = {
        "bzimage": header(PROTO_AUTO, b"console=ttyS0") + bzimage(),
        "bzimage_initrd_dtb": header(PROTO_LINUX64 | F_DTB | F_PLACE, b"quiet", initrd=5000,
                                     dtb=40, cpus=2, place=(0x200000, 0x7FFFFF)) + bzimage(),
        "bzimage_long_cmdline": header(PROTO_AUTO | F_LONG_CMDLINE, b"", cpus=1)[:6]
        + struct.pack("<H", 1200) + header(0, b"")[8:] + bzimage(),
        "vmlinux": header(PROTO_AUTO, b"root=/dev/vda", initrd=4096)
        + elf(True, 0x100000, [(1, 0x100000, code, 0x2000)]),
        "pvh32": header(PROTO_AUTO, b"x", initrd=100, cpus=4)
        + elf(False, 0x100000, [(1, 0x100000, code, 0x1000), (4, 0, pvh, 0)]),
        "pvh64": header(PROTO_PVH, b"", ram=3)
        + elf(True, 0x100000, [(1, 0x100000, code, 0x1000), (4, 0, pvh, 0)]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
