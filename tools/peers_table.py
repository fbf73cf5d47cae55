"""A saved run's Peers table (the report's), one verdict line per peer, the peers' versions and one-off conversions.
What ``tools/record.sh peers`` keeps in docs/runs/peers.txt.

    python -m tools.peers_table [RUN.json]        (default: the newest autosave)
"""

from __future__ import annotations

import sys

from lfw.cli.args import OneLineParser
from lfw.cli.sections import Bullets, markdown
from lfw.errors import cli_entry
from lfw.report.peers import peer_rows, peers_table, verdict_lines
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results import latest_run, load_run


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m tools.peers_table", description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", help="a saved run (default: the newest autosave)")
    run = load_run(p.parse_args(argv).run or latest_run())
    print(f"run {run.path.name}; peers' versions: {run.machine.get('peers')}")
    table = peers_table(run, peers := peer_rows(run))
    print(markdown([table, Bullets(verdict_lines(peers))] if table is not None else []), end="")
    conversions = {str(c.knob(KN.PEER)): c.extra[K.CONVERSION] for c in run.group("peers") if c.extra.get(K.CONVERSION)}
    print(f"one-off conversions (seconds to convert, bytes on disk): {conversions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
