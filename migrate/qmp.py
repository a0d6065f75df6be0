#!/usr/bin/env python3
"""qmp.py SOCKET CMD [JSON-ARGS]: run one QMP command on a QEMU's QMP unix
socket and print its "return" value as JSON (exit 1 on an error reply).
Used by migrate/l1-migrate.sh; the standard library only."""
import json
import os
import socket
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # l1-migrate.sh passes what is left of its time limit
    sock.settimeout(max(1, int(os.environ.get("QMP_TIMEOUT", "60"))))
    sock.connect(sys.argv[1])
    f = sock.makefile("rw")

    def reply():
        while True:
            msg = json.loads(f.readline())
            if "return" in msg or "error" in msg:
                return msg

    json.loads(f.readline())  # greeting
    for cmd, args in (("qmp_capabilities", {}),
                      (sys.argv[2], json.loads(sys.argv[3]) if len(sys.argv) == 4 else {})):
        f.write(json.dumps({"execute": cmd, "arguments": args}) + "\n")
        f.flush()
        msg = reply()
        if "error" in msg:
            print(f"qmp {cmd}: {msg['error'].get('desc')}", file=sys.stderr)
            sys.exit(1)
    print(json.dumps(msg["return"]))


if __name__ == "__main__":
    main()
