"""A torchdata.nodes pipeline over a map-style dataset, shaped so that :class:`~lfw.measure.LoaderPass` measures it.

``IterableWrapper(indices) -> ParallelMapper(GetItem(dataset), num_workers, method) -> Batcher -> Mapper(collate)
-> Loader``. :class:`NodesPass` adds what torchdata lacks: a way to stop, a batch timeout, a dead worker noticed;
it reaches torchdata 0.11's private ``_ParallelMapperIter`` through :func:`mapper_iter` only (docs/threads.md)."""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.queues
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from torch.utils.data import Dataset, default_collate

from lfw.cli.stop import stop_tree
from lfw.data.collate import collate_skipping
from lfw.errors import LFWError, check_choice
from lfw.measure.loader_config import DEFAULT_TIMEOUT_S, START_METHODS, die_with_parent

MapMethod = Literal["thread", "process"]
MAP_METHODS: tuple[MapMethod, ...] = ("thread", "process")
WATCH_INTERVAL_S = 0.5  # how often a pass checks its worker processes and its batch timeout
STOP_GRACE_S = 2.0  # how long a worker process that outlived torchdata's own shutdown gets to end when asked
THREAD_JOIN_S = 5.0  # how long the reader and ordering threads get to see the stop event (they poll every 0.1 s)


def torchdata_missing() -> str | None:
    """Why the nodes pipeline cannot run here (torchdata not importable), or None."""
    try:
        import torchdata.nodes  # noqa: F401
    except ImportError as exc:
        return f"torchdata is not installed ({exc}); pip install torchdata"
    return None


# (pid, thread id) of a thread starting a pipeline, while it does: a fork from it then is a map worker.
_starting: tuple[int, int] | None = None


def _arm_forked_worker() -> None:
    """``os.register_at_fork`` hook: a map worker forked while its pipeline started arms
    :func:`~lfw.measure.loader_config.die_with_parent` (torchdata's worker loop would outlive a killed parent)."""
    global _starting
    started, _starting = _starting, None
    if started is not None and started[0] != os.getpid() and started[1] == threading.get_ident():
        die_with_parent(0)
        if os.getppid() != started[0]:  # the parent died before the signal was armed
            os._exit(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_arm_forked_worker)


class GetItem:
    """The map ``index -> dataset[index]``: a class, so a spawned worker unpickles it (and arms ``die_with_parent``)."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.owner_pid = os.getpid()

    def __call__(self, index: int) -> Any:
        return self.dataset[index]

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if os.getpid() != self.owner_pid and multiprocessing.parent_process() is not None:
            die_with_parent(0)


def mapper_iter(mapper: Any) -> Any:
    """The live ``_ParallelMapperIter`` behind a ``ParallelMapper`` (0.11: ``ParallelMapper._it._it``), else None."""
    return getattr(getattr(mapper, "_it", None), "_it", None)


def map_processes(mapper: Any) -> list[multiprocessing.process.BaseProcess]:
    """The worker processes of a ``ParallelMapper`` (none for ``method="thread"`` or before it started)."""
    workers = getattr(mapper_iter(mapper), "_workers", None) or []
    return [w for w in workers if isinstance(w, multiprocessing.process.BaseProcess)]


def exit_status(pid: int) -> int | None:
    """An ended child's exit code (negative: its signal), else None; read with ``WNOWAIT``: CPU times stay readable."""
    try:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped already, or not a child of this process
        return None
    if ended is None:
        return None
    return -ended.si_status if ended.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else ended.si_status


