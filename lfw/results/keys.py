"""The ``extra_info`` schema: every key a benchmark case records, owned here, imported by writers and readers.

A key that a writer builds from a suffix and a reader finds by a regex is a contract nobody holds; here the
writers (every one builds its record as a :class:`lfw.results.record.CaseRecord`: :mod:`lfw.suite.record`,
:mod:`lfw.distributed.record`, the benchmark fixtures, from figures of :mod:`lfw.measure.loader_pass` and
:mod:`lfw.measure.leak`) and the readers (the gate, the report) import the same names. Keys are plain strings, the names
pytest-benchmark saves; renaming one here renames it everywhere (and breaks comparison with older baselines,
which is why the strings themselves do not change lightly).

Per-round values live beside each summary value under :func:`rounds` (``images_per_s`` and
``images_per_s_rounds``).
"""

from __future__ import annotations

from typing import Literal

Tree = Literal["rss", "pss", "uss"]
Point = Literal["before", "start", "end", "peak", "growth"]
TREE_METRICS: tuple[Tree, ...] = ("rss", "pss", "uss")


def rounds(key: str) -> str:
    """The key of the per-round list beside a summary value."""
    return f"{key}_rounds"


def tree(metric: Tree, point: Point) -> str:
    """Process-tree memory in MiB: ``pss_growth_mib``, ``uss_end_mib``, ``rss_peak_mib`` ..."""
    return f"{metric}_{point}_mib"


# --- the record itself (lfw.results.record) ----------------------------------------------------------------
# The version of the record's layout a case was saved with (an int); a case without it is version 0.
SCHEMA_VERSION = "schema_version"

# --- one pass, summarized over rounds (lfw.suite.record) --------------------------------------------------
ROUNDS = "rounds"
IMAGES = "images"
BATCHES = "batches"
IMAGES_PER_S = "images_per_s"
IMAGES_PER_S_CV = "images_per_s_cv"
WALL_S = "wall_s"
TTFB_S = "ttfb_s"
STEADY_IMAGES_PER_S = "steady_images_per_s"  # absent where no round has a steady state (STEADY_ABSENT says why)
STEADY_BATCHES = "steady_batches"  # batches after the start-up wave each round's steady rate rests on (fewest)
STEADY_ABSENT = "steady_absent"  # why a case has no steady rate (too few batches after the start-up wave)
STEADY_INVALID = "steady_invalid"  # why a measured steady rate is not shown: above a ceiling it cannot exceed
WAIT_P50_MS, WAIT_P95_MS, WAIT_P99_MS = "wait_p50_ms", "wait_p95_ms", "wait_p99_ms"
DATA_WAIT_FRACTION = "data_wait_fraction"
WORKERS = "workers"
USABLE_CORES = "usable_cores"
PER_CORE_IMAGES_PER_S = "per_core_images_per_s"
CEILING_IMAGES_PER_S = "ceiling_images_per_s"
EFFICIENCY = "efficiency"
# Cores the machine gave in the round (lfw.measure.ceiling): N x t_1 / t_N of a fixed workload, at most about N.
PARALLEL_CAPACITY = "parallel_capacity"

# --- CPU of one pass (lfw.measure.loader_pass.PassResult): where the cores went ----------------------------------
CPU_UTILIZATION = "cpu_utilization"  # tree CPU seconds over wall seconds x usable cores
CPU_MS_PER_IMAGE = "cpu_ms_per_image"  # tree CPU milliseconds per image
MAIN_CPU_SHARE = "main_cpu_share"  # the main process's share of the tree's CPU
# Device time of one batch's host-to-device copy (CUDA events around it), mean over the pass's batches.
H2D_MS_PER_BATCH = "h2d_ms_per_batch"

