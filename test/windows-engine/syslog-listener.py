# A datagram listener standing in for syslog at $1 (the test's /dev/log): appends every message to $2.
import os
import socket
import sys

path, out = sys.argv[1], open(sys.argv[2], "ab", buffering=0)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
os.chmod(path, 0o666)
print("ready", flush=True)
while True:
    out.write(sock.recv(65536) + b"\n")
