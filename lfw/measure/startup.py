"""What a DataLoader hands each worker at start-up: the dataset object, inherited (``fork``) or pickled and sent
down a pipe once per worker (``spawn``, ``forkserver``; every epoch unless the workers persist).
:func:`pickled_dataset_bytes` gives that size (``K.PICKLED_DATASET_BYTES``, the start-up chart's x axis)."""

from __future__ import annotations

import pickle

from lfw.errors import LFWError, one_line


def pickled_dataset_bytes(dataset: object) -> int:
    """``len(pickle.dumps(dataset))`` (default protocol, as ``ForkingPickler``): the bytes ``spawn`` and ``forkserver``
    write to each worker; it overstates a dataset holding tensors (sent as shared-memory handles).

    Raises:
        LFWError: the dataset cannot be pickled (one line)."""
    try:
        return len(pickle.dumps(dataset))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise LFWError(f"cannot pickle the {type(dataset).__name__} dataset ({one_line(exc)}): spawn and "
                       "forkserver workers could not receive it; make it picklable or use fork") from None
