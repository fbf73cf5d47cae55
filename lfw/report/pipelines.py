"""The decoders group read for its answer: the fastest pipeline, how close it gets, and what stops it.

"What stops it" is taken from measurements of the same rotation, not guessed. The fastest pipeline's rate on
``cores`` cores is ``cores x utilization / cpu_per_image``; the same decoder in the main process alone (its
``<decoder>-w0`` case: one thread, no workers, no threads) spends ``reference_cpu`` per image, so the best this
decoder could do on the machine is ``cores / reference_cpu``, and the shortfall splits into two measured factors:

- **idle cores** (``1 - utilization``): CPU seconds of the process tree over wall seconds x cores during the
  pass. Cores left idle mean something serializes: the GIL between decode threads, or the main process that
  receives and hands on every batch;
- **CPU overhead** (``cpu_per_image / reference_cpu - 1``): work parallelism adds beside the decode: pickling and
  shared-memory copies of every batch between worker and main process (IPC), thread hand-offs, collation twice.

Memory bandwidth is judged by the decode-free ceiling of the same rotation (the uint8 memmap): a pipeline far
below it is not bound by moving bytes. When both factors are small the cores are simply busy decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from lfw.results import Case, Run
from lfw.results import keys as K

GROUP = "decoders"
SMALL = 0.10  # a factor that costs less than this share of the rate is not what stops the pipeline


@dataclass(frozen=True)
class PipelineVerdict:
    """The fastest pipeline of a run's decoders group and the measured reasons it stops where it does."""

    best: Case
    cores: int
    reference: Case | None  # the same decoder and storage in the main process, one thread

    @property
    def images_per_s(self) -> float:
        return self.best.number(K.IMAGES_PER_S) or 0.0

    @property
    def utilization(self) -> float | None:
        return self.best.number(K.CPU_UTILIZATION)

    @property
    def overhead(self) -> float | None:
        """Extra CPU per image over the same decoder alone in the main process (0.25: a quarter more)."""
        mine = self.best.number(K.CPU_MS_PER_IMAGE)
        alone = self.reference.number(K.CPU_MS_PER_IMAGE) if self.reference is not None else None
        return mine / alone - 1 if mine and alone else None

    @property
    def own_ceiling_share(self) -> float | None:
        """Rate over ``cores`` x the same decoder's single-core rate: utilization / (1 + overhead)."""
        if self.utilization is None or self.overhead is None:
            return None
        return self.utilization / (1 + self.overhead)

    def limit(self) -> str:
        """What stops the pipeline, in one sentence built from the measured factors."""
        idle = 1 - self.utilization if self.utilization is not None else None
        overhead = self.overhead
        workers = int(self.best.value("num_workers") or 0)
        threads = int(self.best.value(K.THREADS) or 0)
        if idle is None or overhead is None:
            return "not measured (no CPU accounting or no single-thread case of the same decoder in this run)"
        lost_idle, lost_overhead = idle, 1 - 1 / (1 + overhead) if overhead > 0 else 0.0
        if max(lost_idle, lost_overhead) < SMALL:
            return "decode: the cores are busy decoding (idle and overhead both under 10%)"
        if lost_idle >= lost_overhead:
            where = ("one thread by design" if workers == 0 and threads == 0 else
                     "the GIL and the main loop between the decode threads" if workers == 0 else
                     "the main process, which receives and hands on every batch")
            return f"idle cores: {idle:.0%} of the cores' time unused ({where})"
        what = ("IPC: pickling and shared-memory copies of every batch between workers and the main process"
                if workers else "thread hand-offs and collation")
        return f"CPU overhead: {overhead:+.0%} CPU per image over the same decoder alone ({what})"

    def memory_bandwidth(self) -> str:
        share = self.best.number(K.MEMMAP_CEILING_SHARE)
        ceiling = self.best.number(K.MEMMAP_CEILING_IMAGES_PER_S)
        if share is None or ceiling is None:
            return "decode-free ceiling not measured"
        if share >= 0.5:
            return (f"at {share:.0%} of the decode-free memmap ceiling ({ceiling:,.0f} images/s): moving bytes, not "
                    "decoding, is close to the limit")
        return (f"the decode-free memmap path would allow {ceiling:,.0f} images/s ({1 / share:.1f}x): memory "
                "bandwidth is not the limit")

    def sentence(self) -> str:
        b = self.best
        own = self.own_ceiling_share
        own_text = (f", {own:.0%} of {self.cores} x its own decoder's single-core rate "
                    f"(`{self.reference.label}`)" if own is not None and self.reference is not None else "")
        return (f"`{b.label}`: {self.images_per_s:,.0f} images/s, {b.number(K.PIL_CEILING_SHARE) or 0:.0%} of "
                f"{self.cores} x the PIL path's single-core rate ({b.number(K.PIL_CEILING_IMAGES_PER_S) or 0:,.0f} "
                f"images/s){own_text}. What stops it: {self.limit()}; {self.memory_bandwidth()}.")


def reference_for(case: Case, cases: list[Case]) -> Case | None:
    """The single-thread, no-worker case of the same decoder and storage (itself if it is one)."""
    for other in cases:
        if (other.value(K.DECODER) == case.value(K.DECODER) and other.value(K.STORAGE) == case.value(K.STORAGE)
                and not other.value("num_workers") and not other.value(K.THREADS)
                and other.value(K.OUTPUT) == "uint8" and other.value(K.OUTPUT_SIZE) == case.value(K.OUTPUT_SIZE)):
            return other
    return None


def decode_pipelines(run: Run) -> list[Case]:
    """The run's decode-pipeline cases that decode (the memmap reads are the decode-free reference)."""
    return [c for c in run.group(GROUP) if c.number(K.PIL_CEILING_SHARE) is not None]


def pipeline_verdict(run: Run) -> PipelineVerdict | None:
    """The fastest decoding pipeline of the run and its measured limits; None without a decoders group."""
    cases = [c for c in decode_pipelines(run) if c.value(K.STORAGE) != "memmap"]
    if not cases:
        return None
    best = max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
    cores = int(best.number(K.USABLE_CORES) or 1)
    return PipelineVerdict(best, cores, reference_for(best, cases))
