"""The ``extra_info`` schema: every key a benchmark case records, declared once here with what a reader needs of it.

Each constant is a declaration (:func:`metric`, :func:`setting`, :func:`machine`) that returns the key itself (a
plain string, the name pytest-benchmark saves) and enters its facts in :data:`FACTS`: its section of the
:class:`lfw.results.record.CaseRecord`, a label, the unit of the saved value, the decimal places the record keeps,
which way is better and how a value is written. Writers (every one builds its record as a
:class:`~lfw.results.record.CaseRecord`, which refuses a key not declared here) and readers (the gate, the report)
import the same names; the knobs a case *is* are :mod:`lfw.results.knobs`'. Adding a metric is one declaration
here and the code that measures it (docs/methodology.md, "Adding a metric or a knob"). Renaming a key breaks
comparison with older baselines, which is why the strings themselves do not change lightly.

Per-round values live beside each summary value under :func:`rounds` (``images_per_s`` and
``images_per_s_rounds``), a coefficient of variation under ``_cv``: both read the facts of their metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Tree = Literal["rss", "pss", "uss"]
Point = Literal["before", "start", "end", "peak", "growth"]
Section = Literal["knobs", "metrics", "machine"]
Better = Literal["higher", "lower"]
TREE_METRICS: tuple[Tree, ...] = ("rss", "pss", "uss")
DEFAULT_DIGITS = 6


@dataclass(frozen=True)
class Key:
    """One key of the record: ``section`` (where :class:`~lfw.results.record.CaseRecord` keeps it), ``label``,
    ``unit`` (of the saved value), ``digits`` (decimal places a summarized value keeps), ``better`` (None where
    neither way is), and ``fmt``, the format of ``value x scale`` in ``shown`` units (default ``unit``)."""

    key: str
    section: Section
    label: str = ""
    unit: str = ""
    digits: int = DEFAULT_DIGITS
    better: Better | None = None
    fmt: str = "{:.3f}"
    scale: float = 1.0
    shown: str | None = None

    def cell(self, value: float) -> str:
        """The value as a table cell whose column names the unit."""
        return self.fmt.format(value * self.scale)

    def format(self, value: float) -> str:
        """The value with its unit: ``12.3 MiB``, ``0.123 s``."""
        unit = self.unit if self.shown is None else self.shown
        return f"{self.cell(value)} {unit}" if unit else self.cell(value)


FACTS: dict[str, Key] = {}


def declare(key: str, section: Section, **given: object) -> str:
    """Enter ``key`` in :data:`FACTS` (once: a second declaration is a mistake) and return it."""
    if key in FACTS:
        raise ValueError(f"record key {key!r} is declared twice")
    FACTS[key] = Key(key, section, **given)  # type: ignore[arg-type]
    return key


def metric(key: str, label: str = "", **given: object) -> str:
    """A measured figure (or a fact derived from the measurements)."""
    return declare(key, "metrics", label=label, **given)


def setting(key: str, label: str = "") -> str:
    """A description of the case saved with its record (the knobs proper are :mod:`lfw.results.knobs`')."""
    return declare(key, "knobs", label=label)


def machine(key: str, label: str = "", **given: object) -> str:
    """What the case ran on and how."""
    return declare(key, "machine", label=label, **given)


def facts(key: str) -> Key | None:
    """The facts of ``key``, of its metric for a per-round list or a CV; None for a key not declared."""
    for suffix in ("", "_rounds", "_cv"):
        if key.endswith(suffix) and (found := FACTS.get(key[:len(key) - len(suffix)])) is not None:
            return found
    return None


def rounds(key: str) -> str:
    """The key of the per-round list beside a summary value."""
    return f"{key}_rounds"


def tree(metric: Tree, point: Point) -> str:
    """Process-tree memory in MiB: ``pss_growth_mib``, ``uss_end_mib``, ``rss_peak_mib`` ..."""
    return f"{metric}_{point}_mib"


# --- the record itself (lfw.results.record) ----------------------------------------------------------------
# The version of the record's layout a case was saved with (an int); a case without it is version 0.
SCHEMA_VERSION = "schema_version"
MIB = {"unit": "MiB", "digits": 4, "fmt": "{:,.1f}"}  # the memory figures of a pass, summarized over rounds
SHARE = {"digits": 4, "better": "higher"}  # a rate over a ceiling of the same round

# --- one pass, summarized over rounds (lfw.suite.record) --------------------------------------------------
ROUNDS = metric("rounds", "rounds")
IMAGES = metric("images", "images per pass")
BATCHES = metric("batches", "batches per pass")
IMAGES_PER_S = metric("images_per_s", "images/s", unit="img/s", digits=2, better="higher", fmt="{:,.0f}")
IMAGES_PER_S_CV = metric("images_per_s_cv", "CV of images/s", digits=4, better="lower", fmt="{:.1%}")
WALL_S = metric("wall_s", "wall time of a pass", unit="s", better="lower")
TTFB_S = metric("ttfb_s", "time to first batch", unit="s", better="lower", fmt="{:,.1f}", scale=1e3, shown="ms")
# absent where no round has a steady state (STEADY_ABSENT says why)
STEADY_IMAGES_PER_S = metric("steady_images_per_s", "steady images/s", unit="img/s", digits=2, better="higher",
                             fmt="{:,.0f}")
# batches after the start-up wave each round's steady rate rests on (fewest)
STEADY_BATCHES = metric("steady_batches", "batches of the steady rate")
STEADY_ABSENT = metric("steady_absent", "why no steady rate")  # too few batches after the start-up wave
STEADY_INVALID = metric("steady_invalid", "why no steady rate is shown")  # above a ceiling it cannot exceed
WAIT_P50_MS, WAIT_P95_MS, WAIT_P99_MS = (metric(f"wait_{p}_ms", f"wait for a batch, {p}", unit="ms", better="lower")
                                         for p in ("p50", "p95", "p99"))
DATA_WAIT_FRACTION = metric("data_wait_fraction", "data-wait fraction", digits=4, better="lower")
WORKERS = setting("workers", "worker processes (older records)")
USABLE_CORES = machine("usable_cores", "usable cores")
PER_CORE_IMAGES_PER_S = metric("per_core_images_per_s", "single-core ceiling", unit="img/s", digits=2,
                               fmt="{:,.0f}")
CEILING_IMAGES_PER_S = metric("ceiling_images_per_s", "ceiling", unit="img/s", digits=2, fmt="{:,.0f}")
EFFICIENCY = metric("efficiency", "efficiency", **SHARE, fmt="{:.1%}")
# Cores the machine gave in the round (lfw.measure.ceiling): N x t_1 / t_N of a fixed workload, at most about N.
PARALLEL_CAPACITY = machine("parallel_capacity", "parallel capacity (cores)", digits=3)

# --- CPU of one pass (lfw.measure.loader_pass.PassResult): where the cores went ----------------------------------
# tree CPU seconds over wall seconds x usable cores
CPU_UTILIZATION = metric("cpu_utilization", "CPU utilization", digits=4)
CPU_MS_PER_IMAGE = metric("cpu_ms_per_image", "CPU per image", unit="ms", digits=4, better="lower")
MAIN_CPU_SHARE = metric("main_cpu_share", "main process's share of the CPU", digits=4)
# Device time of one batch's host-to-device copy (CUDA events around it), mean over the pass's batches.
H2D_MS_PER_BATCH = metric("h2d_ms_per_batch", "host-to-device copy per batch", unit="ms", better="lower")

# --- what the live loader did with its knobs (lfw.measure.loader_pass.PassResult), read back from its iterator --
# The last round's (lfw.suite.record.loader_facts), so a knob the DataLoader was built without shows here whatever
# the case's config says; a fact with nothing to read (no worker processes) is absent.
WORKERS_SEEN = metric("workers_seen", "worker processes serving the pass")  # 0: the main process loads
WORKER_START_METHOD = metric("worker_start_method", "how the workers started")  # fork, spawn or forkserver
# batches iter() asked the workers for: prefetch_factor x workers, or the epoch's batches where it has fewer
PREFETCHED_BATCHES = metric("prefetched_batches", "batches asked for by iter()")
PREFETCH_FACTOR_SEEN = metric("prefetch_factor_seen", "the live iterator's prefetch factor")
# Every round's worker process ids, in worker order, read from the live iterator after its last batch: the same ids
# in every round where the workers persist, new ones each round where they do not (absent without workers).
WORKER_PIDS = metric("worker_pids", "worker process ids per round")
# Counted inside the loading processes (lfw.measure.stages counts), one list entry per round: the images each
# decoder decoded under its own name (decode pipelines), and the batches collated from each kind of file index the
# dataset held there (index group); a decoder or index kind that counted nothing is absent.
DECODED_IMAGES = metric("decoded_images", "images decoded per decoder")
INDEX_SEEN = metric("index_seen", "batches per index kind")
# first batch in pinned memory; None where not read (no accelerator, or no pin_memory)
BATCH_PINNED = metric("batch_pinned", "first batch pinned")
# measured time in the training step per batch, mean of a round (ms)
STEP_MS_PER_BATCH = metric("step_ms_per_batch", "training step per batch", unit="ms", digits=3)

# --- memory of one pass (lfw.measure.loader_pass.MemoryStats) ------------------------------------------------
TREE_KEYS = tuple(metric(tree(m, p), f"tree {m.upper()} {p}", **MIB, better="lower")
                  for m in TREE_METRICS for p in ("before", "start", "end", "peak") if (m, p) != ("pss", "peak"))
PSS_PEAK_MIB = metric(tree("pss", "peak"), "tree PSS peak in pass", **MIB, better="lower")
PSS_GROWTH_MIB = metric(tree("pss", "growth"), "tree PSS growth", unit="MiB", digits=4, better="lower",
                        fmt="{:+,.1f}")
USS_GROWTH_MIB = metric(tree("uss", "growth"), "tree USS growth", **MIB, better="lower")
RSS_GROWTH_MIB = metric(tree("rss", "growth"), "tree RSS growth", **MIB, better="lower")
PSS_END_MIB = tree("pss", "end")
WORKER_USS_START_MIB = metric("worker_uss_start_mib", "worker USS at the start", **MIB, better="lower")
WORKER_USS_END_MIB = metric("worker_uss_end_mib", "worker USS", **MIB, better="lower")
WORKER_USS_GROWTH_MIB = metric("worker_uss_growth_mib", "worker USS growth", **MIB, better="lower")
WORKER_USS_MAX_GROWTH_MIB = metric("worker_uss_max_growth_mib", "largest worker USS growth", **MIB, better="lower")
MEMORY_SAMPLES = metric("memory_samples", "memory samples", digits=4)
# start marks the sampler took: 1 where the pass asked for one, else 0
MEMORY_START_MARKS = metric("memory_start_marks", "memory start marks", digits=4)
SAMPLER_CPU_S = metric("sampler_cpu_s", "memory sampler's CPU", unit="s", digits=4)
SAMPLER_CPU_FRACTION = metric("sampler_cpu_fraction", "memory sampler's share of the CPU")
TIMELINE = metric("timeline", "memory timeline")
# What the pass adds, apart from the host process it runs in (docs/gating.md, "Memory"): the tree's PSS peak over the
# tree before the pass, and the /dev/shm the pass used at its peak over the /dev/shm used before it (the batches in
# flight between the workers and the main process; machine-wide, so read where nothing else runs).
PSS_PEAK_ADDED_MIB = metric("pss_peak_added_mib", "tree PSS peak added by the pass", **MIB, better="lower")
SHM_PEAK_ADDED_MIB = metric("shm_peak_added_mib", "/dev/shm peak added by the pass", **MIB, better="lower")
# The host: the main process alone before the pass (its imports, its libraries, the dataset it built).
HOST_PSS_BEFORE_MIB = metric("host_pss_before_mib", "host process PSS before the pass", **MIB, better="lower")
HOST_USS_BEFORE_MIB = metric("host_uss_before_mib", "host process USS before the pass", **MIB, better="lower")
# Summarized over rounds by the largest value (a peak), not the median.
PEAK_KEYS = tuple(tree(m, "peak") for m in TREE_METRICS)
# Summarized with their per-round lists kept (the gate and the error bars need them).
GROWTH_KEYS = (*(tree(m, "growth") for m in TREE_METRICS), WORKER_USS_GROWTH_MIB, WORKER_USS_MAX_GROWTH_MIB,
               PSS_PEAK_ADDED_MIB, SHM_PEAK_ADDED_MIB)

# --- the case itself (benchmark fixtures); the knobs' facts are lfw.results.knobs' -----------------------------
TRANSFORM = "transform"
INDEX = "index"
CACHE_MODE = setting("cache_mode", "page cache mode")
PROFILE = setting("profile", "bench profile")
CONFIG = setting("config", "the loader's configuration")
DEVICE = machine("device", "device the batches went to")
STEP_MS = "step_ms"
ROTATION = machine("rotation", "the group's rotation")
ROTATION_POSITIONS = machine("rotation_positions", "the case's positions in the rotation")
WORKER_SHUTDOWN_ERRORS = machine("worker_shutdown_errors", "workers that died on their way out")

# --- decode pipelines (the decoders group): the pipeline and its two machine ceilings ------------------------
DECODER = "decoder"
STORAGE = setting("storage", "storage of the images")
THREADS = setting("threads", "decode threads")
OUTPUT = setting("output", "output of the pipeline")
OUTPUT_SIZE = setting("output_size", "pixels per side")  # after the resize; None: as stored
# "items" (collated by the DataLoader) or "slots" (decoded into reusable shared slots)
BATCHING = setting("batching", "batching")
# Machine ceilings measured in the same rotation, x usable cores: the single-core rate of the PIL path
# (decode + PILToTensor) and the decode-free rate of the uint8 memmap. A pipeline's share of the PIL ceiling may
# exceed 1 (a faster decoder); of the memmap ceiling it should not.
PIL_CEILING_IMAGES_PER_S = metric("pil_ceiling_images_per_s", "PIL ceiling", unit="img/s", digits=2,
                                  fmt="{:,.0f}")
PIL_CEILING_SHARE = metric("pil_ceiling_share", "share of the PIL ceiling", **SHARE)
MEMMAP_CEILING_IMAGES_PER_S = metric("memmap_ceiling_images_per_s", "memmap ceiling", unit="img/s", digits=2,
                                     fmt="{:,.0f}")
MEMMAP_CEILING_SHARE = metric("memmap_ceiling_share", "share of the memmap ceiling", **SHARE)
# Where the CPU of a decode pipeline goes: stage name -> ms of CPU per image, timed inside the workers and the
# main process (lfw.measure.stages), and how much of the measured tree CPU per image the timed stages account for.
STAGE_MS_PER_IMAGE = metric("stage_ms_per_image", "CPU per image by stage")
# sum of the timed stages / cpu_ms_per_image, per round in rounds_stage_coverage
STAGE_COVERAGE = metric("stage_coverage", "timed stages' share of the CPU", digits=4)
# {"workers": ms, "main": ms}: measured CPU no stage claimed
STAGE_GAP_MS_PER_IMAGE = metric("stage_gap_ms_per_image", "CPU per image no stage claimed")
# A pipeline's rate over usable cores x the single-core rate of its own decoder (its ``ceiling-decode-*`` member,
# measured in the same rotation), per round; the interval is the rounds' lowest and highest share.
# usable cores x the decoder's single-core rate
OWN_DECODER_IMAGES_PER_S = metric("own_decoder_images_per_s", "own decoder's ceiling", unit="img/s", digits=2,
                                  fmt="{:,.0f}")
# the decoder's single-core rate (median of rounds)
OWN_DECODER_PER_CORE = metric("own_decoder_per_core_images_per_s", "own decoder's single-core rate", unit="img/s",
                              digits=2, fmt="{:,.0f}")
OWN_DECODER_SHARE = metric("own_decoder_share", "share of the own decoder's ceiling", **SHARE)
OWN_DECODER = setting("own_decoder", "the ceiling member the share is taken against")

# --- remote storage (the remote group): the case, the traffic through the proxy, the endpoint's ceiling -------
STRATEGY = "strategy"
LATENCY_MS = "latency_ms"  # injected first-byte delay
CONCURRENCY = setting("concurrency", "requests in flight per loading process")
IN_FLIGHT_LIMIT = setting("in_flight_limit", "requests in flight at most")  # loading processes x concurrency
REQUESTS_PER_IMAGE = metric("requests_per_image", "requests/image", better="lower")
HEAD_PER_IMAGE = metric("head_per_image", "HEAD requests/image", better="lower")
LIST_PER_IMAGE = metric("list_per_image", "LIST requests/image", better="lower")
BYTES_PER_IMAGE = metric("bytes_per_image", "bytes/image", unit="B", better="lower")
RETRIED_GETS = metric("retried_gets", "retried GETs", better="lower")
CONNECTIONS = metric("connections", "connections")
MEAN_IN_FLIGHT = metric("mean_in_flight", "mean requests in flight")
MAX_IN_FLIGHT = metric("max_in_flight", "most requests in flight")
FIRST_BYTE_P50_MS = metric("first_byte_p50_ms", "first byte, p50", unit="ms", better="lower")
FIRST_BYTE_P99_MS = metric("first_byte_p99_ms", "first byte, p99", unit="ms", better="lower")
# in-flight limit / mean request time / requests per image
LITTLES_LAW_IMAGES_PER_S = metric("littles_law_images_per_s", "Little's law bound", unit="img/s", fmt="{:,.0f}")
# zero-latency, fetch-only, same rotation
ENDPOINT_CEILING_IMAGES_PER_S = metric("endpoint_ceiling_images_per_s", "endpoint ceiling", unit="img/s",
                                       fmt="{:,.0f}")
ENDPOINT_CEILING_SHARE = metric("endpoint_ceiling_share", "share of the endpoint ceiling", better="higher")
# steady rate / the same round's endpoint ceiling
STEADY_CEILING_SHARE = metric("steady_endpoint_ceiling_share", "steady share of the endpoint ceiling",
                              better="higher")
# Little's law checked: (mean requests in flight while any was) / (mean request time) / (requests per image),
# beside the measured steady rate (error: steady / law - 1), and the limit that caps the case, in words.
# time-average of requests in flight from first request to last reply
BUSY_MEAN_IN_FLIGHT = metric("busy_mean_in_flight", "mean requests in flight while busy")
LITTLES_LAW_RATE = metric("littles_law_rate_images_per_s", "Little's law rate", unit="img/s", fmt="{:,.0f}")
LITTLES_LAW_ERROR = metric("littles_law_error", "steady rate over Little's law, less 1")
# in-flight limit, pool, endpoint ceiling, client CPU, or idle request slots
REMOTE_LIMIT = metric("remote_limit", "what limits the remote case")
# the endpoint's and proxy's CPU over wall x usable cores
ENDPOINT_CPU_UTILIZATION = metric("endpoint_cpu_utilization", "endpoint CPU utilization")
# Share of min(endpoint ceiling, in-flight limit / injected latency): what the gate judges for a remote case.
REMOTE_BOUND_SHARE = metric("remote_bound_share", "share of the remote bound", better="higher")
# share >= 0.8: the endpoint, not the strategy, is the limit
NEAR_ENDPOINT_CEILING = metric("near_endpoint_ceiling", "near the endpoint ceiling")

# --- a distributed run (lfw.distributed): one case per rank and one for the total ----------------------------
RANK = "rank"  # an int, or "total"
WORLD_SIZE = "world_size"
BACKEND = setting("backend", "collective backend")
# slowest rank's load time over the fastest's, per epoch
STRAGGLER_RATIO = metric("straggler_ratio", "straggler ratio", digits=4, better="lower")
STRAGGLER_RANK = metric("straggler_rank", "slowest rank")
COVERAGE_OK = metric("coverage_ok", "every image once")
FINDINGS = metric("findings", "findings")
# per epoch: time spent waiting at the all-reduce
COLLECTIVE_WAIT_S = metric("collective_wait_s", "wait at the collective", unit="s", better="lower")
LOAD_S = metric("load_s", "load time", unit="s", better="lower")  # per epoch: wall time minus that wait

# --- one side of a pass-interleaved A/B run (lfw.gate.ab): where each pass sat in the schedule -------------------
AB_PAIR = metric("ab_pair", "process pair")  # the process pair (1, 2, ...) a pass belongs to
AB_SLOT = metric("ab_slot", "slot in the quad")  # its position in the pair's ABBA or BAAB quad
AB_QUAD = metric("ab_quad", "quad order")  # the quad's order, "ABBA" or "BAAB"
AB_SIDE = metric("ab_side", "side")  # "base" or "current"

# --- the cost layer (the "cost" group: instructions per image under valgrind) ---------------------------------
COUNT = {"better": "lower", "fmt": "{:,.1f}"}  # counted per image, deterministic
INSTRUCTIONS = metric("instructions", "instructions", better="lower", fmt="{:,.0f}")
INSTRUCTIONS_PER_IMAGE = metric("instructions_per_image", "instructions/image", better="lower", fmt="{:,.3f}",
                                scale=1e-6, shown="M")
IMAGES_COUNTED = metric("images_counted", "images counted")
VALGRIND = machine("valgrind", "valgrind version")
NATIVE_INSTRUCTIONS_PER_S = metric("native_instructions_per_s", "native instructions/s", better="higher",
                                   fmt="{:,.0f}")

# --- the copy-on-access experiment (the "memory-index" group) ----------------------------------------------------
INDEX_SIZE = setting("index_size", "index entries")  # entries of the replicated path index
INDEX_MIB = metric("index_mib", "index size", unit="MiB", fmt="{:,.1f}")  # its size in the process that built it
# on the numpy case: the list case's worker growth over its
LIST_OVER_NUMPY = metric("list_over_numpy_worker_uss_growth", "list over numpy worker growth")

# --- what a pipeline moves per image, counted deterministically (lfw.measure.moves) --------------------------
FILES_OPENED_PER_IMAGE = metric("files_opened_per_image", "files opened/image", **COUNT)
READ_CALLS_PER_IMAGE = metric("read_calls_per_image", "read calls/image", **COUNT)
BYTES_READ_PER_IMAGE = metric("bytes_read_per_image", "bytes read/image", **COUNT)
BATCH_BYTES_PER_IMAGE = metric("batch_bytes_per_image", "batch bytes/image", **COUNT)
MOVES = (FILES_OPENED_PER_IMAGE, READ_CALLS_PER_IMAGE, BYTES_READ_PER_IMAGE, BATCH_BYTES_PER_IMAGE)

# --- a case that demonstrates a check rather than measures the user's loader ----------------------------------
CASE = "case"  # the leak check's case name: lfw, control, index
# True: it must be flagged by its own check; the gate does not compare it
POSITIVE_CONTROL = setting("positive_control", "positive control")

# --- leak checks (lfw.measure.leak) ---------------------------------------------------------------------------
EPOCHS = setting("epochs", "epochs")
USS_MIB_EPOCHS = metric("uss_mib_epochs", "tree USS per epoch", unit="MiB")
PSS_MIB_EPOCHS = metric("pss_mib_epochs", "tree PSS per epoch", unit="MiB")
WORKER_USS_MIB_EPOCHS = metric("worker_uss_mib_epochs", "worker USS per epoch", unit="MiB")
EPOCH_SERIES = (USS_MIB_EPOCHS, PSS_MIB_EPOCHS, WORKER_USS_MIB_EPOCHS)
SLOPE = {"unit": "MiB/epoch", "better": "lower", "fmt": "{:,.1f}"}
SLOPE_USS = metric("slope_uss_mib_per_epoch", "leak slope, tree USS", **SLOPE)
SLOPE_PSS = metric("slope_pss_mib_per_epoch", "leak slope, tree PSS", **SLOPE)
SLOPE_WORKER_USS = metric("slope_worker_uss_mib_per_epoch", "leak slope, worker USS", **SLOPE)
SLOPES = (SLOPE_USS, SLOPE_PSS, SLOPE_WORKER_USS)
MEDIAN_STEP_USS = metric("median_step_uss_mib", "leak step, tree USS", **SLOPE)
MEDIAN_STEP_PSS = metric("median_step_pss_mib", "leak step, tree PSS", **SLOPE)
MEDIAN_STEPS = (MEDIAN_STEP_USS, MEDIAN_STEP_PSS)
LEAK_THRESHOLD = setting("leak_threshold_mib_per_epoch", "leak threshold (MiB/epoch)")
LEAK_EPOCHS_FITTED = metric("leak_epochs_fitted", "epochs fitted")
LEAK_VERDICT = metric("leak_verdict", "leak verdict")
FIRST_EPOCH_THRESHOLD = setting("first_epoch_threshold_mib", "first-epoch threshold (MiB)")
FIRST_EPOCH_VERDICT = metric("first_epoch_verdict", "first-epoch verdict")
# Which series a slope was fitted to, for the leak chart's legend.
SLOPE_OF = {USS_MIB_EPOCHS: SLOPE_USS, PSS_MIB_EPOCHS: SLOPE_PSS, WORKER_USS_MIB_EPOCHS: SLOPE_WORKER_USS}

# --- machine_info keys written by the suite (not a case's record) ------------------------------------------------
PER_CORE_MACHINE_PREFIX = "per_core_images_per_s_"  # + transform: the session's median ceiling per transform
COST_LAYER_SKIPPED = "cost_layer_skipped"
# Unreadable images the run left out (the skip option, lfw.data.screen): how many, and the first few by name.
SKIPPED_IMAGES = "skipped_images"
SKIPPED_IMAGE_FILES = "skipped_image_files"
# What decides an instruction count (the software the counted pass runs, and valgrind's emulated CPU), not the
# host's CPU model: the cost layer is compared wherever these match (:mod:`lfw.gate.compare`).
COUNTED_STACK = ("valgrind", "python", "torch", "torchvision", "pillow", "jpeg_library", "simplejpeg", "numpy")

# Keys older saved runs hold that nothing writes now (their knobs are read from params: lfw.results.knobs).
RETIRED = frozenset(("gc_frozen", "map_method", "map_decoder"))

# --- top-level keys of a saved run, beside pytest-benchmark's own --------------------------------------------
SELECTION = "lfw_selection"  # what the run was asked to run and how each selected case ended (lfw.results)


def per_core_machine_key(transform: str) -> str:
    return f"{PER_CORE_MACHINE_PREFIX}{transform}"


# --- start-up cost (the startup group): the dataset object each worker receives --------------------------------
# len(pickle.dumps(dataset)): what spawn/forkserver send each worker
PICKLED_DATASET_BYTES = metric("pickled_dataset_bytes", "pickled dataset", unit="B", better="lower", fmt="{:,.0f}")

# --- a watched training loop (lfw.diagnose.watch): the wait for data beside the user's own step ---------------
DATA_BOUND_SHARE = metric("data_bound_share", "time in next()", better="lower")  # over the loop's wall time
# its 95% interval (batch means over blocks of consecutive steps)
DATA_BOUND_LOW = metric("data_bound_low", "time in next(), low")
DATA_BOUND_HIGH = metric("data_bound_high", "time in next(), high")
STEP_P50_MS = metric("step_p50_ms", "the user's step, p50", unit="ms")  # the loop body per step, median
# a batch's load time inside the worker that loaded it, mean
LOAD_MS_PER_BATCH = metric("load_ms_per_batch", "load per batch", unit="ms", better="lower")
# from "loaded and asked for" to "the loop has it", median
HANDOVER_MS = metric("handover_ms", "handover", unit="ms", better="lower")
WATCH_CLOCK = machine("watch_clock", "clock of the watch")  # host clock, CUDA events or CUDA synchronize
# the watcher's own bookkeeping per step
WATCH_OVERHEAD_US = metric("watch_overhead_us_per_step", "watch overhead per step", unit="us", better="lower")

# --- the loaders users switch to (the peers group, lfw.peers): reference rows beside DataLoader ------------------
PEER = "peer"  # the other project's loader ("dataloader" for the references it runs beside)
# what its parallelism counts: "threads" of this process or worker "processes"
PEER_KNOB = setting("peer_knob", "what the peer's parallelism counts")
PARALLELISM = setting("parallelism", "parallelism")  # the knob's value, counted against the usable cores
# "chw", or "hwc-view": a (B, 3, H, W) view of channels-last memory
PEER_LAYOUT = setting("peer_layout", "batch layout")
# the decoder its share is taken against (None where it cannot run alone)
PEER_DECODER = setting("peer_decoder", "decoder of the share")
# images compared, largest differences from the reference decoder, the tolerance
PIXEL_CHECK = metric("pixel_check", "pixel check")
# the one-off conversion to its format: seconds, bytes on disk (None: reads the files)
CONVERSION = metric("conversion", "conversion")
# the cold first epoch (the rotation's warm-up round), apart from the rest
COLD_IMAGES_PER_S = metric("cold_images_per_s", "cold images/s", unit="img/s", better="higher", fmt="{:,.0f}")
COLD_TTFB_S = metric("cold_ttfb_s", "cold time to first batch", unit="s", better="lower")
COLD_CPU_MS_PER_IMAGE = metric("cold_cpu_ms_per_image", "cold CPU per image", unit="ms", better="lower")
# Memory measured alone after the rotation (a cold and a warm epoch): the tree at the end of the warm epoch, and
# what the loader added since before its cold epoch (MiB).
PEER_PSS_MIB = metric("alone_pss_mib", "tree PSS alone", unit="MiB", better="lower", fmt="{:,.1f}")
PEER_USS_MIB = metric("alone_uss_mib", "tree USS alone", unit="MiB", better="lower", fmt="{:,.1f}")
PEER_PSS_ADDED_MIB = metric("alone_pss_added_mib", "tree PSS added alone", unit="MiB", better="lower",
                            fmt="{:,.1f}")
PEER_USS_ADDED_MIB = metric("alone_uss_added_mib", "tree USS added alone", unit="MiB", better="lower",
                            fmt="{:,.1f}")
# why the memory alone was not measured (one line; the rotation's figures stand)
MEMORY_ALONE_ERROR = metric("alone_error", "why no memory alone")
