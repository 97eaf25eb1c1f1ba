#!/usr/bin/env python3
"""Accept one TCP connection on 127.0.0.1 (port printed on stdout as "port N"), read until
the peer closes, and check every byte against the probe's test=tcp_stream pattern: byte i is
(i * 131 + (i >> 9)) mod 256. Prints "tcp_sink bytes=N bad=M" and exits 0 only when
bytes == the expected count (argv[1]) and no byte is wrong."""
import socket
import sys

expected = int(sys.argv[1])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
print("port", srv.getsockname()[1], flush=True)
srv.settimeout(120)
conn, _ = srv.accept()
conn.settimeout(60)
table = bytes(range(256))
total = bad = 0
while True:
    data = conn.recv(1 << 20)
    if not data:
        break
    want = bytes(((i * 131 + (i >> 9)) & 0xFF) for i in range(total, total + len(data)))
    if data != want:
        bad += sum(1 for a, b in zip(data, want) if a != b)
    total += len(data)
conn.close()
print(f"tcp_sink bytes={total} bad={bad}", flush=True)
sys.exit(0 if total == expected and bad == 0 else 1)