# --- what the live loader did with its knobs (lfw.measure.loader_pass.PassResult), read back from its iterator --
# The last round's (lfw.suite.record.loader_facts), so a knob the DataLoader was built without shows here whatever
# the case's config says; a fact with nothing to read (no worker processes) is absent.
WORKERS_SEEN = "workers_seen"  # worker processes serving the pass (0: the main process loads)
WORKER_START_METHOD = "worker_start_method"  # how they were started: fork, spawn or forkserver
PREFETCHED_BATCHES = "prefetched_batches"  # batches iter() asked the workers for: prefetch_factor x workers, or
# the epoch's batches where it has fewer
PREFETCH_FACTOR_SEEN = "prefetch_factor_seen"  # the live iterator's own prefetch factor
# Every round's worker process ids, in worker order, read from the live iterator after its last batch: the same ids
# in every round where the workers persist, new ones each round where they do not (absent without workers).
WORKER_PIDS = "worker_pids"
# Counted inside the loading processes (lfw.measure.stages counts), one list entry per round: the images each
# decoder decoded under its own name (decode pipelines), and the batches collated from each kind of file index the
# dataset held there (index group); a decoder or index kind that counted nothing is absent.
DECODED_IMAGES = "decoded_images"
INDEX_SEEN = "index_seen"
BATCH_PINNED = "batch_pinned"  # first batch in pinned memory; None where not read (no accelerator, or no pin_memory)
STEP_MS_PER_BATCH = "step_ms_per_batch"  # measured time in the training step per batch, mean of a round (ms)

# --- memory of one pass (lfw.measure.loader_pass.MemoryStats) ------------------------------------------------
PSS_GROWTH_MIB = tree("pss", "growth")
PSS_PEAK_MIB = tree("pss", "peak")
USS_GROWTH_MIB = tree("uss", "growth")
RSS_GROWTH_MIB = tree("rss", "growth")
PSS_END_MIB = tree("pss", "end")
USS_END_MIB = tree("uss", "end")
WORKER_USS_START_MIB = "worker_uss_start_mib"
WORKER_USS_END_MIB = "worker_uss_end_mib"
WORKER_USS_GROWTH_MIB = "worker_uss_growth_mib"
WORKER_USS_MAX_GROWTH_MIB = "worker_uss_max_growth_mib"
MEMORY_SAMPLES = "memory_samples"
MEMORY_START_MARKS = "memory_start_marks"  # start marks the sampler took: 1 where the pass asked for one, else 0
SAMPLER_CPU_S = "sampler_cpu_s"
SAMPLER_CPU_FRACTION = "sampler_cpu_fraction"
TIMELINE = "timeline"
# What the pass adds, apart from the host process it runs in (docs/gating.md, "Memory"): the tree's PSS peak over the
# tree before the pass, and the /dev/shm the pass used at its peak over the /dev/shm used before it (the batches in
# flight between the workers and the main process; machine-wide, so read where nothing else runs).
PSS_PEAK_ADDED_MIB = "pss_peak_added_mib"
SHM_PEAK_ADDED_MIB = "shm_peak_added_mib"
# The host: the main process alone before the pass (its imports, its libraries, the dataset it built).
HOST_PSS_BEFORE_MIB = "host_pss_before_mib"
HOST_USS_BEFORE_MIB = "host_uss_before_mib"
# Summarized over rounds by the largest value (a peak), not the median.
PEAK_KEYS = tuple(tree(m, "peak") for m in TREE_METRICS)
# Summarized with their per-round lists kept (the gate and the error bars need them).
GROWTH_KEYS = (*(tree(m, "growth") for m in TREE_METRICS), WORKER_USS_GROWTH_MIB, WORKER_USS_MAX_GROWTH_MIB,
               PSS_PEAK_ADDED_MIB, SHM_PEAK_ADDED_MIB)

# --- the case itself (benchmark fixtures) --------------------------------------------------------------------
TRANSFORM = "transform"
INDEX = "index"
CACHE_MODE = "cache_mode"
PROFILE = "profile"
CONFIG = "config"
DEVICE = "device"
STEP_MS = "step_ms"
ROTATION = "rotation"
ROTATION_POSITIONS = "rotation_positions"
WORKER_SHUTDOWN_ERRORS = "worker_shutdown_errors"

