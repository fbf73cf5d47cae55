"""``python -m lfw.remote.moto_server``: moto's S3 API on 127.0.0.1, in its own process (its threads never take
the measured loader's GIL), on a port the kernel picks, printed as ``{"port": N}``; it exits when its standard
input closes, so it never outlives the suite that started it.
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
