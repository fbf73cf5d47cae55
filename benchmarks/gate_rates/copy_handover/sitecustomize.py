"""A hand-over that copies every batch it receives, for showing that the gate calls it a regression on a machine
at any speed.

Put this folder first on ``PYTHONPATH`` (``sitecustomize`` is imported at start-up by the benchmark process): the
main process's receive of every batch from a DataLoader worker (``_process_data`` of torch's multiprocessing
iterator, where the batch is handed to the loop) clones each of the batch's tensors ``LFW_HANDOVER_COPIES`` times
(default 8), as a receive that converted or copied every batch would. The copies are work, not a wait: on a machine
at half the speed they take twice as long and take the CPU the workers need, so the loop waits longer than the
machine's own rates predict at any speed (lfw.gate.metrics.data_wait_excess). ``slow_handover/`` sleeps instead,
which a loader slower than the loop's step plus the sleep hides.
"""

import os

import torch
from torch.utils.data import dataloader

COPIES = int(os.environ.get("LFW_HANDOVER_COPIES", "8"))
_process_data = dataloader._MultiProcessingDataLoaderIter._process_data


def _tensors(data):  # type: ignore[no-untyped-def]
    if isinstance(data, torch.Tensor):
        yield data
    elif isinstance(data, (list, tuple)):
        for item in data:
            yield from _tensors(item)


def _copying_process_data(self, data, *args):  # type: ignore[no-untyped-def]
    batch = _process_data(self, data, *args)
    for _ in range(COPIES):
        for tensor in _tensors(batch):
            tensor.clone()
    return batch


dataloader._MultiProcessingDataLoaderIter._process_data = _copying_process_data
