"""Show a batch: the exercise's ``-visualize_batch``, as a PNG grid titled with the people's names."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import torch
from torch.utils.data import DataLoader

from lfw.cli.saving import write_figure
from lfw.data.dataset import LFWDataset
from lfw.errors import LFWError

MAX_IMAGES = 16


def check_output(out: str | os.PathLike[str]) -> Path:
    """The output path, if matplotlib can write its format (named by the suffix); else a one-line error."""
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(out)
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in formats:
        raise LFWError(f"cannot write a batch grid as {path.name!r}: give a file ending in one of "
                       f"{', '.join('.' + f for f in sorted(formats))}")
    if path.exists() and path.is_dir():
        raise LFWError(f"{path} is a folder; give a file name for the batch grid")
    return path


def _displayable(image: torch.Tensor) -> torch.Tensor:
    """HWC float in [0, 1] from a CHW tensor that may be uint8, [0, 1] floats or normalized floats."""
    img = image.float()
    if image.dtype == torch.uint8:
        img = img / 255
    elif img.min() < 0 or img.max() > 1:  # normalized: stretch back to [0, 1] for viewing
        img = (img - img.min()) / (img.max() - img.min() + 1e-8)
    return img.permute(1, 2, 0).clamp(0, 1)


def save_batch_grid(loader: DataLoader, dataset: LFWDataset, out: str | os.PathLike[str]) -> Path:
    """Save the first (up to 16) images of one batch as a grid; show it too when a display exists."""
    out = check_output(out)
    interactive = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if not interactive:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images, labels = next(iter(loader))
    count = min(MAX_IMAGES, len(images))
    cols = min(4, count)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3.3 * rows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < count:
            ax.imshow(_displayable(images[k]).numpy())
            ax.set_title(dataset.name_of(int(labels[k])), fontsize=9)
    fig.suptitle(f"One LFW batch: first {count} of {len(images)} images")
    fig.tight_layout()
    write_figure(fig, out, dpi=80)
    if interactive:
        plt.show()
    plt.close(fig)
    return out
