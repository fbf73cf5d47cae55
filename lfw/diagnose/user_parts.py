"""A user's own dataset and step for ``python -m lfw.diagnose``: ``--dataset MODULE:FACTORY``, ``--step MODULE:FN``.

``--dataset`` takes the same string as the suite's ``--bench-dataset`` and is checked by the same function
(:func:`lfw.suite.user_dataset.user_dataset`: a factory with no argument returning a non-empty map-style Dataset
whose items the default collate batches), so every way it can be wrong is the same one line, naming ``--dataset``.

``--step`` names a callable that takes one batch (as the loader yields it: ``[images, labels, ...]``) and runs
one training step; state it needs (a model, an optimizer) lives in its module or in a callable object. On CUDA
the step should synchronize before it returns (as the ``cnn`` step does), or the step's clock stops when the
kernels were queued, not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from torch.utils.data import Dataset

from lfw.errors import LFWError

SUITE_FLAG = "--bench-dataset"


def _renamed(exc: LFWError, flag: str, *, step: bool = False) -> LFWError:
    text = str(exc).replace(SUITE_FLAG, flag)
    if step:
        text = text.replace("a callable that returns a Dataset", "a callable that takes a batch")
        text = text.replace("expected MODULE:FACTORY (e.g. examples.imagefolder:faces)",
                            "expected MODULE:FN (e.g. examples.train_imagefolder:step)")
    return LFWError(text)


def dataset_from(spec: str) -> Dataset:
    """The dataset ``--dataset MODULE:FACTORY`` names, checked as ``--bench-dataset`` checks it."""
    from lfw.suite.user_dataset import user_dataset  # the suite's factory loader: one set of rules and messages

    try:
        return user_dataset(spec)
    except LFWError as exc:
        raise _renamed(exc, "--dataset") from None


def step_from(spec: str) -> Callable[[Any], None]:
    """The step ``--step MODULE:FN`` names: a callable taking one batch."""
    from lfw.suite.user_dataset import load_factory

    try:
        return cast(Callable[[Any], None], load_factory(spec))
    except LFWError as exc:
        raise _renamed(exc, "--step", step=True) from None
