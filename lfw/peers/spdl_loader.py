"""SPDL (``spdl-io``, ``spdl-core``): its own pipeline builder and thread pool, batch decode per batch of paths, in
the shape of SPDL's ``image_dataloading`` example (docs/peers.md). Batches are ``(B, H, W, 3)``, handed out as a
``(B, 3, H, W)`` view. SPDL needs FFmpeg's shared libraries (:func:`missing` says how to get them); its decoder
alone is :class:`SpdlFiles`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from lfw.peers.contract import PassImages, PeerLoader, PeerSpec, library, not_importable

DISTRIBUTIONS = ("spdl-io", "spdl-core")
FFMPEG_PACKAGES = "libavformat59 libavfilter8 libavdevice59 libavcodec59 libavutil57 libswscale6 libswresample4"
INSTALL = "pip install spdl-io spdl-core (make peers)"
DECODER = "spdl"
SINK_BUFFER = 2  # batches the sink holds ready: a DataLoader's prefetch
RGB24 = "format=pix_fmts=rgb24"  # the filter load_image_batch builds for pix_fmt="rgb24" at the image's own size


def missing() -> str | None:
    if (why := not_importable("spdl", INSTALL, "spdl.io", "spdl.pipeline")) is not None:
        return why
    io = library("spdl.io")
    try:
        io.demux_image  # noqa: B018  (the attribute loads libspdl and FFmpeg's libraries)
        library("spdl.io.lib")._libspdl  # noqa: B018
    except Exception as exc:
        return (f"spdl cannot load FFmpeg's shared libraries ({' '.join(str(exc).split())[:120]}); on Debian: "
                f"apt-get install {FFMPEG_PACKAGES} (make peers does it as root)")
    return None


def decode_batch(paths: list[str]) -> torch.Tensor:
    """One batch of JPEG files to a ``(B, H, W, 3)`` uint8 tensor through SPDL (FFmpeg), strict."""
    io = library("spdl.io")
    return io.to_torch(io.load_image_batch(paths, width=None, height=None, pix_fmt="rgb24", strict=True))


class SpdlLoader(PeerLoader):
    """SPDL's pipeline (module docstring) behind the peers' contract."""

    def __init__(self, spec: PeerSpec, images: PassImages) -> None:
        super().__init__(spec, images, layout="chw" if spec.output == "float" else "hwc-view", persistent=False)
        self._pipeline: Any = None

    def _load(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images = self.output(decode_batch([self.images.paths[i] for i in indices]).permute(0, 3, 1, 2))
        index = torch.tensor(indices, dtype=torch.int64)
        return images, torch.from_numpy(self.images.labels[index.numpy()]), index

    def start(self) -> None:
        threads = self.spec.parallelism
        self._pipeline = (library("spdl.pipeline").PipelineBuilder()
                          .add_source(range(len(self.images)))
                          .aggregate(self.spec.batch_size)
                          .pipe(self._load, concurrency=threads, output_order="input")
                          .add_sink(SINK_BUFFER)
                          .build(num_threads=threads))
        self._pipeline.start()

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        return iter(self._pipeline.get_iterator(timeout=self.timeout))

    def stop(self) -> None:
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.stop()


class SpdlFiles:
    """SPDL's decoder alone: ``dataset[i]`` is image ``i`` by ``spdl.io.load_image`` (rgb24), in the calling thread."""

    def __init__(self, images: PassImages) -> None:
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        io = library("spdl.io")
        return io.to_torch(io.load_image(self.images.paths[i], filter_desc=RGB24))


build = SpdlLoader  # build(spec, images): the adapter's loader (lfw.peers)
