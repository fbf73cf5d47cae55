"""``python -m lfw.data.cache --profile quick``: make the synthetic tree a benchmark profile uses, ahead of time."""

from __future__ import annotations

import sys

from lfw.cli.args import OneLineParser
from lfw.data import SYNTHETIC_SIZES
from lfw.data.root import resolve_root
from lfw.errors import cli_entry


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.data.cache", description=__doc__)
    parser.add_argument("--profile", choices=sorted(SYNTHETIC_SIZES), default="quick")
    args = parser.parse_args(argv)
    source = resolve_root(synthetic_images=SYNTHETIC_SIZES[args.profile])
    print(f"{source.kind} LFW ready at {source.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
