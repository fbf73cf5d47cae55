"""Memory figures of runs on several CPU models side by side: which ones port across CPU models.

    python tools/memory_across_cpus.py RUN.json [RUN.json ...] > docs/runs/memory-across-cpus.txt

Per figure of :data:`SHOWN` and case recording memory: each run's value by CPU model, the shift of the first two
models' medians against the gate's minimum effect, rows the gate does not judge (:func:`unjudged`) marked and left
out of the summary (docs/gating-measured.md, "Memory across CPU models"); a figure older runs lack derived as the
gate derives it (:meth:`lfw.gate.metrics.Metric.rounds_of`; the host: :func:`lfw.gate.compare.host_pair`).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from statistics import median

from lfw.cli.args import OneLineParser
from lfw.cli.table import table
from lfw.errors import cli_entry
from lfw.gate.metrics import HOST_SHARED, HOST_USS, MEMORY, PSS_PEAK, Metric, fresh_interpreters
from lfw.gate.thresholds import Thresholds
from lfw.results import Case, load_run
from lfw.results import keys as K

SHOWN: tuple[Metric, ...] = (HOST_USS, PSS_PEAK, *MEMORY)


def value(case: Case, metric: Metric, derived: bool = False) -> float | None:
    """The median of ``metric`` in ``case`` (its older, derived form where ``derived``); None where absent."""
    values = ([v] if (v := metric.derived(case)) is not None else []) if derived and metric.derived \
        else metric.rounds_of(case)
    return float(median(values)) if values else None


def unjudged(metric: Metric, cases: Sequence[Case]) -> str:
    """Why the gate does not judge ``metric`` for these cases (one case key in several runs); "" where it does."""
    if any(c.value(K.POSITIVE_CONTROL) is True for c in cases):
        return "positive control"
    if metric in HOST_SHARED and any(fresh_interpreters(c) for c in cases):
        return "fresh-interpreter workers"
    return ""


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python tools/memory_across_cpus.py", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="saved runs, grouped by the CPU model each recorded")
    runs = [load_run(path) for path in p.parse_args(argv).runs]
    models = list(dict.fromkeys(str(r.machine.get("cpu_model")) for r in runs))
    for r in runs:
        print(f"{r.path}: {r.machine.get('cpu_model')}, commit {str(r.commit.get('id', ''))[:7]}, {r.datetime}")
    keys = sorted({k for r in runs for k, c in r.by_key().items() if any(m.rounds_of(c) for m in SHOWN)})
    worst: dict[str, tuple[float, str]] = {}
    for metric in SHOWN:
        print(f"\n{metric.label} ({metric.key}){'' if metric in MEMORY else ', not judged'}")
        rows = []
        floor, ratio = Thresholds().absolute(metric)
        for key in keys:
            cases = [r.by_key().get(key) for r in runs]
            derived = metric is HOST_USS and any(c is not None and c.number(HOST_USS.key) is None for c in cases)
            by_model = {m: [v for r, c in zip(runs, cases, strict=True) if str(r.machine.get("cpu_model")) == m
                            and c is not None and (v := value(c, metric, derived)) is not None] for m in models}
            if not all(by_model[m] for m in models[:2]):
                continue
            a, b = median(by_model[models[0]]), median(by_model[models[1]])
            effect = max(floor, ratio * abs(a))  # the gate's minimum effect at the first model's median
            why = unjudged(metric, [c for c in cases if c is not None])
            if not why and abs(b - a) / effect >= worst.get(metric.key, (0.0, ""))[0]:
                worst[metric.key] = (abs(b - a) / effect, key)
            rows.append((key, *("  ".join(f"{v:7.1f}" for v in by_model[m]) for m in models[:2]), f"{b - a:+.1f}",
                         f"{effect:.1f}", f"not judged: {why}" if why else ""))
        heads = ("case", *(m[:24] for m in models[:2]), "shift", "min effect", "note")
        print(textwrap.indent(table(heads, rows, right=range(1, len(heads) - 1)), "  "))
    print("\nlargest |shift| / minimum effect over the cases the gate judges, by figure:")
    rows = [(m.key, f"{worst[m.key][0]:.2f}", worst[m.key][1]) for m in SHOWN if m.key in worst]
    print(textwrap.indent(table(("figure", "|shift| / min effect", "case"), rows, right={1}), "  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
