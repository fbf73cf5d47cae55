"""Named transform presets shared by the CLI and the benchmarks.

The preset is a benchmark axis, so each name stands for a fixed recipe whose CPU cost is what is measured:

- ``none``:   decode + ``ToTensor`` (float32 in [0, 1]); the baseline cost of getting pixels into a tensor.
- ``simple``: the common training recipe: ``Resize(224)``, ``ToTensor``, ``Normalize`` (ImageNet statistics).
- ``heavy``:  the course exercise's ``RandomAffine(5, (0.1, 0.1), (0.5, 2.0))`` plus augmentation that costs real
  CPU (random resized crop, colour jitter, Gaussian blur, flip), then ``ToTensor`` and ``Normalize``.
- ``uint8``:  ``PILToTensor`` only: no float conversion, the fast path (a quarter of the bytes per batch).
"""

from __future__ import annotations

from collections.abc import Callable

from torchvision import transforms as T

from lfw.errors import check_choice

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


PRESETS: dict[str, Callable[[], T.Compose]] = {
    "none": lambda: T.Compose([T.ToTensor()]),
    "simple": lambda: T.Compose([T.Resize(224), T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)]),
    "heavy": lambda: T.Compose([
        T.RandomAffine(5, (0.1, 0.1), (0.5, 2.0)),
        T.RandomResizedCrop(224, scale=(0.6, 1.0), antialias=True),
        T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
        T.GaussianBlur(kernel_size=5, sigma=(0.1, 2.0)),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ]),
    "uint8": lambda: T.Compose([T.PILToTensor()]),
}


def get_preset(name: str) -> T.Compose:
    """A fresh transform for the preset ``name``; an unknown name is a user error listing the known ones."""
    return PRESETS[check_choice("transform preset", name, PRESETS)]()
