"""Print a saved run's decode pipelines with their stage breakdown, reconciliation and own-decoder share.

    python tools/stage_table.py [RUN.json]   (default: the newest autosave; exit 1 when it has no decoders group)

One row per decoders case, fastest first: images/s, its share of its own decoder's limit and of the PIL path's,
CPU utilization and ms per image, each stage's ms per image, the stages' sum over the CPU, and the CPU no stage
claimed (workers, main). Then the report's fastest-pipeline sentence and its accelerators-fed table.
"""

from __future__ import annotations

import sys

from lfw.cli.args import OneLineParser
from lfw.cli.sections import Bullets, markdown
from lfw.cli.table import table
from lfw.errors import cli_entry
from lfw.measure.stages import STAGES
from lfw.report.accelerators import accelerators_section
from lfw.report.pipelines import GROUP, pipeline_verdict
from lfw.results import Case, latest_run, load_run
from lfw.results import keys as K
from lfw.results.ratios import share_text


def pct_range(case: Case, key: str) -> str:
    return share_text(case, key) if case.number(key) is not None else "-"


@cli_entry
def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python tools/stage_table.py", description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", help="a saved run (default: the newest autosave)")
    run = load_run(p.parse_args(argv).run or latest_run())
    cases = sorted(run.group(GROUP), key=lambda c: -(c.number(K.IMAGES_PER_S) or 0.0))
    if not cases:
        print(f"{run.path.name}: no decoders group")
        return 1
    print(f"run {run.path.name}; machine: {run.machine.get('cpu', {}).get('brand_raw')}, "
          f"{cases[0].number(K.USABLE_CORES) or 0:.0f} usable cores; rounds {cases[0].number(K.ROUNDS) or 0:.0f}")
    head = ["pipeline", "images/s", "own decoder", "PIL limit", "busy", "CPU ms", *STAGES, "stages/CPU",
            "gap wrk", "gap main"]
    rows = []
    for c in cases:
        stages = c.extra.get(K.STAGE_MS_PER_IMAGE) or {}
        gaps = c.extra.get(K.STAGE_GAP_MS_PER_IMAGE) or {}
        rows.append([c.label, f"{c.number(K.IMAGES_PER_S) or 0:,.0f}", pct_range(c, K.OWN_DECODER_SHARE),
                     pct_range(c, K.PIL_CEILING_SHARE), f"{c.number(K.CPU_UTILIZATION) or 0:.0%}",
                     f"{c.number(K.CPU_MS_PER_IMAGE) or 0:.3f}", *(f"{float(stages.get(s, 0)):.3f}" for s in STAGES),
                     pct_range(c, K.STAGE_COVERAGE), f"{float(gaps.get('workers', 0)):.3f}",
                     f"{float(gaps.get('main', 0)):.3f}"])
    print(table(head, rows, right=range(1, len(head))))
    own = {c.value(K.OWN_DECODER): c.number(K.OWN_DECODER_IMAGES_PER_S) for c in cases}
    print("own-decoder limits (usable cores x the decoder's single-core rate, median of rounds):",
          ", ".join(f"{k} {v:,.0f}" for k, v in own.items() if v))
    if (verdict := pipeline_verdict(run)) is not None:
        print("report:", verdict.sentence().replace("`", ""))
    print(markdown([Bullets(accelerators_section(run))]).replace("`", "").replace("**", ""), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