class NodesPass(Iterator[Any]):
    """One pass of a :class:`NodesLoader`: creating it starts the pipeline; a late batch ("timed out") or a worker
    that exits non-zero ends it with a ``RuntimeError``; :meth:`close` stops every thread and process it started."""

    def __init__(self, loader: Any, mapper: Any, timeout_s: float) -> None:
        self._mapper = mapper
        self._timeout_s = timeout_s
        self._waiting_since: float | None = None
        self._failure: str | None = None
        self._closed = threading.Event()
        self._watch: threading.Thread | None = None
        global _starting
        _starting = (os.getpid(), threading.get_ident())
        try:
            self._it = iter(loader)  # torchdata starts the pipeline here
        except BaseException:
            self._closed.set()
            self._stop_pipeline()
            raise
        finally:
            _starting = None
        self._watch = threading.Thread(target=self._watchdog, name="lfw-nodes-watchdog", daemon=True)
        self._watch.start()

    def __next__(self) -> Any:
        if self._closed.is_set():
            raise StopIteration
        self._waiting_since = time.monotonic()
        try:
            batch = next(self._it)
        except StopIteration:
            self._raise_failure()
            raise
        finally:
            self._waiting_since = None
        self._raise_failure()  # a stopped mapper lets the batcher return a short batch: not a batch of the pass
        return batch

    def worker_pids(self) -> list[int]:
        """Pids of this pass's map worker processes, in start order (none for ``method="thread"``)."""
        return [p.pid for p in map_processes(self._mapper) if p.pid is not None]

    def threads(self) -> list[threading.Thread]:
        """The pipeline's threads in this process (reader, ordering, thread workers) that are still running."""
        it = mapper_iter(self._mapper)
        found = [getattr(it, "_read_thread", None), getattr(it, "_sort_thread", None),
                 *(getattr(it, "_workers", None) or [])]
        return [t for t in found if isinstance(t, threading.Thread) and t.is_alive()]

    def close(self) -> None:
        """Stop the pipeline now; idempotent. Raises ``RuntimeError`` (after the clean-up) when a worker had to be
        stopped by signal or a thread still runs."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._watch is not None:
            self._watch.join()
        problems = self._stop_pipeline()
        self._release()
        if problems:
            raise RuntimeError("; ".join(problems))

    def _stop_pipeline(self) -> list[str]:
        """torchdata's shutdown, this process's threads before the worker processes (together, the ordering thread can
        fail on a worker that just exited), then the stragglers by signal; returns what had to be forced."""
        it = mapper_iter(self._mapper)
        stop = getattr(it, "_stop", None)
        if isinstance(stop, threading.Event):
            stop.set()
            for name in ("_sort_thread", "_read_thread"):
                thread = getattr(it, name, None)
                if isinstance(thread, threading.Thread) and thread.is_alive():
                    thread.join(THREAD_JOIN_S)
        shutdown = getattr(it, "_shutdown", None)
        if callable(shutdown):
            shutdown()
        procs = map_processes(self._mapper)
        alive = [proc for proc in procs if proc.is_alive()]
        stop_tree(alive, STOP_GRACE_S)  # the stragglers, and any process they started; the rest reaped below
        for proc in procs:
            proc.join()
        forced = [f"map worker {proc.pid} outlived the pipeline's shutdown and was stopped by signal" for proc in alive]
        return forced + [f"pipeline thread {t.name} still running after the pipeline stopped" for t in self.threads()]

    def _release(self) -> None:
        """Let go of the stopped pipeline now, as torchdata's ``reset()`` does (else a later fork inherits it and
        torchdata 0.11's ``__del__`` fails there)."""
        if (it := mapper_iter(self._mapper)) is not None:
            if isinstance(getattr(it, "_workers", None), list):
                it._workers = []
            for name in ("_in_q", "_intermed_q"):
                q = getattr(it, name, None)
                if isinstance(q, multiprocessing.queues.Queue):
                    q.cancel_join_thread()  # never block on a pipe nobody reads any more
                    q.close()
            if (impl := getattr(self._mapper, "_it", None)) is not None:
                impl._it = None
        self._it = iter(())
        self._watch = None

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise RuntimeError(self._failure)

    def _watchdog(self) -> None:
        """Until the pass closes: stop the mapper (its own stop event) on a dead worker or a late batch."""
        while not self._closed.wait(WATCH_INTERVAL_S):
            codes = [(p.pid, exit_status(p.pid)) for p in map_processes(self._mapper) if p.pid is not None]
            dead = [(pid, code) for pid, code in codes if code not in (None, 0)]
            waiting = self._waiting_since
            if dead:
                pid, code = dead[0]
                self._failure = (f"map worker {pid} exited unexpectedly (exit code {code}): killed, or crashed in "
                                 "the map function")
            elif waiting is not None and time.monotonic() - waiting > self._timeout_s:
                self._failure = (f"no batch came from the map workers within {self._timeout_s:g} s: timed out "
                                 "(a worker is stuck or far too slow)")
            else:
                continue
            if (stop := getattr(mapper_iter(self._mapper), "_stop", None)) is not None:
                stop.set()  # the mapper's next() sees it within its queue timeout and stops
            return


