"""Your own dataset in the suite: torchvision's ``ImageFolder`` over the LFW tree, as a factory.

    pytest benchmarks --bench-dataset examples.imagefolder:faces -k "workers or batch" --benchmark-autosave
    python -m lfw.report

The factory takes no argument and returns a map-style Dataset whose items the default collate can batch
(here a 3x250x250 float tensor and a class index per image). It reads ``LFW_ROOT`` if set, else the synthetic
tree the quick profile uses (made once, in the cache).
"""

from __future__ import annotations

from torchvision import transforms
from torchvision.datasets import ImageFolder

from lfw.data.root import resolve_root


def faces() -> ImageFolder:
    """Every image of the tree, one class per person, decoded by PIL and converted to a float tensor."""
    return ImageFolder(str(resolve_root().path), transform=transforms.ToTensor())
