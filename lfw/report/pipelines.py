"""The decoders group read for its answer: the fastest pipeline, its share of its own decoder's limit (older runs:
of the same decoder's ``-w0`` case), what limits it (:func:`lfw.results.limits.what_limits`), and memory bandwidth
against the decode-free memmap ceiling of the same rotation.
"""

from __future__ import annotations

from dataclasses import dataclass

from lfw.results import Case, Run
from lfw.results import keys as K
from lfw.results import knobs as KN
from lfw.results.knobs import NUM_WORKERS
from lfw.results.limits import capacity_trusted, loaders, what_limits
from lfw.results.ratios import share_text

GROUP = "decoders"
STAGE_LABELS = {"read": "read (open + bytes)", "receive": "receive (main process)"}  # the others: their names


@dataclass(frozen=True)
class PipelineVerdict:
    """The fastest pipeline of a run's decoders group and the measured reasons it stops where it does."""

    best: Case
    cores: int
    reference: Case | None  # the same decoder and storage in the main process, one thread (older runs)
    trusted: bool = True  # its run's capacity measured by the present probe (lfw.results.limits.capacity_trusted)

    @property
    def decoder_cpu_ms(self) -> float | None:
        """CPU ms per image of the decoder alone: from its own single-core rate, else the reference case's."""
        per_core = self.best.number(K.OWN_DECODER_PER_CORE)
        if per_core:
            return 1e3 / per_core
        return self.reference.number(K.CPU_MS_PER_IMAGE) if self.reference is not None else None

    @property
    def own_ceiling_share(self) -> float | None:
        """Rate over ``cores`` x the same decoder's single-core rate: measured, else the CPU utilization over the CPU
        per image relative to the same decoder alone's."""
        measured = self.best.number(K.OWN_DECODER_SHARE)
        if measured is not None:
            return measured
        utilization = self.best.number(K.CPU_UTILIZATION)
        mine, alone = self.best.number(K.CPU_MS_PER_IMAGE), self.decoder_cpu_ms
        if utilization is None or not mine or not alone:
            return None
        return utilization / (mine / alone)

    def limit(self) -> str:
        """What stops the pipeline (:func:`lfw.results.limits.what_limits`, against the same decoder alone)."""
        return what_limits(self.best, self.decoder_cpu_ms, self.trusted).text

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

    def own_text(self) -> str:
        """The share of its own decoder's limit, with the limit spelt out so a reader can check it."""
        b = self.best
        per_core, limit = b.number(K.OWN_DECODER_PER_CORE), b.number(K.OWN_DECODER_IMAGES_PER_S)
        if per_core and limit and b.number(K.OWN_DECODER_SHARE) is not None:
            return (f"{share_text(b, K.OWN_DECODER_SHARE)} of its own decoder's limit ({limit:,.0f} images/s: the "
                    f"single-core rate of `{b.value(K.OWN_DECODER)}` in the same rounds, {per_core:,.0f} images/s, x "
                    f"the cores the rounds' capacity gave, at most its {loaders(b)} loading processes)")
        own = self.own_ceiling_share
        if own is not None and self.reference is not None:
            return f"{own:.0%} of {self.cores} x its own decoder's single-core rate (`{self.reference.label}`)"
        return "its own decoder's limit not measured"

    def stage_text(self) -> str:
        """The largest stage's CPU per image and the timed stages' share of the measured CPU; empty if none is timed."""
        stages = self.best.extra.get(K.STAGE_MS_PER_IMAGE)
        if not isinstance(stages, dict) or not stages:
            return ""
        name = max(stages, key=lambda s: float(stages[s]))
        total = self.best.number(K.CPU_MS_PER_IMAGE) or 0.0
        coverage = self.best.number(K.STAGE_COVERAGE)
        added = f"; the timed stages add up to {share_text(self.best, K.STAGE_COVERAGE)} of it" if coverage else ""
        return (f" Largest stage: {STAGE_LABELS.get(name, name)}, {float(stages[name]):.3f} of {total:.3f} ms of CPU "
                f"per image{added}.")

    def sentence(self) -> str:
        b = self.best
        pil = b.number(K.PIL_CEILING_IMAGES_PER_S) or 0.0
        return (f"`{b.label}`: {b.number(K.IMAGES_PER_S) or 0.0:,.0f} images/s (median of "
                f"{len(b.rounds(K.IMAGES_PER_S))} rounds), {self.own_text()}; {share_text(b, K.PIL_CEILING_SHARE)} "
                f"of the PIL path's limit ({pil:,.0f} images/s, the same way)."
                f"{self.stage_text()} What stops it: {self.limit()}; {self.memory_bandwidth()}.")


def reference_for(case: Case, cases: list[Case]) -> Case | None:
    """The single-thread, no-worker case of the same decoder and storage (itself if it is one)."""
    return next((other for other in cases
                 if other.knob(KN.DECODER) == case.knob(KN.DECODER) and other.value(K.STORAGE) == case.value(K.STORAGE)
                 and not other.knob(NUM_WORKERS) and not other.value(K.THREADS) and other.value(K.OUTPUT) == "uint8"
                 and other.value(K.OUTPUT_SIZE) == case.value(K.OUTPUT_SIZE)), None)


def pipeline_verdict(run: Run) -> PipelineVerdict | None:
    """The fastest decoding pipeline of the run and its measured limits; None without a decoders group."""
    cases = [c for c in run.group(GROUP)  # the memmap reads are the decode-free reference, not a pipeline
             if c.number(K.PIL_CEILING_SHARE) is not None and c.value(K.STORAGE) != "memmap"]
    if not cases:
        return None
    best = max(cases, key=lambda c: c.number(K.IMAGES_PER_S) or 0.0)
    cores = int(best.number(K.USABLE_CORES) or 1)
    return PipelineVerdict(best, cores, reference_for(best, cases), capacity_trusted(run))
