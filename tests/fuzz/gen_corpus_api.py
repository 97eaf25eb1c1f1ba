#!/usr/bin/env python3
"""Seed inputs for fuzz_api: each command of the control socket, well-formed and not, alone and
many to a buffer, against fake VMs with and without a balloon, handled directly and through a
connection to the server (tests/fuzz/fuzz_api.c describes the setup and mode bytes)."""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "api")
os.makedirs(out, exist_ok=True)

VCPUS2, BALLOON, LIVE, RNG, STOPPING = 0x01, 0x04, 0x08, 0x10, 0x20
RAM64, RAM256, RAM1, RAM1T = 0x00, 0x40, 0x80, 0xc0

requests = {
    "status": b'{"cmd":"status"}',
    "balloon": b'{"cmd":"balloon-set","mib":32}',
    "balloon0": b'{"cmd":"balloon-set","mib":0}',
    "balloon_max": b'{"mib":64,"cmd":"balloon-set"}',
    "balloon_over": b'{"cmd":"balloon-set","mib":65}',
    "balloon_neg": b'{"cmd":"balloon-set","mib":-1}',
    "balloon_str": b'{"cmd":"balloon-set","mib":"32"}',
    "balloon_huge": b'{"cmd":"balloon-set","mib":9223372036854775807}',
    "balloon_overflow": b'{"cmd":"balloon-set","mib":99999999999999999999}',
    "balloon_nomib": b'{"cmd":"balloon-set"}',
    "pause": b'{"cmd":"pause"}',
    "resume": b'{"cmd":"resume"}',
    "shutdown": b' {"cmd" : "shutdown"}\t',
    "unknown": b'{"cmd":"reboot\\n\\"x"}',
    "escaped": b'{"cmd":"\\u0073tatus"}',
    "extra": b'{"cmd":"status","mib":1}',
    "dup": b'{"cmd":"status","cmd":"pause"}',
    "nocmd": b'{}',
    "intcmd": b'{"cmd":7}',
    "boolcmd": b'{"cmd":true}',
    "nested": b'{"cmd":{"x":1}}',
    "array": b'["status"]',
    "null": b'{"cmd":null}',
    "trailing": b'{"cmd":"status"} x',
    "truncated": b'{"cmd":',
    "badutf8": b'{"cmd":"\xc3\x28"}',
    "nul": b'{"cmd":"st\x00atus"}',
    "empty": b'',
}

DIRECT = 0

def socket(chunk_log2):
    return 1 | chunk_log2 << 1

def write(name, setup, lines, end=b"\n", mode=DIRECT):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([setup, mode]) + end.join(lines) + end)

for name, req in requests.items():
    write(name, BALLOON | LIVE | RNG, [req])
write("status_plain", 0, [requests["status"]])
write("status_stopping", STOPPING | VCPUS2 | 2, [requests["status"], requests["pause"]])
write("balloon_idle", BALLOON | RAM256, [requests["balloon"], requests["status"]])
# Within the configured RAM but past the memory the balloon sees: the device refuses it.
write("balloon_past_mem", BALLOON | LIVE | RAM256, [b'{"cmd":"balloon-set","mib":200}'])
write("balloon_none", RNG | RAM1T, [requests["balloon"], requests["status"]])
write("balloon_small", BALLOON | LIVE | RAM1 | 3, [requests["balloon0"], requests["balloon"]])
# Many requests in one buffer, CRLF and LF, an empty line, all commands.
session = [requests[k] for k in ("status", "pause", "status", "balloon", "balloon", "resume",
                                 "balloon0", "empty", "unknown", "status", "shutdown", "pause",
                                 "status")]
write("session", BALLOON | LIVE | RNG | 1, session)
write("session_crlf", BALLOON | RNG | 2, session, b"\r\n")
write("many", BALLOON | LIVE, [requests["status"]] * 40 + [requests["balloon"]] * 40)
# A request past API_MAX_LINE (4096): one error, then nothing more is read; one just under it.
write("huge", BALLOON, [b'{"cmd":"status","pad":"' + b"a" * 5000 + b'"}', requests["status"]])
write("long_ok", BALLOON, [b" " * 4000 + requests["status"], requests["status"]])
write("long_key", BALLOON, [b'{"' + b"k" * 100 + b'":1,"cmd":"status"}'])
write("many_members", BALLOON, [b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(20)) + b"}"])
# No newline at the end: the last request is never complete.
for mode, suffix in ((DIRECT, ""), (socket(12), "_socket")):
    with open(os.path.join(out, "unterminated" + suffix), "wb") as f:
        f.write(bytes([BALLOON, mode]) + requests["status"] + b"\n" + requests["shutdown"])
# Through the server: whole buffers, a byte at a time, 7 bytes (lines split across reads).
write("socket_session", BALLOON | LIVE | RNG | 1, session, mode=socket(15))
write("socket_bytes", BALLOON | LIVE, session[:4], b"\r\n", mode=socket(0))
write("socket_chunks", BALLOON | RNG, session, mode=socket(3))
write("socket_many", BALLOON | LIVE, [requests["status"]] * 40 + [requests["pause"]] * 40,
      mode=socket(12))
write("socket_huge", BALLOON, [requests["status"], b'{"cmd":"' + b"a" * 5000 + b'"}',
                               requests["status"]], mode=socket(10))
write("socket_long_ok", BALLOON, [b" " * 4000 + requests["status"]] * 3, mode=socket(11))
write("socket_empty", 0, [b""], mode=socket(4))
