#!/usr/bin/env python3
"""A UDP echo service on 127.0.0.1:PORT for test_first_byte.sh, standing in for a guest:
prints "up" once bound, then echoes every datagram (MODE=echo), or answers each with other
bytes (MODE=wrong), until killed."""
import socket
import sys

port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", port))
print("up", flush=True)
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(data if mode == "echo" else b"x" + data, peer)
