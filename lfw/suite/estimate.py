"""``python -m lfw.suite.estimate``: about how long ``make bench`` will take on this machine, in one line, said
before it starts.

The committed ``docs/runs/make-bench.txt`` (``bash tools/record.sh make-bench``) holds a fresh clone's ``make
bench``: the wall time of its pytest phase (synthetic data included) and its report, and the per-core rate of the
machine it ran on, the ``none`` preset's single-core ceiling. This measures that rate here the way the suite does
(:class:`~lfw.measure.ceiling.CeilingSweep` over a small synthetic tree, about a second) and scales the recorded
time by the ratio: every pass reads a fixed number of images, so a core half as fast takes about twice as long.
What does not follow one core's speed (the remote layer's injected latency, more or fewer cores than the recorded
run's) makes it an estimate, not a promise.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from lfw.cli.args import OneLineParser
from lfw.data.dataset import LFWDataset
from lfw.data.synth import synthesize
from lfw.errors import LFWError, cli_entry
from lfw.measure.ceiling import CeilingSweep

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "docs" / "runs" / "make-bench.txt"
# The lines tools/record.sh writes there: each timed phase, and the run's per-core rate.
PHASE = re.compile(r"^  (pytest|report)\b[^:\n]*: ([\d.]+) s$", re.M)
RATE = re.compile(r"^per-core rate \(single-core ceiling of the none preset\): ([\d,]+) images/s$", re.M)
SWEEP_IMAGES = 48  # a synthetic tree this small is written in a fraction of a second
MEASURE_S = 1.0  # sweeps for about this long; their median is the rate


def recorded(path: Path = RECORDED) -> tuple[float, float]:
    """The committed run's seconds of pytest and report together, and its per-core images/s."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise LFWError(f"no estimate: cannot read {path} ({exc.strerror})") from None
    phases, rate = dict(PHASE.findall(text)), RATE.search(text)
    if set(phases) != {"pytest", "report"} or rate is None:
        raise LFWError(f"no estimate: {path} holds no pytest and report times and per-core rate (bash "
                       "tools/record.sh make-bench writes them)")
    return float(phases["pytest"]) + float(phases["report"]), float(rate.group(1).replace(",", ""))


def per_core_rate(seconds: float = MEASURE_S) -> float:
    """This machine's single-core images/s of the ``none`` preset now: the median of sweeps over a small synthetic
    tree, after one sweep that warms the page cache and the first calls."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = synthesize(Path(tmp) / "lfw", images=SWEEP_IMAGES, seed=0, workers=1, progress=False)
        sweep = CeilingSweep(LFWDataset(tree, transform="none"), range(SWEEP_IMAGES))
        sweep.measure()
        rates: list[float] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end or len(rates) < 3:
            rates.append(sweep.measure().images_per_s)
    return median(rates)


def estimate_line(recorded_s: float, recorded_rate: float, rate: float) -> str:
    """The one line ``make bench`` prints: the recorded seconds scaled by the recorded rate over this one."""
    seconds = recorded_s * recorded_rate / rate
    return (f"make bench: about {seconds / 60:.1f} min here for the quick profile and the remote layer (per-core rate "
            f"now {rate:,.0f} images/s; {RECORDED.relative_to(ROOT)}: {recorded_s:.0f} s at {recorded_rate:,.0f})")


@cli_entry
def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python -m lfw.suite.estimate", description=__doc__.splitlines()[0]).parse_args(argv)
    print(estimate_line(*recorded(), per_core_rate()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
