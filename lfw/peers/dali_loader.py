"""NVIDIA DALI on its CPU backend, configured as its documentation shows for image classification (docs/peers.md:
the pipeline, the knob, why it is built each pass and why its decoder cannot run alone). Batches are
``(B, H, W, 3)``, handed out as a ``(B, 3, H, W)`` view; the float case normalizes in the pipeline."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from lfw.data.transforms import IMAGENET_MEAN, IMAGENET_STD
from lfw.peers.contract import PassImages, PeerLoader, PeerSpec, labels_tensor, library, not_importable

DISTRIBUTIONS = ("nvidia-dali-cuda130",)
INSTALL = "pip install nvidia-dali-cuda130 (make peers)"
DECODER = None  # its decoder cannot run alone here (module docstring)
# why it cannot run here, or None
missing = partial(not_importable, "nvidia-dali", INSTALL, "nvidia.dali", "nvidia.dali.plugin.pytorch")


class DaliLoader(PeerLoader):
    """DALI's CPU pipeline (module docstring) behind the peers' contract."""

    def __init__(self, spec: PeerSpec, images: PassImages) -> None:
        super().__init__(spec, images, layout="chw" if spec.output == "float" else "hwc-view", persistent=False)
        self._engine: Any = None
        self._pipeline: Any = None

    def start(self) -> None:
        dali, plugin = library("nvidia.dali"), library("nvidia.dali.plugin.pytorch")
        fn, types = dali.fn, dali.types
        files, labels = list(self.images.paths), [int(v) for v in range(len(self.images))]
        floats = self.spec.output == "float"

        @dali.pipeline_def(batch_size=self.spec.batch_size, num_threads=self.spec.parallelism, device_id=None,
                      prefetch_queue_depth=2)
        def pipeline() -> Any:
            jpegs, index = fn.readers.file(files=files, labels=labels, random_shuffle=False, name="reader")
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            if floats:
                images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                                  mean=[255 * m for m in IMAGENET_MEAN],
                                                  std=[255 * s for s in IMAGENET_STD])
            return images, index

        # The reader's label is each file's position in the pass: the contract's index, and the label through it.
        self._pipeline = pipeline()
        self._engine = plugin.DALIGenericIterator(self._pipeline, ["images", "index"], reader_name="reader",
                                                  last_batch_policy=plugin.LastBatchPolicy.PARTIAL, auto_reset=False)

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        floats = self.spec.output == "float"
        classes = self.images.labels
        for out in self._engine:
            batch = out[0]
            index = labels_tensor(batch["index"])
            images = batch["images"] if floats else batch["images"].permute(0, 3, 1, 2)
            yield images, labels_tensor(classes[index.numpy()]), index

    def stop(self) -> None:
        """Shut the pipeline down now, as its ``__del__`` does (its threads end here, not when it is collected)."""
        pipeline, self._pipeline, self._engine = self._pipeline, None, None
        shutdown = getattr(pipeline, "_shutdown", None)
        if callable(shutdown):
            shutdown()


build = DaliLoader  # build(spec, images): the adapter's loader (lfw.peers)