# --- decode pipelines (the decoders group): the pipeline and its two machine ceilings ------------------------
DECODER = "decoder"
STORAGE = "storage"
THREADS = "threads"
OUTPUT = "output"
OUTPUT_SIZE = "output_size"  # pixels per side after the resize; None: as stored
BATCHING = "batching"  # "items" (collated by the DataLoader) or "slots" (decoded into reusable shared slots)
# Machine ceilings measured in the same rotation, x usable cores: the single-core rate of the PIL path
# (decode + PILToTensor) and the decode-free rate of the uint8 memmap. A pipeline's share of the PIL ceiling may
# exceed 1 (a faster decoder); of the memmap ceiling it should not.
PIL_CEILING_IMAGES_PER_S = "pil_ceiling_images_per_s"
PIL_CEILING_SHARE = "pil_ceiling_share"
MEMMAP_CEILING_IMAGES_PER_S = "memmap_ceiling_images_per_s"
MEMMAP_CEILING_SHARE = "memmap_ceiling_share"
# Where the CPU of a decode pipeline goes: stage name -> ms of CPU per image, timed inside the workers and the
# main process (lfw.measure.stages), and how much of the measured tree CPU per image the timed stages account for.
STAGE_MS_PER_IMAGE = "stage_ms_per_image"
STAGE_COVERAGE = "stage_coverage"  # sum of the timed stages / cpu_ms_per_image, per round in rounds_stage_coverage
STAGE_GAP_MS_PER_IMAGE = "stage_gap_ms_per_image"  # {"workers": ms, "main": ms}: measured CPU no stage claimed
# A pipeline's rate over usable cores x the single-core rate of its own decoder (its ``ceiling-decode-*`` member,
# measured in the same rotation), per round; the interval is the rounds' lowest and highest share.
OWN_DECODER_IMAGES_PER_S = "own_decoder_images_per_s"  # usable cores x the decoder's single-core rate
OWN_DECODER_PER_CORE = "own_decoder_per_core_images_per_s"  # the decoder's single-core rate (median of rounds)
OWN_DECODER_SHARE = "own_decoder_share"
OWN_DECODER = "own_decoder"  # the ceiling member the share is taken against

# --- remote storage (the remote group): the case, the traffic through the proxy, the endpoint's ceiling -------
STRATEGY = "strategy"
LATENCY_MS = "latency_ms"  # injected first-byte delay
CONCURRENCY = "concurrency"  # requests in flight per loading process
IN_FLIGHT_LIMIT = "in_flight_limit"  # loading processes x concurrency
REQUESTS_PER_IMAGE = "requests_per_image"
HEAD_PER_IMAGE = "head_per_image"
LIST_PER_IMAGE = "list_per_image"
BYTES_PER_IMAGE = "bytes_per_image"
RETRIED_GETS = "retried_gets"
CONNECTIONS = "connections"
MEAN_IN_FLIGHT = "mean_in_flight"
MAX_IN_FLIGHT = "max_in_flight"
FIRST_BYTE_P50_MS = "first_byte_p50_ms"
FIRST_BYTE_P99_MS = "first_byte_p99_ms"
LITTLES_LAW_IMAGES_PER_S = "littles_law_images_per_s"  # in-flight limit / mean request time / requests per image
ENDPOINT_CEILING_IMAGES_PER_S = "endpoint_ceiling_images_per_s"  # zero-latency, fetch-only, same rotation
ENDPOINT_CEILING_SHARE = "endpoint_ceiling_share"
STEADY_CEILING_SHARE = "steady_endpoint_ceiling_share"  # steady rate / the same round's endpoint ceiling
# Little's law checked: (mean requests in flight while any was) / (mean request time) / (requests per image),
# beside the measured steady rate (error: steady / law - 1), and the limit that caps the case, in words.
BUSY_MEAN_IN_FLIGHT = "busy_mean_in_flight"  # time-average of requests in flight from first request to last reply
LITTLES_LAW_RATE = "littles_law_rate_images_per_s"
LITTLES_LAW_ERROR = "littles_law_error"
REMOTE_LIMIT = "remote_limit"  # in-flight limit, pool, endpoint ceiling, client CPU, or idle request slots
ENDPOINT_CPU_UTILIZATION = "endpoint_cpu_utilization"  # the endpoint's and proxy's CPU over wall x usable cores
# Share of min(endpoint ceiling, in-flight limit / injected latency): what the gate judges for a remote case.
REMOTE_BOUND_SHARE = "remote_bound_share"
NEAR_ENDPOINT_CEILING = "near_endpoint_ceiling"  # share >= 0.8: the endpoint, not the strategy, is the limit

