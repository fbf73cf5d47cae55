"""What a DataLoader hands each worker at start-up: the dataset object, inherited or pickled.

With ``fork`` a worker inherits the parent's memory, the dataset included, and starts without copying it. With
``spawn`` and ``forkserver`` the parent pickles each worker's process object, the dataset with it, and writes
it down a pipe that the worker reads and unpickles before its first item. That cost grows with the pickled
size, is paid once per worker, and is paid again every epoch unless the workers persist.
:func:`pickled_dataset_bytes` gives that size: the x axis of the start-up chart
(``K.PICKLED_DATASET_BYTES``).
"""

from __future__ import annotations

import pickle

from lfw.errors import LFWError, one_line


def pickled_dataset_bytes(dataset: object) -> int:
    """``len(pickle.dumps(dataset))``: the bytes that ``spawn`` and ``forkserver`` write to each worker.

    The contract is exactly that expression: the default pickle protocol (``pickle.DEFAULT_PROTOCOL``, the one
    multiprocessing's ``ForkingPickler`` uses) over the whole object graph the dataset holds. It measures
    size, not time. For a dataset of plain Python objects (a list of paths) it is what the pipe carries;
    for one that holds torch tensors it overstates it, because ``ForkingPickler``, with torch's reducers,
    sends a shared-memory handle in place of a tensor's bytes. The pickle is built in memory and dropped, so
    for a moment the call needs about as much memory again as the result.

    Raises:
        LFWError: the dataset cannot be pickled (one line). ``spawn`` and ``forkserver`` workers could not
            receive it either; ``fork`` still can.
    """
    try:
        return len(pickle.dumps(dataset))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise LFWError(f"cannot pickle the {type(dataset).__name__} dataset ({one_line(exc)}): spawn and "
                       "forkserver workers could not receive it; make it picklable or use fork") from None
