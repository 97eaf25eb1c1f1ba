#!/usr/bin/env python3
"""Seed inputs for fuzz_api: each command of the control socket, well-formed and not, alone and
many to a buffer, against fake VMs with and without a balloon (tests/fuzz/fuzz_api.c describes
the setup byte)."""
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

def write(name, setup, lines, end=b"\n"):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([setup]) + end.join(lines) + end)

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
with open(os.path.join(out, "unterminated"), "wb") as f:
    f.write(bytes([BALLOON]) + requests["status"] + b"\n" + requests["shutdown"])
