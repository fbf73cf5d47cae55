"""lfw-bench: measure the PyTorch DataLoader on Labeled Faces in the Wild.

Layout: data (:mod:`lfw.dataset`, :mod:`lfw.index`, :mod:`lfw.transforms`, :mod:`lfw.synth`,
:mod:`lfw.data_root`), measurement (:mod:`lfw.measure`), and the tools built on them (the exercise CLI in
``python -m lfw``, :mod:`lfw.gate`, :mod:`lfw.report`, :mod:`lfw.diagnose`).
"""

from lfw.dataset import LFWDataset
from lfw.transforms import PRESETS, get_preset

__all__ = ["PRESETS", "LFWDataset", "get_preset"]
__version__ = "0.1.0"
