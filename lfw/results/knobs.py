"""The knobs of a case, each described once: its key, its label and its type, and where a saved case keeps it.

A knob is what a case *is* (a DataLoader setting, the preset, the file index, a benchmark's parametrized choice).
From record schema 2 every case saves every knob of :data:`KNOBS` (None where one does not apply) in
pytest-benchmark's ``params`` alone (:func:`saved_form`); :meth:`lfw.results.Case.knob` reads them, older forms too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lfw.results import keys as K

T = TypeVar("T")


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One knob: ``key`` (its name in ``params``, the DataLoader's own argument name where it is one), ``label``
    (a few words for a reader) and ``kind``, the type of its values (None aside)."""

    key: str
    label: str
    kind: type[T]


# --- the DataLoader's (lfw.measure.loader_config.LoaderConfig, field for field) --------------------------------
BATCH_SIZE = Knob("batch_size", "batch size (images)", int)
NUM_WORKERS = Knob("num_workers", "worker processes", int)
PIN_MEMORY = Knob("pin_memory", "pinned batches", bool)
PERSISTENT_WORKERS = Knob("persistent_workers", "workers kept across epochs", bool)
PREFETCH_FACTOR = Knob("prefetch_factor", "batches in flight per worker", int)
START_METHOD = Knob("start_method", "worker start method", str)
SHUFFLE = Knob("shuffle", "shuffled order", bool)
DROP_LAST = Knob("drop_last", "short last batch dropped", bool)
SEED = Knob("seed", "seed of order and augmentation", int)
TIMEOUT_S = Knob("timeout_s", "longest wait for one batch (s)", float)
# --- the case's (lfw.suite.matrix: what its group varies) -----------------------------------------------------
TRANSFORM = Knob("transform", "transform preset", str)
INDEX = Knob("index", "file index kind", str)
STEP_MS = Knob("step_ms", "simulated training step (ms)", float)
SAMPLING = Knob("sampling", "sampling of the pass", str)
PIPELINE = Knob("pipeline", "decode pipeline or peer", str)
STRATEGY = Knob("strategy", "remote read strategy", str)
LATENCY_MS = Knob("latency_ms", "injected first-byte latency (ms)", float)
PEER = Knob("peer", "loader project", str)
# --- a benchmark's own parametrized choices --------------------------------------------------------------------
CASE = Knob("case", "the benchmark's own case (the leak check's, a host-to-device copy's)", str)
LAYOUT = Knob("layout", "index layout", str)
FREEZE = Knob("freeze", "gc.freeze before the fork", bool)
ENTRIES = Knob("entries", "index entries", int)
METHOD = Knob("method", "thread-map method", str)
DECODER = Knob("decoder", "image decoder", str)
# --- a distributed run's (lfw.distributed.gathered) -----------------------------------------------------------
RANK = Knob("rank", "rank (an int, or 'total': the ranks together)", object)
WORLD_SIZE = Knob("world_size", "ranks", int)

KNOBS: tuple[Knob[Any], ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Knob))  # as declared
BY_KEY: dict[str, Knob[Any]] = {k.key: k for k in KNOBS}


def saved_form(params: Mapping[str, Any], record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A case's ``params`` and flat record (``extra_info`` as the writers build it) as schema 2 saves them: the
    knobs it names and those of its LoaderConfig dict (``config``, kept for its other settings only) move to
    ``params``, replacing what ``params`` held; every knob of :data:`KNOBS` is there (None where the case has none),
    and ``params``' other keys are kept."""
    extra = dict(record)
    found = {k: extra.pop(k) for k in list(extra) if k in BY_KEY}
    config = extra.pop(K.CONFIG, None)
    if isinstance(config, Mapping):
        found = {**{k: v for k, v in config.items() if k in BY_KEY}, **found}
        rest = {k: v for k, v in config.items() if k not in BY_KEY}
        if rest:  # settings of a run that are not a case's knobs (a distributed run's epochs)
            extra[K.CONFIG] = rest
    return {**dict.fromkeys(BY_KEY), **params, **found}, extra


def legacy_knob(params: Mapping[str, Any], extra: Mapping[str, Any], key: str) -> Any:
    """A knob of a case saved before schema 2 (None where it has none): in ``extra_info`` under its key, else in
    ``params`` (version 0: the knobs its group varied; version 1: every knob), else in the LoaderConfig dict saved as
    ``config`` (or ``workers``, the record's copy of ``num_workers``)."""
    if extra.get(key) is not None:
        return extra[key]
    if params.get(key) is not None:
        return params[key]
    config = extra.get(K.CONFIG)
    if isinstance(config, Mapping) and key in config:
        return config[key]
    return extra.get(K.WORKERS) if key == NUM_WORKERS.key else None
