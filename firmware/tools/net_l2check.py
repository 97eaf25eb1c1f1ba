#!/usr/bin/env python3
"""Ethernet-level conformance check of the probe's IPv4 stack, no root needed: QEMU's
"-netdev socket,udp=127.0.0.1:LPORT,localaddr=127.0.0.1:RPORT" carries each frame in one UDP
datagram, and this script is the peer 10.0.2.2 (MAC 02:00:00:00:00:02) at the other end.

  net_l2check.py serve LPORT RPORT DELAY   guest runs test=serve: ARP request, pings (0..1465
      bytes), UDP echo with a good, zero and bad checksum, a bad IP header checksum and a
      fragment (both must be dropped), a 1472-byte echo; every reply's checksums are verified
  net_l2check.py stream LPORT RPORT SECS   guest runs test=udp_stream: answers its ARP,
      reassembles its (fragmented) datagrams, verifies IP and UDP checksums and the payload

Example: net_l2check.py serve 20001 20000 3 & qemu-system-x86_64 -accel kvm \
  -M microvm,acpi=off -global virtio-mmio.force-legacy=false -m 256M -nographic -no-reboot \
  -kernel build/firmware/probe.elf -device isa-debug-exit,iobase=0xf4 \
  -netdev socket,id=n0,udp=127.0.0.1:20001,localaddr=127.0.0.1:20000 \
  -device virtio-net-device,netdev=n0 \
  -append "test=serve net.ip=10.0.2.15/24 net.peer=10.0.2.2"
Prints one result line; exit status 1 if a check failed.
"""
import socket, struct, sys, time
if len(sys.argv) != 5 or sys.argv[1] not in ("serve", "stream"):
    sys.exit(__doc__)
mode, lport, rport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
MY_MAC, MY_IP = bytes.fromhex("020000000002"), socket.inet_aton("10.0.2.2")
G_IP = socket.inet_aton("10.0.2.15")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", lport)); s.settimeout(0.5)
dst = ("127.0.0.1", rport)
def csum(b):
    if len(b) % 2: b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
