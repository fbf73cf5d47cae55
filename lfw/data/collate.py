"""Batching that tolerates unreadable images (torch only: the measurement imports it without torchvision)."""

from __future__ import annotations

from typing import Any

import torch


def collate_skipping(batch: list[Any]) -> Any:
    """Default collation after dropping the ``None`` items of unreadable images (``on_error="skip"``): the
    measurement counts the collated images, so skipped files show up as fewer images seen, never as substitutes."""
    kept = [item for item in batch if item is not None]
    if not kept:
        return torch.empty(0), torch.empty(0, dtype=torch.long)
    return torch.utils.data.default_collate(kept)