class NodesLoader:
    """A torchdata.nodes pipeline over ``dataset`` that :class:`~lfw.measure.LoaderPass` measures like a DataLoader.

    Items ``dataset[i]`` for ``i`` in ``indices`` (default: all, in order), batched (the last batch may be short) and
    collated in the main process as :meth:`lfw.measure.LoaderConfig.build` collates. Each ``iter()`` closes the
    previous pass and starts a new pipeline.

    Args:
        dataset: a sized map-style dataset; picklable for ``method="process"`` unless forked.
        num_workers: threads or processes of the map (at least 1).
        method: ``"thread"`` or ``"process"``.
        batch_size: items per batch.
        multiprocessing_context: start method for ``method="process"`` (None: the platform's default).
        timeout_s: the longest wait for one batch before the pass fails."""

    persistent_workers = False

    def __init__(self, dataset: Dataset, *, num_workers: int, method: MapMethod = "thread", batch_size: int = 64,
                 indices: Sequence[int] | None = None, multiprocessing_context: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if missing := torchdata_missing():
            raise LFWError(missing)
        check_choice("map method", method, MAP_METHODS)
        if num_workers < 1:
            raise LFWError(f"a parallel map needs at least 1 worker, got num_workers={num_workers}")
        if batch_size <= 0:
            raise LFWError(f"batch size must be a positive integer, got {batch_size}")
        if multiprocessing_context is not None:
            check_choice("start method", multiprocessing_context, START_METHODS)
        if timeout_s <= 0:
            raise LFWError(f"timeout must be a positive number of seconds, got {timeout_s:g}")
        self.dataset = dataset
        self.indices = list(indices) if indices is not None else list(range(len(dataset)))  # type: ignore[arg-type]
        if not self.indices:
            raise LFWError("the dataset is empty: a nodes pipeline needs at least one item")
        self.num_workers = num_workers
        self.method = method
        self.batch_size = batch_size
        self.multiprocessing_context = multiprocessing_context
        self.timeout = timeout_s
        self.collate_fn = collate_skipping if getattr(dataset, "on_error", "raise") == "skip" else default_collate
        self.map_fn = GetItem(dataset)
        self._current: NodesPass | None = None

    def __len__(self) -> int:
        return math.ceil(len(self.indices) / self.batch_size)

    def __iter__(self) -> NodesPass:
        self.close()
        from torchdata.nodes import Batcher, IterableWrapper, Loader, Mapper, ParallelMapper

        mapper = ParallelMapper(IterableWrapper(self.indices), self.map_fn, num_workers=self.num_workers,
                                in_order=True, method=self.method,
                                multiprocessing_context=self.multiprocessing_context)
        root = Mapper(Batcher(mapper, batch_size=self.batch_size, drop_last=False), self.collate_fn)
        self._current = NodesPass(Loader(root, restart_on_stop_iteration=False), mapper, self.timeout)
        return self._current

    def worker_pids(self, iterator: Any = None) -> list[int]:
        """The :func:`lfw.measure.torch_compat.worker_pids` hook: the map's worker processes serving ``iterator``."""
        return iterator.worker_pids() if isinstance(iterator, NodesPass) else []

    def close(self) -> None:
        """Stop the current pass's pipeline, if any (:meth:`NodesPass.close`)."""
        current, self._current = self._current, None
        if current is not None:
            current.close()

    def __repr__(self) -> str:
        return (f"NodesLoader(method={self.method!r}, num_workers={self.num_workers}, "
                f"batch_size={self.batch_size}, items={len(self.indices)})")