# --- a distributed run (lfw.distributed): one case per rank and one for the total ----------------------------
RANK = "rank"  # an int, or "total"
WORLD_SIZE = "world_size"
BACKEND = "backend"
STRAGGLER_RATIO = "straggler_ratio"  # slowest rank's load time over the fastest's, per epoch
STRAGGLER_RANK = "straggler_rank"
COVERAGE_OK = "coverage_ok"
FINDINGS = "findings"
COLLECTIVE_WAIT_S = "collective_wait_s"  # per epoch: time spent waiting at the all-reduce
LOAD_S = "load_s"  # per epoch: wall time minus that wait

# --- one side of a pass-interleaved A/B run (lfw.gate.ab): where each pass sat in the schedule -------------------
AB_PAIR = "ab_pair"  # the process pair (1, 2, ...) a pass belongs to
AB_SLOT = "ab_slot"  # its position in the pair's ABBA or BAAB quad
AB_QUAD = "ab_quad"  # the quad's order, "ABBA" or "BAAB"
AB_SIDE = "ab_side"  # "base" or "current"

# --- the cost layer (the "cost" group: instructions per image under valgrind) ---------------------------------
INSTRUCTIONS = "instructions"
INSTRUCTIONS_PER_IMAGE = "instructions_per_image"
IMAGES_COUNTED = "images_counted"
VALGRIND = "valgrind"
NATIVE_INSTRUCTIONS_PER_S = "native_instructions_per_s"

# --- the copy-on-access experiment (the "memory-index" group) ----------------------------------------------------
INDEX_SIZE = "index_size"  # entries of the replicated path index
INDEX_MIB = "index_mib"  # its size in the process that built it
LIST_OVER_NUMPY = "list_over_numpy_worker_uss_growth"  # on the numpy case: the list case's worker growth over its

# --- what a pipeline moves per image, counted deterministically (lfw.measure.moves) --------------------------
FILES_OPENED_PER_IMAGE = "files_opened_per_image"
READ_CALLS_PER_IMAGE = "read_calls_per_image"
BYTES_READ_PER_IMAGE = "bytes_read_per_image"
BATCH_BYTES_PER_IMAGE = "batch_bytes_per_image"
MOVES = (FILES_OPENED_PER_IMAGE, READ_CALLS_PER_IMAGE, BYTES_READ_PER_IMAGE, BATCH_BYTES_PER_IMAGE)

# --- a case that demonstrates a check rather than measures the user's loader ----------------------------------
CASE = "case"  # the leak check's case name: lfw, control, index
POSITIVE_CONTROL = "positive_control"  # True: it must be flagged by its own check; the gate does not compare it

# --- leak checks (lfw.measure.leak) ---------------------------------------------------------------------------
EPOCHS = "epochs"
USS_MIB_EPOCHS = "uss_mib_epochs"
PSS_MIB_EPOCHS = "pss_mib_epochs"
WORKER_USS_MIB_EPOCHS = "worker_uss_mib_epochs"
EPOCH_SERIES = (USS_MIB_EPOCHS, PSS_MIB_EPOCHS, WORKER_USS_MIB_EPOCHS)
SLOPE_USS = "slope_uss_mib_per_epoch"
SLOPE_PSS = "slope_pss_mib_per_epoch"
SLOPE_WORKER_USS = "slope_worker_uss_mib_per_epoch"
SLOPES = (SLOPE_USS, SLOPE_PSS, SLOPE_WORKER_USS)
MEDIAN_STEP_USS = "median_step_uss_mib"
MEDIAN_STEP_PSS = "median_step_pss_mib"
MEDIAN_STEPS = (MEDIAN_STEP_USS, MEDIAN_STEP_PSS)
LEAK_THRESHOLD = "leak_threshold_mib_per_epoch"
LEAK_EPOCHS_FITTED = "leak_epochs_fitted"
LEAK_VERDICT = "leak_verdict"
FIRST_EPOCH_THRESHOLD = "first_epoch_threshold_mib"
FIRST_EPOCH_VERDICT = "first_epoch_verdict"
# Which series a slope was fitted to, for the leak chart's legend.
SLOPE_OF = {USS_MIB_EPOCHS: SLOPE_USS, PSS_MIB_EPOCHS: SLOPE_PSS, WORKER_USS_MIB_EPOCHS: SLOPE_WORKER_USS}

