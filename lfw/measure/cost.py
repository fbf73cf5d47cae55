"""The deterministic cost layer: CPU instructions per image of the loading pipeline, counted under callgrind.

One pass of ``batches`` batches through :class:`~lfw.measure.LoaderPass` (``num_workers=0``, one intra-op thread,
after an uncounted warm-up) is counted with instrumentation on only around it (:mod:`lfw.measure.callgrind`);
seeds, the hash seed and a collection before the pass make the count repeat; kernel work is not counted
(docs/gating.md, the cost layer). The child is ``python -m lfw.measure.cost --child ...`` under ``valgrind
--tool=callgrind --instr-atstart=no``, dumping one profile per preset for the parent to parse."""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from lfw.cli.args import OneLineParser
from lfw.cli.saving import write_atomic
from lfw.errors import LFWError, MeasurementError, cli_entry
from lfw.measure.callgrind import build_helper, requests, unavailable_reason, valgrind_version
from lfw.measure.loader_config import LoaderConfig
from lfw.measure.loader_pass import LoaderPass
from lfw.measure.moves import count_moves

CALLGRIND_FLAGS = ("--tool=callgrind", "--instr-atstart=no", "--dump-instr=no", "--dump-line=no",
                   "--compress-strings=no", "--compress-pos=no")
LABEL_PREFIX = "lfw-cost:"
CHILD_TIMEOUT_S = 1800.0
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # for a child's libraries


@dataclass(frozen=True)
class InstructionCount:
    """Instructions executed by one counted pass of one preset, the images it loaded, and what a pass of the
    same preset moved per image (:mod:`lfw.measure.moves`: files opened, read calls, bytes read, batch bytes)."""

    preset: str
    instructions: int
    images: int
    batches: int
    moves: dict[str, float] = field(default_factory=dict)

    @property
    def per_image(self) -> float:
        return self.instructions / self.images if self.images else 0.0


def parse_dumps(folder: Path) -> dict[str, int]:
    """Total instructions (the ``totals:`` line) of every dump in ``folder`` whose trigger names a preset."""
    counts: dict[str, int] = {}
    for path in sorted(folder.glob("callgrind.out*")):
        label = total = None
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("desc: Trigger:") and LABEL_PREFIX in line:
                label = line.split(LABEL_PREFIX, 1)[1].strip()
            elif line.startswith("totals:"):
                total = int(line.split(":", 1)[1].split()[0])
        if label is not None and total is not None:
            counts[label] = total
    return counts


def last_line(text: str) -> str:
    """The last line of a counting process's output that is its own (valgrind's lines start with ``==``)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    return lines[-1].strip() if lines else "no output"


def child_command(root: Path, presets: Sequence[str], batch_size: int, batches: int, out_dir: Path,
                  cache_dir: Path) -> list[str]:
    return ["valgrind", *CALLGRIND_FLAGS, f"--callgrind-out-file={out_dir / 'callgrind.out'}",
            sys.executable, "-m", "lfw.measure.cost", "--child", "--root", str(root), "--batch-size",
            str(batch_size), "--batches", str(batches), "--cache-dir", str(cache_dir), "--result",
            str(out_dir / "images.json"), *presets]


def child_env() -> dict[str, str]:
    """The counting process's environment: one thread everywhere, a fixed hash seed."""
    return {**os.environ, **ONE_THREAD, "PYTHONHASHSEED": "0"}


def count_instructions(root: Path, presets: Sequence[str], *, batch_size: int, batches: int,
                       cache_dir: Path, timeout_s: float = CHILD_TIMEOUT_S) -> dict[str, InstructionCount]:
    """Count the instructions of one pass per preset in one valgrind process; returns them by preset.

    Raises:
        LFWError: valgrind, its headers or a compiler is missing (the reason names the fix).
        MeasurementError: the counting process failed or timed out (its last line of output is quoted).
    """
    if reason := unavailable_reason():
        raise LFWError(f"cannot count instructions: {reason}")
    build_helper(cache_dir)  # here, outside valgrind: the child only loads it
    with tempfile.TemporaryDirectory(prefix="lfw-cost-") as tmp:
        out = Path(tmp)
        command = child_command(root, presets, batch_size, batches, out, cache_dir)
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=timeout_s,
                                    check=False)
        except subprocess.TimeoutExpired:
            raise MeasurementError(f"instruction counting took longer than {timeout_s:g} s and was stopped") from None
        if result.returncode != 0:
            raise MeasurementError(f"instruction counting failed (exit {result.returncode}): "
                                   f"{last_line(result.stderr or result.stdout)}")
        images = json.loads((out / "images.json").read_text())
        counts = parse_dumps(out)
    if missing := [p for p in presets if p not in counts or p not in images]:
        raise MeasurementError(f"callgrind wrote no count for {', '.join(missing)}")
    return {p: InstructionCount(p, counts[p], images[p]["images"], images[p]["batches"], images[p].get("moves", {}))
            for p in presets}


def run_child(root: Path, presets: Sequence[str], batch_size: int, batches: int, cache_dir: Path,
              result_path: Path) -> None:
    """Inside valgrind: build each preset's loader, warm it up uncounted, then count one pass per preset; then
    count what a pass of each preset moves (:func:`lfw.measure.moves.count_moves`, outside the counted region)."""
    from lfw.data.dataset import LFWDataset  # torchvision: only the counting child reads LFW

    torch.set_num_threads(1)
    req = requests(str(cache_dir))
    images: dict[str, dict[str, Any]] = {}
    config = LoaderConfig(batch_size=batch_size, num_workers=0)
    for preset in presets:
        runner = LoaderPass(config.build(LFWDataset(root, transform=preset)), batches, memory_interval_s=None)
        runner.run()  # warm-up: lazy imports, first-call caches, allocator arenas
        runner.setup()
        torch.manual_seed(0)
        random.seed(0)
        gc.collect()
        req.start()
        result = runner.run()
        req.stop()
        req.dump(f"{LABEL_PREFIX}{preset}")
        runner.close()
        images[preset] = {"images": result.images, "batches": result.batches}
    for preset in presets:  # after every instruction count: the audit hook that counts opens stays installed
        images[preset]["moves"] = count_moves(config.build(LFWDataset(root, transform=preset)), batches).per_image()
    write_atomic(result_path, json.dumps(images))


@cli_entry
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m lfw.measure.cost",
                           description="Count instructions per image (runs itself under valgrind).")
    parser.add_argument("presets", nargs="+")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--child", action="store_true", help="count in this process (it must run under valgrind)")
    parser.add_argument("--result", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.root, args.presets, args.batch_size, args.batches, args.cache_dir, args.result)
        return 0
    t0 = time.perf_counter()
    counts = count_instructions(args.root, args.presets, batch_size=args.batch_size, batches=args.batches,
                                cache_dir=args.cache_dir)
    print(json.dumps({"valgrind": valgrind_version(), "seconds": round(time.perf_counter() - t0, 1),
                      "counts": {p: {**asdict(c), "per_image": round(c.per_image)} for p, c in counts.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
