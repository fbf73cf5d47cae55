"""The per-core rates and data-wait figures of docs/runs/capacity-2026-12-02-b.txt, from the runs in this folder.

Run from the repository root: ``.venv/bin/python benchmarks/gate_rates/capacity/2026-12-02-b/figures.py``.
"""

from statistics import median

from lfw.gate.metrics import data_wait_excess
from lfw.results import keys as K
from lfw.results.model import Case, load_run

HERE = "benchmarks/gate_rates/capacity/2026-12-02-b/"
BASELINE = "benchmarks/baselines/cpu-2core.json"


def case(path: str, test: str) -> Case:
    return next(c for c in load_run(path).cases if c.name == test)


for name, path in [("committed baseline", BASELINE), ("full.json", HERE + "full.json"),
                   ("half-gate.json", HERE + "half-gate.json")]:
    rate = median(case(path, "test_workers_transform[workers0-none]").rounds(K.PER_CORE_IMAGES_PER_S))
    print(f"{name}: per-core rate of the none preset {rate:,.0f} images/s")
for name, path in [("committed baseline", BASELINE), ("half-gate.json", HERE + "half-gate.json")]:
    c = case(path, "test_data_wait[step20ms]")
    print(f"{name}: test_data_wait[step20ms] fraction {median(c.rounds(K.DATA_WAIT_FRACTION)):.4f}, "
          f"excess over the machine's prediction {median(data_wait_excess(c)):.4f}")
for name in ("healthy", "half", "half-handover", "half-copy"):
    excess = median(data_wait_excess(case(HERE + name + ".json", "test_data_wait[step50ms]")))
    print(f"{name}: test_data_wait[step50ms] excess {excess:.4f}")
for name, path in [("committed baseline", BASELINE), ("half-gate.json", HERE + "half-gate.json")]:
    rotations = {c.group: c.extra[K.ROTATION] for c in load_run(path).cases
                 if isinstance(c.extra.get(K.ROTATION), dict) and "capacity_seconds" in c.extra[K.ROTATION]}
    shares = ", ".join(f"{g} {r['capacity_seconds'] / r['seconds']:.1%}" for g, r in rotations.items())
    probe, total = (sum(r[k] for r in rotations.values()) for k in ("capacity_seconds", "seconds"))
    print(f"{name}: the capacity probe's seconds over its rotations' timed seconds {probe / total:.1%} in all;", shares)
