"""The ``extra_info`` schema: every key a case records, a plain string declared once in :data:`FACTS`
(:func:`metric`, :func:`setting`, :func:`machine`); :class:`~lfw.results.record.CaseRecord` refuses an undeclared
key, and readers use the same names (docs/methodology.md). Renaming a key breaks comparison with older baselines."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

Tree = Literal["rss", "pss", "uss"]
Point = Literal["before", "start", "end", "peak", "growth"]
Section = Literal["knobs", "metrics", "machine"]
TREE_METRICS: tuple[Tree, ...] = ("rss", "pss", "uss")
DEFAULT_DIGITS = 6


@dataclass(frozen=True)
class Key:
    """One key of the record: ``section`` (where :class:`~lfw.results.record.CaseRecord` keeps it), ``label``,
    ``unit`` (of the saved value), ``digits`` (decimal places a summarized value keeps), ``better`` (None where
    neither way is), and ``fmt``, the format of ``value x scale`` in ``shown`` units (``unit`` where empty)."""

    key: str
    section: Section
    label: str = ""
    unit: str = ""
    digits: int = DEFAULT_DIGITS
    better: Literal["higher", "lower"] | None = None
    fmt: str = "{:.3f}"
    scale: float = 1.0
    shown: str = ""

    def cell(self, value: float) -> str:
        """The value as a table cell whose column names the unit."""
        return self.fmt.format(value * self.scale)

    def format(self, value: float) -> str:
        """The value with its unit: ``12.3 MiB``, ``123.4 ms``."""
        return f"{self.cell(value)} {unit}" if (unit := self.shown or self.unit) else self.cell(value)


FACTS: dict[str, Key] = {}


def declare(section: Section, key: str, label: str = "", **given: object) -> str:
    """Enter ``key`` of ``section`` in :data:`FACTS` (once: a second declaration is a mistake) and return it."""
    if key in FACTS:
        raise ValueError(f"record key {key!r} is declared twice")
    FACTS[key] = Key(key, section, label, **given)  # type: ignore[arg-type]
    return key


metric = partial(declare, "metrics")  # a measured figure (or a fact derived from the measurements)
setting = partial(declare, "knobs")  # a description of the case saved in its record (the knobs: lfw.results.knobs)
machine = partial(declare, "machine")  # what the case ran on and how


def facts(key: str) -> Key | None:
    """The facts of ``key``, of its metric for a per-round list or a CV; None for a key not declared."""
    return FACTS.get(key) or FACTS.get(key.removesuffix("_rounds")) or FACTS.get(key.removesuffix("_cv"))


def rounds(key: str) -> str:
    """The key of the per-round list beside a summary value."""
    return f"{key}_rounds"


def tree(metric: Tree, point: Point) -> str:
    """Process-tree memory in MiB: ``pss_growth_mib``, ``uss_end_mib``, ``rss_peak_mib`` ..."""
    return f"{metric}_{point}_mib"


# --- the record itself (lfw.results.record) ----------------------------------------------------------------
SCHEMA_VERSION = "schema_version"  # the record's layout version (an int); a case without one is version 0
MIB = {"unit": "MiB", "digits": 4, "fmt": "{:,.1f}"}  # the memory figures of a pass, summarized over rounds
SHARE = {"digits": 4, "better": "higher"}  # a rate over a ceiling of the same round
RATE = {"unit": "img/s", "digits": 2, "fmt": "{:,.0f}"}  # images/s, summarized over rounds

# --- one pass, summarized over rounds (lfw.suite.case_record) --------------------------------------------------
ROUNDS = metric("rounds", "rounds")
IMAGES = metric("images", "images per pass")
BATCHES = metric("batches", "batches per pass")
IMAGES_PER_S = metric("images_per_s", "images/s", **RATE, better="higher")
IMAGES_PER_S_CV = metric("images_per_s_cv", "CV of images/s", digits=4, better="lower", fmt="{:.1%}")
WALL_S = metric("wall_s", "wall time of a pass", unit="s", better="lower")
TTFB_S = metric("ttfb_s", "time to first batch", unit="s", better="lower", fmt="{:,.1f}", scale=1e3, shown="ms")
# Derived by the gate (lfw.gate.metrics.ttfb_in_core_images), never saved: the first batch in the machine's units.
TTFB_CORE_IMAGES = metric("ttfb_core_images", "time to first batch x the single-core rate", unit="images",
                          better="lower", fmt="{:,.0f}")
STEADY_IMAGES_PER_S = metric("steady_images_per_s", "steady images/s", **RATE, better="higher")  # or STEADY_ABSENT
STEADY_BATCHES = metric("steady_batches", "fewest batches after the start-up wave a round's steady rate rests on")
STEADY_ABSENT = metric("steady_absent", "why no steady rate")  # too few batches after the start-up wave
STEADY_INVALID = metric("steady_invalid", "why no steady rate is shown")  # above a ceiling it cannot exceed
WAIT_P50_MS, WAIT_P95_MS, WAIT_P99_MS = (metric(f"wait_{p}_ms", f"wait for a batch, {p}", unit="ms", better="lower")
                                         for p in ("p50", "p95", "p99"))
DATA_WAIT_FRACTION = metric("data_wait_fraction", "data-wait fraction", digits=4, better="lower")
# Derived by the gate (lfw.gate.metrics.data_wait_excess), never saved: over what the round's own rates predict.
DATA_WAIT_EXCESS = metric("data_wait_excess", "data-wait over what the machine's rates predict", digits=4,
                          better="lower")
WORKERS = setting("workers", "worker processes (older records)")
USABLE_CORES = machine("usable_cores", "usable cores")
PER_CORE_IMAGES_PER_S = metric("per_core_images_per_s", "single-core ceiling", **RATE)
CEILING_IMAGES_PER_S = metric("ceiling_images_per_s", "ceiling", **RATE)
EFFICIENCY = metric("efficiency", "efficiency", **SHARE, fmt="{:.1%}")
PARALLEL_CAPACITY = machine("parallel_capacity",
                            "cores the machine gave: each thread's rate together over its own alone", digits=3)
CAPACITY_PROBE = machine("capacity_probe", "how the parallel capacity was measured")  # probes differ: not comparable
# The same at N = the physical cores, where a core runs two threads or more: what the second thread adds.
PHYSICAL_CAPACITY = machine("physical_capacity", "cores the machine gave at N = its physical cores", digits=3)

# --- the machine's CPUs (lfw.measure.cpus), read once per run: in machine_info, and the usable cores per case --------
LOGICAL_CPUS = machine("logical_cpus", "logical CPUs")
AFFINITY_CPUS = machine("affinity_cpus", "CPUs of the affinity set")  # the kernel's list form, 0-3,8
CPU_QUOTA = machine("cpu_quota", "cgroup CPU quota, cores")  # None: no quota set (or none readable)
CPU_QUOTA_SOURCE = machine("cpu_quota_source", "where the quota was read")
PHYSICAL_CORES = machine("physical_cores", "physical cores of the affinity set")
THREADS_PER_CORE = machine("threads_per_core", "threads per core")
NUMA_NODES = machine("numa_nodes", "NUMA nodes")
CPU_GOVERNOR = machine("cpu_governor", "frequency governor")
CPU_LIMIT = machine("cpu_limit", "why the usable cores differ from the logical CPUs")  # None where they do not
CPU_FALLBACKS = machine("cpu_fallbacks", "CPU facts that could not be read, and what was assumed")

# --- CPU of one pass (lfw.measure.loader_pass.PassResult): where the cores went ----------------------------------
CPU_UTILIZATION = metric("cpu_utilization", "tree CPU seconds over wall seconds x usable cores", digits=4)
CPU_MS_PER_IMAGE = metric("cpu_ms_per_image", "CPU per image", unit="ms", digits=4, better="lower")
MAIN_CPU_SHARE = metric("main_cpu_share", "main process's share of the CPU", digits=4)
H2D_MS_PER_BATCH = metric("h2d_ms_per_batch", "a batch's host-to-device copy (CUDA events), mean", unit="ms")

# --- what the live loader did with its knobs (lfw.measure.loader_pass.PassResult), read back from its iterator --
# The last round's (lfw.suite.case_record.loader_facts); a fact with nothing to read (no workers) is absent.
WORKERS_SEEN = metric("workers_seen", "worker processes serving the pass")  # 0: the main process loads
WORKER_START_METHOD = metric("worker_start_method", "how the workers started")  # fork, spawn or forkserver
PREFETCHED_BATCHES = metric("prefetched_batches", "batches iter() asked for")  # prefetch x workers, or the epoch's
PREFETCH_FACTOR_SEEN = metric("prefetch_factor_seen", "the live iterator's prefetch factor")
WORKER_PIDS = metric("worker_pids", "worker process ids per round")  # in worker order; absent without workers
# Counted in the loading processes (lfw.measure.stages), per round; a name that counted nothing is absent.
DECODED_IMAGES = metric("decoded_images", "images each decoder decoded under its own name (decode pipelines)")
INDEX_SEEN = metric("index_seen", "batches collated from each kind of file index the dataset held (index group)")
BATCH_PINNED = metric("batch_pinned", "first batch pinned")  # None: not read (no accelerator, or no pin_memory)
STEP_MS_PER_BATCH = metric("step_ms_per_batch", "training step per batch, a round's mean", unit="ms", digits=3)

# --- memory of one pass (lfw.measure.loader_pass.MemoryStats) ------------------------------------------------
TREE_KEYS = tuple(metric(tree(m, p), f"tree {m.upper()} {p}", **MIB, better="lower")
                  for m in TREE_METRICS for p in ("before", "start", "end", "peak") if (m, p) != ("pss", "peak"))
PSS_PEAK_MIB = metric(tree("pss", "peak"), "tree PSS peak in pass", **MIB, better="lower")
PSS_GROWTH_MIB = metric(tree("pss", "growth"), "tree PSS growth", **(MIB | {"fmt": "{:+,.1f}"}), better="lower")
USS_GROWTH_MIB, RSS_GROWTH_MIB = (metric(tree(m, "growth"), f"tree {m.upper()} growth", **MIB, better="lower")
                                  for m in ("uss", "rss"))
PSS_END_MIB = tree("pss", "end")
WORKER_USS_START_MIB = metric("worker_uss_start_mib", "worker USS at the start", **MIB, better="lower")
WORKER_USS_END_MIB = metric("worker_uss_end_mib", "worker USS", **MIB, better="lower")
WORKER_USS_GROWTH_MIB = metric("worker_uss_growth_mib", "worker USS growth", **MIB, better="lower")
WORKER_USS_MAX_GROWTH_MIB = metric("worker_uss_max_growth_mib", "largest worker USS growth", **MIB, better="lower")
MEMORY_SAMPLES = metric("memory_samples", "memory samples", digits=4)
MEMORY_START_MARKS = metric("memory_start_marks", "start marks the sampler took", digits=4)  # 1 where asked, else 0
SAMPLER_CPU_S = metric("sampler_cpu_s", "memory sampler's CPU", unit="s", digits=4)
SAMPLER_CPU_FRACTION = metric("sampler_cpu_fraction", "memory sampler's share of the CPU")
TIMELINE = metric("timeline", "memory timeline")
# What the pass adds over before it, apart from its host process (docs/gating.md, "2. Memory"); /dev/shm: machine-wide.
PSS_PEAK_ADDED_MIB = metric("pss_peak_added_mib", "tree PSS peak added by the pass", **MIB, better="lower")
SHM_PEAK_ADDED_MIB = metric("shm_peak_added_mib", "/dev/shm peak added by the pass", **MIB, better="lower")
# The host: the main process alone before the pass (its imports, its libraries, the dataset it built).
HOST_PSS_BEFORE_MIB, HOST_USS_BEFORE_MIB = (metric(f"host_{m}_before_mib", f"host process {m.upper()} before the pass",
                                                   **MIB, better="lower") for m in ("pss", "uss"))
PEAK_KEYS = tuple(tree(m, "peak") for m in TREE_METRICS)  # summarized by the largest round, not the median
# Summarized with their per-round lists kept (the gate and the error bars need them).
GROWTH_KEYS = (*(tree(m, "growth") for m in TREE_METRICS), WORKER_USS_GROWTH_MIB, WORKER_USS_MAX_GROWTH_MIB,
               PSS_PEAK_ADDED_MIB, SHM_PEAK_ADDED_MIB)

# --- the case itself (benchmark fixtures); the knobs' facts are lfw.results.knobs' -----------------------------
CACHE_MODE = setting("cache_mode", "page cache mode")
PROFILE = setting("profile", "bench profile")
CONFIG = setting("config", "the loader's configuration")
DEVICE = machine("device", "device the batches went to")
ROTATION = machine("rotation", "the group's rotation")
ROTATION_POSITIONS = machine("rotation_positions", "the case's positions in the rotation")
WORKER_SHUTDOWN_ERRORS = machine("worker_shutdown_errors", "workers that died on their way out")

# --- decode pipelines (the decoders group): the pipeline and its two machine ceilings ------------------------
STORAGE = setting("storage", "storage of the images")
THREADS = setting("threads", "decode threads")
OUTPUT = setting("output", "output of the pipeline")
OUTPUT_SIZE = setting("output_size", "pixels per side")  # after the resize; None: as stored
BATCHING = setting("batching", "batching")  # "items" (collated by the DataLoader) or "slots" (reusable shared slots)
# Machine ceilings of the same rotation, x usable cores: the PIL path's single-core rate and the uint8 memmap's.
PIL_CEILING_IMAGES_PER_S, MEMMAP_CEILING_IMAGES_PER_S = (metric(f"{n.lower()}_ceiling_images_per_s", f"{n} ceiling",
                                                                **RATE) for n in ("PIL", "memmap"))
PIL_CEILING_SHARE, MEMMAP_CEILING_SHARE = (metric(f"{n.lower()}_ceiling_share", f"share of the {n} ceiling", **SHARE)
                                           for n in ("PIL", "memmap"))
# Where a decode pipeline's CPU goes, timed inside the workers and the main process (lfw.measure.stages).
STAGE_MS_PER_IMAGE = metric("stage_ms_per_image", "CPU per image by stage (ms)")
STAGE_COVERAGE = metric("stage_coverage", "sum of the timed stages / cpu_ms_per_image", digits=4)
STAGE_GAP_MS_PER_IMAGE = metric("stage_gap_ms_per_image", "CPU per image no stage claimed")  # {"workers", "main"}
# A pipeline's rate over usable cores x its own decoder's single-core rate (its ``ceiling-decode-*`` member).
OWN_DECODER_IMAGES_PER_S = metric("own_decoder_images_per_s", "usable cores x own decoder's single-core rate", **RATE)
OWN_DECODER_PER_CORE = metric("own_decoder_per_core_images_per_s", "own decoder's single-core rate", **RATE)
OWN_DECODER_SHARE = metric("own_decoder_share", "share of the own decoder's ceiling", **SHARE)
OWN_DECODER = setting("own_decoder", "the ceiling member the share is taken against")

# --- remote storage (the remote group): the case, the traffic through the proxy, the endpoint's ceiling -------
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
FIRST_BYTE_P50_MS, FIRST_BYTE_P99_MS = (metric(f"first_byte_{p}_ms", f"first byte, {p}", unit="ms", better="lower")
                                        for p in ("p50", "p99"))
LITTLES_LAW_IMAGES_PER_S = metric("littles_law_images_per_s", "in-flight limit / request time / requests", **RATE)
ENDPOINT_CEILING_IMAGES_PER_S = metric("endpoint_ceiling_images_per_s", "endpoint ceiling", **RATE)  # zero-latency
ENDPOINT_CEILING_SHARE = metric("endpoint_ceiling_share", "share of the endpoint ceiling", better="higher")
STEADY_CEILING_SHARE = metric("steady_endpoint_ceiling_share", "steady rate / its endpoint ceiling", better="higher")
# Little's law: (mean requests in flight while any was) / (mean request time) / (requests per image).
BUSY_MEAN_IN_FLIGHT = metric("busy_mean_in_flight", "mean requests in flight from first request to last reply")
LITTLES_LAW_RATE = metric("littles_law_rate_images_per_s", "Little's law rate", **RATE)
LITTLES_LAW_ERROR = metric("littles_law_error", "steady rate over Little's law, less 1")
REMOTE_LIMIT = metric("remote_limit", "in-flight limit, pool, endpoint ceiling, client CPU, or idle request slots")
ENDPOINT_CPU_UTILIZATION = metric("endpoint_cpu_utilization", "endpoint's and proxy's CPU over wall x usable cores")
# Share of min(endpoint ceiling, in-flight limit / injected latency): what the gate judges for a remote case.
REMOTE_BOUND_SHARE = metric("remote_bound_share", "share of the remote bound", better="higher")
NEAR_ENDPOINT_CEILING = metric("near_endpoint_ceiling", "share >= 0.8: the endpoint, not the strategy, limits")

# --- a distributed run (lfw.distributed): one case per rank and one for the total ----------------------------
BACKEND = setting("backend", "collective backend")
STRAGGLER_RATIO = metric("straggler_ratio", "slowest rank's load time over the fastest's", digits=4, better="lower")
STRAGGLER_RANK = metric("straggler_rank", "slowest rank")
COVERAGE_OK = metric("coverage_ok", "every image once")
FINDINGS = metric("findings", "findings")
COLLECTIVE_WAIT_S = metric("collective_wait_s", "wait at the all-reduce", unit="s", better="lower")  # per epoch
LOAD_S = metric("load_s", "load time", unit="s", better="lower")  # per epoch: wall time minus that wait

# --- one side of a pass-interleaved A/B run (lfw.gate.ab): where each pass sat in the schedule -------------------
# The process pair (1, 2, ...), the slot in its quad, the quad ("ABBA" or "BAAB"), the side
AB_PAIR, AB_SLOT, AB_QUAD, AB_SIDE = (metric(f"ab_{n}", f"A/B {n}") for n in ("pair", "slot", "quad", "side"))

# --- the cost layer (the "cost" group: instructions per image under valgrind) ---------------------------------
COUNT = {"better": "lower", "fmt": "{:,.1f}"}  # counted per image, deterministic
INSTRUCTIONS = metric("instructions", "instructions", better="lower", fmt="{:,.0f}")
INSTRUCTIONS_PER_IMAGE = metric("instructions_per_image", "instructions/image", better="lower", fmt="{:,.3f}",
                                scale=1e-6, shown="M")
IMAGES_COUNTED = metric("images_counted", "images counted")
VALGRIND = machine("valgrind", "valgrind version")
NATIVE_INSTRUCTIONS_PER_S = metric("native_instructions_per_s", "native instructions/s", better="higher", fmt="{:,.0f}")

# --- the copy-on-access experiment (the "memory-index" group) ----------------------------------------------------
INDEX_SIZE = setting("index_size", "index entries")  # entries of the replicated path index
INDEX_MIB = metric("index_mib", "index size", unit="MiB", fmt="{:,.1f}")  # its size in the process that built it
LIST_OVER_NUMPY = metric("list_over_numpy_worker_uss_growth", "the list case's worker growth over the numpy case's")

# --- what a pipeline moves per image, counted deterministically (lfw.measure.moves) --------------------------
FILES_OPENED_PER_IMAGE = metric("files_opened_per_image", "files opened/image", **COUNT)
READ_CALLS_PER_IMAGE = metric("read_calls_per_image", "read calls/image", **COUNT)
BYTES_READ_PER_IMAGE = metric("bytes_read_per_image", "bytes read/image", **COUNT)
BATCH_BYTES_PER_IMAGE = metric("batch_bytes_per_image", "batch bytes/image", **COUNT)
MOVES = (FILES_OPENED_PER_IMAGE, READ_CALLS_PER_IMAGE, BYTES_READ_PER_IMAGE, BATCH_BYTES_PER_IMAGE)

# --- a case that demonstrates a check: True, it must be flagged by its own check (the gate does not compare it) ---
POSITIVE_CONTROL = setting("positive_control", "positive control")

# --- leak checks (lfw.measure.leak) ---------------------------------------------------------------------------
EPOCHS = setting("epochs", "epochs")
USS_MIB_EPOCHS, PSS_MIB_EPOCHS, WORKER_USS_MIB_EPOCHS = (metric(f"{m}_mib_epochs", f"{m} per epoch", unit="MiB")
                                                        for m in ("uss", "pss", "worker_uss"))
EPOCH_SERIES = (USS_MIB_EPOCHS, PSS_MIB_EPOCHS, WORKER_USS_MIB_EPOCHS)
SLOPE = {"unit": "MiB/epoch", "better": "lower", "fmt": "{:,.1f}"}
SLOPE_USS, SLOPE_PSS, SLOPE_WORKER_USS = (metric(f"slope_{m}_mib_per_epoch", f"leak slope, {m}", **SLOPE)
                                          for m in ("uss", "pss", "worker_uss"))
SLOPES = (SLOPE_USS, SLOPE_PSS, SLOPE_WORKER_USS)
MEDIAN_STEP_USS, MEDIAN_STEP_PSS = (metric(f"median_step_{m}_mib", f"leak step, tree {m.upper()}", **SLOPE)
                                    for m in ("uss", "pss"))
MEDIAN_STEPS = (MEDIAN_STEP_USS, MEDIAN_STEP_PSS)
LEAK_THRESHOLD = setting("leak_threshold_mib_per_epoch", "leak threshold (MiB/epoch)")
LEAK_EPOCHS_FITTED = metric("leak_epochs_fitted", "epochs fitted")
LEAK_VERDICT = metric("leak_verdict", "leak verdict")
FIRST_EPOCH_THRESHOLD = setting("first_epoch_threshold_mib", "first-epoch threshold (MiB)")
FIRST_EPOCH_VERDICT = metric("first_epoch_verdict", "first-epoch verdict")
SLOPE_OF = {USS_MIB_EPOCHS: SLOPE_USS, PSS_MIB_EPOCHS: SLOPE_PSS, WORKER_USS_MIB_EPOCHS: SLOPE_WORKER_USS}

# --- machine_info keys written by the suite (not a case's record) ------------------------------------------------
PER_CORE_MACHINE_PREFIX = "per_core_images_per_s_"  # + transform: the session's median ceiling per transform
COST_LAYER_SKIPPED = "cost_layer_skipped"
SKIPPED_IMAGES = "skipped_images"  # unreadable images the run left out (lfw.data.screen): how many
SKIPPED_IMAGE_FILES = "skipped_image_files"  # and the first few by name
# What decides an instruction count, not the host's CPU model: the cost layer is compared where these match.
COUNTED_STACK = ("valgrind", "python", "torch", "torchvision", "pillow", "jpeg_library", "simplejpeg", "numpy")
# Runs that differ in one of these ran on different machines: wall-clock figures other than efficiency do not port.
MACHINE_IDENTITY = ("runner_class", "cpu_model", USABLE_CORES)
# What changes the numbers: the gate names each that differs between two runs (lfw.gate.compare).
MACHINE_COMPARED = (*MACHINE_IDENTITY, "torch", "pillow", "jpeg_library", "dataset_kind", "dataset_files",
                    "bench_profile", CACHE_MODE, VALGRIND, CAPACITY_PROBE)

# Keys older saved runs hold that nothing writes now (their knobs are read from params: lfw.results.knobs).
RETIRED = frozenset(("gc_frozen", "map_method", "map_decoder"))

SELECTION = "lfw_selection"  # a saved run's top-level key: what it was asked to run, how each case ended (lfw.results)


def per_core_machine_key(transform: str) -> str:
    return f"{PER_CORE_MACHINE_PREFIX}{transform}"


# --- start-up cost (the startup group): len(pickle.dumps(dataset)), what spawn/forkserver send each worker -------
PICKLED_DATASET_BYTES = metric("pickled_dataset_bytes", "pickled dataset", unit="B", better="lower", fmt="{:,.0f}")

# --- a watched training loop (lfw.diagnose.watch): the wait for data beside the user's own step ---------------
DATA_BOUND_SHARE = metric("data_bound_share", "time in next()", better="lower")  # over the loop's wall time
DATA_BOUND_LOW, DATA_BOUND_HIGH = (metric(f"data_bound_{e}", f"time in next(), {e} end of its 95% interval")
                                   for e in ("low", "high"))  # batch means over blocks of consecutive steps
STEP_P50_MS = metric("step_p50_ms", "the user's step, p50", unit="ms")  # the loop body per step, median
LOAD_MS_PER_BATCH = metric("load_ms_per_batch", "a batch's load in its worker, mean", unit="ms", better="lower")
HANDOVER_MS = metric("handover_ms", "loaded and asked for to the loop has it, median", unit="ms", better="lower")
WATCH_CLOCK = machine("watch_clock", "clock of the watch")  # host clock, CUDA events or CUDA synchronize
WATCH_OVERHEAD_US = metric("watch_overhead_us_per_step", "watcher's bookkeeping per step", unit="us", better="lower")

# --- the loaders users switch to (the peers group, lfw.peers): reference rows beside DataLoader ------------------
PEER_KNOB = setting("peer_knob", "what the peer's parallelism counts")  # "threads" of this process or "processes"
PARALLELISM = setting("parallelism", "parallelism")  # the knob's value, counted against the usable cores
PEER_LAYOUT = setting("peer_layout", "batch layout")  # "chw", or "hwc-view": a (B, 3, H, W) view of channels-last
PEER_DECODER = setting("peer_decoder", "decoder of the share")  # None where it cannot run alone
PIXEL_CHECK = metric("pixel_check", "images compared, largest differences from the reference decoder, tolerance")
CONVERSION = metric("conversion", "the one-off conversion to its format: seconds, bytes (None: reads the files)")
COLD_IMAGES_PER_S = metric("cold_images_per_s", "images/s of the cold first epoch", **RATE, better="higher")
COLD_TTFB_S = metric("cold_ttfb_s", "cold time to first batch", unit="s", better="lower")
COLD_CPU_MS_PER_IMAGE = metric("cold_cpu_ms_per_image", "cold CPU per image", unit="ms", better="lower")
# Memory alone after the rotation: the tree after a warm epoch, and what the loader added since before a cold one.
PEER_PSS_MIB, PEER_USS_MIB, PEER_PSS_ADDED_MIB, PEER_USS_ADDED_MIB = (
    metric(f"alone_{m}{a}_mib", f"tree {m.upper()}{a.replace('_', ' ')} alone", **MIB, better="lower")
    for a in ("", "_added") for m in ("pss", "uss"))
MEMORY_ALONE_ERROR = metric("alone_error", "why the memory alone was not measured")  # the rotation's figures stand

# --- the device layer (docs/device.md): host-to-device copies, the GPU decode, a GPU step fed by a pipeline --------
MEASURED_ON = machine("measured_on", "where a GPU member ran")  # "cuda", or "cpu stand-in" without a CUDA device
COPY_BYTES = setting("copy_bytes", "bytes of one copy", unit="B", fmt="{:,.0f}")
COPY_PINNED = setting("copy_pinned", "copied from pinned memory")
GB_S = {"unit": "GB/s", "digits": 3, "fmt": "{:,.1f}"}  # 10^9 bytes per second, on the device's clock
H2D_GB_S = metric("h2d_gb_s", "host-to-device copy rate (CUDA events)", **GB_S, better="higher")
H2D_PEAK_GB_S = metric("h2d_peak_gb_s", "measured copy peak: the best pinned 256 MiB copy of the run", **GB_S)
H2D_SHARE_OF_PEAK = metric("h2d_share_of_peak", "copy rate over the measured peak", **SHARE)
STEP_MS_TARGET = setting("step_ms_target", "GPU step asked for", unit="ms")
MATMULS_PER_STEP = setting("matmuls_per_step", "bf16 products per step, calibrated")
MATMUL_SIZE = setting("matmul_size", "side of the step's square matrices")
MS_PER_MATMUL = metric("ms_per_matmul", "one product, calibrated (median of 10)", unit="ms", digits=4)
STEP_OUTPUT_FINITE = metric("step_output_finite", "the step's products stayed finite")
AU_MEASURED = metric("au_measured", "accelerator utilization, measured", **SHARE)
AU_PREDICTED = metric("au_predicted", "accelerator utilization the simulator predicts from the same pass", **SHARE)
BATCHES_PER_S = metric("batches_per_s", "batches/s of the fed step, measured", digits=3)
BATCHES_PER_S_PREDICTED = metric("batches_per_s_predicted", "batches/s the model predicts", digits=3)
PREDICTION_ERROR = metric("prediction_error", "measured over predicted batches/s, minus 1", digits=4)
BOTTLENECK = metric("bottleneck", "what limits the fed step (lfw.diagnose)")
RECOMMENDATION = metric("recommendation", "what to change first (lfw.diagnose)")
