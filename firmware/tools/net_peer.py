#!/usr/bin/env python3
"""Host side of the probe's network programs (firmware/test_net*.c), over plain UDP sockets.

  net_peer.py echo BIND PORT SECS        UDP echo server (for test=udp_rr)
  net_peer.py sink BIND PORT SECS        count datagrams per size, check the payload pattern
                                         (for test=udp_stream / pktgen)
  net_peer.py send HOST PORT SIZE SECS   blast datagrams (for test=udp_sink)
  net_peer.py check HOST PORT            echo round trips of several sizes (for test=serve)

Prints one summary line; exit status 1 when check sees a missing or wrong echo.
"""
import collections
import socket
import sys
import time


def pattern(n):
    return bytes(i & 0xFF for i in range(n))


def serve(mode, bind, port, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((bind, port))
    s.settimeout(0.2)
    sizes, bad, end = collections.Counter(), 0, time.time() + secs
    while time.time() < end:
        try:
            d, a = s.recvfrom(65536)
        except socket.timeout:
            continue
        sizes[len(d)] += 1
        if mode == "echo":
            s.sendto(d, a)
        elif d[8:] != pattern(len(d))[8:]:  # udp_rr puts a sequence number first
            bad += 1
    print("net_peer %s sizes=%s bad_payload=%d" % (mode, dict(sorted(sizes.items())), bad))
    return 0


def send(host, port, size, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    d, n, end = pattern(size), 0, time.time() + secs
    while time.time() < end:
        for _ in range(100):
            try:
                s.sendto(d, (host, port))
                n += 1
            except OSError:
                pass
    print("net_peer send datagrams=%d size=%d" % (n, size))
    return 0


def check(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    ok = True
    for size in (1, 10, 100, 1000, 1472):
        data = bytes((i * 7) & 0xFF for i in range(size))
        for _ in range(10):
            s.sendto(data, (host, port))
            try:
                r, _ = s.recvfrom(65536)
            except socket.timeout:
                continue
            ok &= r == data
            break
        else:
            ok = False
    print("net_peer check %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] in ("echo", "sink") and len(a) == 4:
        sys.exit(serve(a[0], a[1], int(a[2]), float(a[3])))
    if a and a[0] == "send" and len(a) == 5:
        sys.exit(send(a[1], int(a[2]), int(a[3]), float(a[4])))
    if a and a[0] == "check" and len(a) == 3:
        sys.exit(check(a[1], int(a[2])))
    sys.exit(__doc__)
