"""The peers layer's table and verdicts from the newest saved run (what ``tools/record.sh peers`` keeps in
docs/runs/peers.txt): the Peers table of the report, one verdict line per peer, the peers' versions and their
one-off conversions."""

from __future__ import annotations

from lfw.cli.sections import Bullets, markdown
from lfw.report.peers import peer_rows, peers_table, verdict_lines
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results import latest_run, load_run


def main() -> None:
    run = load_run(latest_run())
    print(f"run {run.path.name}; peers' versions: {run.machine.get('peers')}")
    peers = peer_rows(run)
    table = peers_table(run, peers)
    print(markdown([table, Bullets(verdict_lines(peers))] if table is not None else []), end="")
    conversions = {str(c.knob(KN.PEER)): c.extra[K.CONVERSION] for c in run.group("peers") if c.extra.get(K.CONVERSION)}
    print(f"one-off conversions (seconds to convert, bytes on disk): {conversions}")


if __name__ == "__main__":
    main()
