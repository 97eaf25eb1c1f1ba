#!/usr/bin/env python3
"""A vhost-user back end that only shakes hands, for test_fs_errors.sh: listens on PATH, prints
"up", serves one connection: GET_FEATURES answers FEATURES, GET_PROTOCOL_FEATURES offers MQ and
REPLY_ACK, GET_QUEUE_NUM answers QUEUES, every other request that asks for an acknowledgement
gets 0; ends when the front end closes. The spec's codes (QEMU's docs/interop/vhost-user.rst)."""
import array
import socket
import struct
import sys

GET_FEATURES, GET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 1, 15, 17
VERSION, REPLY, NEED_REPLY = 0x1, 0x4, 0x8
PROTOCOL_MQ_REPLY_ACK = (1 << 0) | (1 << 3)

path, features, queues = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(1)
print("up", flush=True)
conn, _ = listener.accept()


def take(n):
    """n bytes from the front end, closing any descriptor that comes along; None at its end."""
    data = b""
    while len(data) < n:
        chunk, anc, _, _ = conn.recvmsg(n - len(data), socket.CMSG_SPACE(8 * 4))
        for level, kind, fds in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for fd in array.array("i", fds[: len(fds) - len(fds) % 4]):
                    socket.close(fd)
        if not chunk:
            return None
        data += chunk
    return data


answers = {GET_FEATURES: features, GET_PROTOCOL_FEATURES: PROTOCOL_MQ_REPLY_ACK,
           GET_QUEUE_NUM: queues}
while True:
    header = take(12)
    if header is None:
        break
    req, flags, size = struct.unpack("<III", header)
    if size and take(size) is None:
        break
    value = answers.get(req, 0 if flags & NEED_REPLY else None)
    if value is not None:
        conn.sendall(struct.pack("<IIIQ", req, VERSION | REPLY, 8, value))
