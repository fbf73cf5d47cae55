"""One side of a pass-interleaved A/B: a long-lived process that measures one pass of a case on request.

``python -m lfw.gate --ab REV`` starts one per revision, in its own checkout, and asks them in turn for one pass;
each builds its cases with its own revision's engine (:func:`lfw.suite.runner.case_member`). The protocol stays
fixed across revisions (:data:`lfw.gate.ab.SERVERS` names each revision's module path). JSON lines on stdin and
stdout: at start ``{"ready": true, "protocol": 1, "lfw", "cases", "unknown", "pid"}``; ``{"case": ID}`` runs one
pass and replies ``{"case", "images", "batches", "wall_s", "ttfb_s", "images_per_s"}``; an error replies
``{"error": "<one line>"}``; end of input ends the process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import lfw
from lfw.cli.args import OneLineParser
from lfw.errors import LFWError, cli_entry, one_line
from lfw.suite.profiles import PROFILES

PROTOCOL = 1


def reply(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve(root: Path, profile_name: str, case_ids: Sequence[str], inp: TextIO, out: TextIO) -> int:
    """Build the requested cases, say which exist in this revision, then answer pass requests until EOF."""
    import torch

    from lfw.measure.rotation import LoaderMember
    from lfw.suite import matrix
    from lfw.suite.runner import Datasets, case_member

    torch.set_num_threads(1)
    profile = PROFILES[profile_name]
    datasets = Datasets(root)
    members: dict[str, LoaderMember] = {}
    unknown: list[str] = []
    warmed: set[tuple[str, ...]] = set()
    try:  # from the first member built: a later case that fails to build still closes the ones before it
        for case_id in case_ids:
            try:
                _, case = matrix.find_case(case_id)
            except LFWError:
                unknown.append(case_id)
                continue
            members[case_id] = case_member(case, datasets, profile, warmed=warmed)  # each file set warmed once
        reply(out, {"ready": True, "protocol": PROTOCOL, "lfw": str(Path(lfw.__file__).parent),
                    "cases": list(members), "unknown": unknown, "pid": os.getpid()})
        for line in inp:
            if not line.strip():
                continue
            try:
                case_id = json.loads(line)["case"]
                result = members[case_id].measure()
            except KeyError:
                reply(out, {"error": f"no case {line.strip()} in this revision"})
                continue
            except (LFWError, RuntimeError, OSError) as exc:
                reply(out, {"error": one_line(exc)})
                continue
            reply(out, {"case": case_id, "images": result.images, "batches": result.batches,
                        "wall_s": result.wall_s, "ttfb_s": result.ttfb_s, "images_per_s": result.images_per_s})
    finally:
        for member in members.values():
            member.close()
    return 0


@cli_entry
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.suite.pass_server", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the image folder both sides read")
    parser.add_argument("--profile", default="quick", choices=tuple(PROFILES),
                        help="benchmark profile: pass lengths (default quick)")
    parser.add_argument("cases", nargs="+", help="case ids from lfw.suite.matrix (workers2-none, bs256, ...)")
    args = parser.parse_args(argv)
    return serve(args.root, args.profile, args.cases, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
