"""``python -m lfw.suite.estimate [--no-remote]``: about how long ``make bench`` will take on this machine, in one
line, said before it starts.

The recorded ``make bench`` (``docs/runs/make-bench.txt``) is scaled part by part: the remote layer's share by the
local S3 endpoint's zero-latency rate, the rest by the ``none`` preset's single-core rate, each recorded rate over
the same rate measured here on a small synthetic tree (docs/methodology.md).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from lfw.cli.args import OneLineParser
from lfw.data.dataset import LFWDataset
from lfw.data.synth import synthesize
from lfw.errors import LFWError, cli_entry
from lfw.measure.ceiling import CeilingSweep
from lfw.measure.loader_pass import PassResult
from lfw.remote.bench import EndpointCeiling
from lfw.remote.dataset import S3LFW
from lfw.remote.endpoint import local_s3, upload_tree

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "docs" / "runs" / "make-bench.txt"
# The lines tools/record.sh writes there: each timed phase, pytest's slowest steps, the run's per-core rates.
PHASE = re.compile(r"^  (pytest|report)\b[^:\n]*: ([\d.]+) s$", re.M)
REMOTE_STEP = re.compile(r"^([\d.]+)s \w+ +benchmarks/test_remote\.py::", re.M)
RATES = re.compile(r"^per-core images/s of that run \([^)]*\): (\{[^}]*\})", re.M)
SWEEP_IMAGES = 48  # a synthetic tree this small is written in a fraction of a second
MEASURE_S = 1.0  # each rate: sweeps for about this long, their median


@dataclass(frozen=True)
class Recorded:
    """The committed run: seconds of pytest and report together, the remote layer's part of them, and the per-core
    images/s of its ``none`` preset and of its endpoint."""

    seconds: float
    remote_s: float
    decode_rate: float
    endpoint_rate: float


def recorded(path: Path = RECORDED) -> Recorded:
    try:
        text = path.read_text()
    except OSError as exc:
        raise LFWError(f"no estimate: cannot read {path} ({exc.strerror})") from None
    phases, rates = dict(PHASE.findall(text)), RATES.search(text)
    per_core = ast.literal_eval(rates.group(1)) if rates else {}
    if set(phases) != {"pytest", "report"} or not {"none", "endpoint"} <= set(per_core):
        raise LFWError(f"no estimate: {path} holds no pytest and report times and per-core rates (bash "
                       "tools/record.sh make-bench writes them)")
    return Recorded(float(phases["pytest"]) + float(phases["report"]),
                    sum(float(s) for s in REMOTE_STEP.findall(text)), per_core["none"], per_core["endpoint"])


def median_rate(measure: Callable[[], PassResult], seconds: float) -> float:
    """The median images/s of ``measure`` called for about ``seconds`` (three times at least), after one call that
    warms the page cache and the first calls."""
    measure()
    rates: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(rates) < 3:
        rates.append(measure().images_per_s)
    return median(rates)


def endpoint_rate(tree: Path, seconds: float) -> float:
    """The local S3 endpoint's zero-latency images/s over ``tree``, started, filled and stopped here."""
    with local_s3() as s3:
        with contextlib.redirect_stderr(io.StringIO()):  # the upload's progress bar: not make bench's first lines
            images = upload_tree(s3.direct, tree)
        ceiling = EndpointCeiling(S3LFW(s3.settings, images=images), s3)
        try:
            return median_rate(ceiling.measure, seconds)
        finally:
            ceiling.close()


def measured(remote: bool, seconds: float = MEASURE_S) -> tuple[float, float | None]:
    """This machine's per-core images/s of the ``none`` preset now, and of the endpoint (``remote``; else None)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = synthesize(Path(tmp) / "lfw", images=SWEEP_IMAGES, seed=0, workers=1, progress=False)
        decode = median_rate(CeilingSweep(LFWDataset(tree, transform="none"), range(SWEEP_IMAGES)).measure, seconds)
        return decode, endpoint_rate(tree, seconds) if remote else None


def estimate_line(run: Recorded, decode: float, endpoint: float | None) -> str:
    """The one line ``make bench`` prints: each part of the recorded time scaled by its rate then over its rate
    now (without ``endpoint``, the remote layer is left out)."""
    seconds = (run.seconds - run.remote_s) * run.decode_rate / decode
    if endpoint is not None:
        seconds += run.remote_s * run.endpoint_rate / endpoint
    what = "the quick profile and the remote layer" if endpoint is not None else "the quick profile"
    now = f"{decode:,.0f} images/s a core" + (f", the endpoint {endpoint:,.0f}/s" if endpoint is not None else "")
    then = f"{run.decode_rate:,.0f}" + (f" and {run.endpoint_rate:,.0f}" if endpoint is not None else "")
    return (f"make bench: about {seconds / 60:.1f} min here for {what} (measured now: {now}; "
            f"{RECORDED.relative_to(ROOT)}: {run.seconds:.0f} s at {then})")


@cli_entry
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.suite.estimate", description=__doc__.splitlines()[0])
    parser.add_argument("--no-remote", action="store_true", help="for make bench LAYERS=: no remote layer")
    args = parser.parse_args(argv)
    print(estimate_line(recorded(), *measured(remote=not args.no_remote)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