def ip_pkt(proto, payload, frag=0, ident=1, bad=False):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0, MY_IP, G_IP)
    c = csum(h) ^ (1 if bad else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload
def udp(sport, dport, data, cs="ok"):
    ph = MY_IP + G_IP + struct.pack("!BBH", 0, 17, 8 + len(data))
    u = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    c = 0 if cs == "zero" else csum(ph + u) or 0xffff
    if cs == "bad": c ^= 0x5a5a
    return u[:6] + struct.pack("!H", c) + u[8:]
gmac = None
def send(l3, ethertype=0x0800, to=None):
    s.sendto((to or gmac or b"\xff" * 6) + MY_MAC + struct.pack("!H", ethertype) + l3, dst)
def arp_reply_if_asked(f):
    global gmac
    if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x01" and f[38:42] == MY_IP:
        gmac = f[22:28]
        send(struct.pack("!HHBBH", 1, 0x800, 6, 4, 2) + MY_MAC + MY_IP + gmac + f[28:32], 0x0806, gmac)
        return True
    return False
def check_ip(f):
    ip = f[14:]; hl = (ip[0] & 15) * 4
    assert csum(ip[:hl]) == 0, "bad IP header checksum from guest"
    return ip[:hl], ip[hl:struct.unpack("!H", ip[2:4])[0]]
def recv_until(pred, t=2.0):
    end = time.time() + t
    while time.time() < end:
        try: f, _ = s.recvfrom(65536)
        except socket.timeout: continue
        if arp_reply_if_asked(f): continue
        r = pred(f)
        if r is not None: return r
    return None
results = {}
if mode == "serve":
    time.sleep(float(sys.argv[4]))
    # ARP request for the guest
    send(struct.pack("!HHBBH", 1, 0x800, 6, 4, 1) + MY_MAC + MY_IP + b"\0" * 6 + G_IP, 0x0806, b"\xff" * 6)
    def arp_rep(f):
        if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02" and f[28:32] == G_IP and f[38:42] == MY_IP:
            return f[22:28]
    gmac = recv_until(arp_rep); results["arp"] = gmac is not None
    # ping
    for size in (0, 56, 1000, 1473 - 8):
        data = bytes(range(256)) * 8; data = data[:size]
        icmp = struct.pack("!BBHHH", 8, 0, 0, 0x1234, size) + data
        icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
        send(ip_pkt(1, icmp))
        def echo_rep(f, size=size, data=data):
            if f[12:14] != b"\x08\x00": return None
            h, p = check_ip(f)
            if h[9] == 1 and p[0] == 0 and struct.unpack("!H", p[6:8])[0] == size:
                return csum(p) == 0 and p[8:] == data and h[12:16] == G_IP
        results["ping%d" % size] = recv_until(echo_rep) is True
    def udp_rep(f, tag):
        if f[12:14] != b"\x08\x00": return None
        h, p = check_ip(f)
        if h[9] != 17: return None
        ph = G_IP + MY_IP + struct.pack("!BBH", 0, 17, len(p))
        ok = struct.unpack("!H", p[6:8])[0] != 0 and csum(ph + p) == 0
        return (p[8:], ok, struct.unpack("!HH", p[:4]))
    for cs in ("ok", "zero", "bad"):
        data = b"cs-" + cs.encode() + bytes(100)
        send(ip_pkt(17, udp(5555, 9000, data, cs)))
        r = recv_until(lambda f: udp_rep(f, cs), 1.0)
        results["udp_" + cs] = (r is not None and r[0] == data and r[1] and r[2] == (9000, 5555)) if cs != "bad" else r is None
    # bad IP checksum, a fragment: both dropped
    send(ip_pkt(17, udp(5555, 9000, b"badip"), bad=True))
    results["bad_ip_dropped"] = recv_until(lambda f: udp_rep(f, 0), 1.0) is None
    send(ip_pkt(17, udp(5555, 9000, b"frag" * 10), frag=0x2000))
    results["frag_dropped"] = recv_until(lambda f: udp_rep(f, 0), 1.0) is None
    # max unfragmented echo
    data = bytes(i & 0xff for i in range(1472))
    send(ip_pkt(17, udp(5556, 9000, data)))
    r = recv_until(lambda f: udp_rep(f, 0), 1.0)
    results["udp_1472"] = r is not None and r[0] == data and r[1]
else:
    # stream: reassemble, check checksums, count per size
    frags, got, bad = {}, {}, 0
    end = time.time() + float(sys.argv[4])
    while time.time() < end:
        try: f, _ = s.recvfrom(65536)
        except socket.timeout: continue
        if arp_reply_if_asked(f) or f[12:14] != b"\x08\x00": continue
        h, p = check_ip(f)
        ident, fo = struct.unpack("!HH", h[4:8]); off = (fo & 0x1fff) * 8; mf = fo & 0x2000
        e = frags.setdefault(ident, {"parts": {}, "total": None})
        e["parts"][off] = p
        if not mf: e["total"] = off + len(p)
        if e["total"] is not None and sum(len(x) for x in e["parts"].values()) == e["total"]:
            d = b"".join(e["parts"][k] for k in sorted(e["parts"])); del frags[ident]
            ph = G_IP + MY_IP + struct.pack("!BBH", 0, 17, len(d))
            ok = csum(ph + d) == 0 and struct.unpack("!H", d[4:6])[0] == len(d) and d[8:] == bytes(i & 0xff for i in range(len(d) - 8))
            got[len(d) - 8] = got.get(len(d) - 8, 0) + 1
            bad += not ok
    results = {"reassembled_per_size": got, "bad_datagrams": bad, "incomplete": len(frags)}
print("net_l2check", mode, results, flush=True)
if mode == "serve":
    sys.exit(0 if all(results.values()) else 1)
sys.exit(0 if results["reassembled_per_size"] and not results["bad_datagrams"] else 1)
