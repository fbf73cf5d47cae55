"""A slower hand-over from the workers to the training loop, for showing that the gate calls it a regression.

Put this folder first on ``PYTHONPATH`` (``sitecustomize`` is imported at start-up by the benchmark process): it
makes the main process's receive of every batch from a DataLoader worker (``_process_data`` of torch's
multiprocessing iterator, where the batch is handed to the loop) ``LFW_HANDOVER_MS`` milliseconds slower (default
30), as a receive that copied or logged every batch would. The workers load as fast as before; a loop that steps
beside them waits longer than the machine's own rates predict (lfw.gate.metrics.data_wait_excess).
"""

import os
import time

from torch.utils.data import dataloader

DELAY_S = float(os.environ.get("LFW_HANDOVER_MS", "30")) / 1e3
_process_data = dataloader._MultiProcessingDataLoaderIter._process_data


def _slow_process_data(self, data, *args):  # type: ignore[no-untyped-def]
    time.sleep(DELAY_S)
    return _process_data(self, data, *args)


dataloader._MultiProcessingDataLoaderIter._process_data = _slow_process_data