# --- machine_info keys written by the suite ------------------------------------------------------------------
PER_CORE_MACHINE_PREFIX = "per_core_images_per_s_"  # + transform: the session's median ceiling per transform
COST_LAYER_SKIPPED = "cost_layer_skipped"
# Unreadable images the run left out (the skip option, lfw.data.screen): how many, and the first few by name.
SKIPPED_IMAGES = "skipped_images"
SKIPPED_IMAGE_FILES = "skipped_image_files"
# What decides an instruction count (the software the counted pass runs, and valgrind's emulated CPU), not the
# host's CPU model: the cost layer is compared wherever these match (:mod:`lfw.gate.compare`).
COUNTED_STACK = ("valgrind", "python", "torch", "torchvision", "pillow", "jpeg_library", "simplejpeg", "numpy")

# --- top-level keys of a saved run, beside pytest-benchmark's own --------------------------------------------
SELECTION = "lfw_selection"  # what the run was asked to run and how each selected case ended (lfw.results)


def per_core_machine_key(transform: str) -> str:
    return f"{PER_CORE_MACHINE_PREFIX}{transform}"


# --- start-up cost (the startup group): the dataset object each worker receives --------------------------------
PICKLED_DATASET_BYTES = "pickled_dataset_bytes"  # len(pickle.dumps(dataset)): what spawn/forkserver send each worker

# --- a watched training loop (lfw.diagnose.watch): the wait for data beside the user's own step ---------------
DATA_BOUND_SHARE = "data_bound_share"  # time in next() over the loop's wall time
DATA_BOUND_LOW = "data_bound_low"  # its 95% interval (batch means over blocks of consecutive steps)
DATA_BOUND_HIGH = "data_bound_high"
STEP_P50_MS = "step_p50_ms"  # the loop body per step (the user's step), median
LOAD_MS_PER_BATCH = "load_ms_per_batch"  # a batch's load time inside the worker that loaded it, mean
HANDOVER_MS = "handover_ms"  # from "loaded and asked for" to "the loop has it", median
WATCH_CLOCK = "watch_clock"  # host clock, CUDA events or CUDA synchronize
WATCH_OVERHEAD_US = "watch_overhead_us_per_step"  # the watcher's own bookkeeping per step

# --- the loaders users switch to (the peers group, lfw.peers): reference rows beside DataLoader ------------------
PEER = "peer"  # the other project's loader ("dataloader" for the references it runs beside)
PEER_KNOB = "peer_knob"  # what its parallelism counts: "threads" of this process or worker "processes"
PARALLELISM = "parallelism"  # the knob's value, counted against the usable cores
PEER_LAYOUT = "peer_layout"  # "chw", or "hwc-view": a (B, 3, H, W) view of channels-last memory
PEER_DECODER = "peer_decoder"  # the decoder its share is taken against (None where it cannot run alone)
PIXEL_CHECK = "pixel_check"  # images compared, largest differences from the reference decoder, the tolerance
CONVERSION = "conversion"  # the one-off conversion to its format: seconds, bytes on disk (None: reads the files)
COLD_IMAGES_PER_S = "cold_images_per_s"  # the cold first epoch (the rotation's warm-up round), apart from the rest
COLD_TTFB_S = "cold_ttfb_s"
COLD_CPU_MS_PER_IMAGE = "cold_cpu_ms_per_image"
# Memory measured alone after the rotation (a cold and a warm epoch): the tree at the end of the warm epoch, and
# what the loader added since before its cold epoch (MiB).
PEER_PSS_MIB = "alone_pss_mib"
PEER_USS_MIB = "alone_uss_mib"
PEER_PSS_ADDED_MIB = "alone_pss_added_mib"
PEER_USS_ADDED_MIB = "alone_uss_added_mib"
MEMORY_ALONE_ERROR = "alone_error"  # why the memory alone was not measured (one line; the rotation's figures stand)
