"""``python -m lfw.remote.moto_server``: moto's S3 API on 127.0.0.1, in its own process, for as long as its parent.

moto's ``ThreadedMotoServer`` serves the real S3 wire protocol (path-style). It runs here in a process of its own,
not in the benchmark's, so its Python threads never compete with the measured loader for that process's GIL
(they do compete for the machine's cores, like a real server on the same host would; the endpoint's zero-latency
ceiling is measured for that reason). It binds 127.0.0.1 on a port the kernel picks (port 0: no race, no fixed
port), prints ``{"port": N}`` on stdout once it answers, and exits when its standard input closes, so it can never
outlive the suite that started it, however that suite ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys


def main() -> int:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(json.dumps({"port": server.get_host_and_port()[1]}), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # until the parent closes our stdin or exits
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
