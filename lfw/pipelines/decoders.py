"""JPEG decoders behind one interface: a JPEG's bytes to an RGB ``uint8`` (3, H, W) tensor by ``pil`` (the presets'
path), ``pil-draft`` (``Image.draft``: a reduced DCT scale no smaller than ``size``), ``tvio`` (``torchvision.io``)
or ``simplejpeg`` (strict, releases the GIL). Bad files fail alike in each: the bytes are sniffed first (empty, PNG
or GIF under a ``.jpg`` name), then any decoder error, truncation included, is a :class:`~lfw.errors.CorruptImageError`
naming the file. With a :class:`~lfw.measure.stages.StageClock`, the decoder that really ran counts the image."""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable

import numpy as np
import torch
from PIL import Image
from torchvision.io import ImageReadMode, decode_jpeg

from lfw.errors import CorruptImageError, LFWError, check_choice, corrupt_image_fix
from lfw.measure.stages import StageClock

DECODERS = ("pil", "pil-draft", "tvio", "simplejpeg")
JPEG_MAGIC = b"\xff\xd8\xff"
OTHER_FORMATS = ((b"\x89PNG", "PNG"), (b"GIF8", "GIF"), (b"BM", "BMP"), (b"RIFF", "WebP"), (b"II*\x00", "TIFF"),
                 (b"MM\x00*", "TIFF"))

# torchvision 0.29 warns on every call that its image codecs are deprecated (superseded by TorchCodec); the
# decoders still ship and are measured as they are, so the notice is not repeated for every image.
warnings.filterwarnings("ignore", message="The image decoding and encoding capabilities of TorchVision",
                        category=DeprecationWarning)


def read_file(path: str) -> bytearray:
    """The file's bytes in one read, as a writable buffer (torch's ``frombuffer`` needs one without copying)."""
    with open(path, "rb") as handle:
        data = bytearray(os.fstat(handle.fileno()).st_size)
        read = handle.readinto(data)
    return data if read == len(data) else data[:read]


def not_jpeg(data: bytes | bytearray) -> str | None:
    """Why ``data`` is not a JPEG (``"empty file (0 bytes)"``, ``"PNG data, not a JPEG"``...), or None."""
    if not data:
        return "empty file (0 bytes)"
    if data[:3] == JPEG_MAGIC:
        return None
    for signature, name in OTHER_FORMATS:
        if data[: len(signature)] == signature:
            return f"{name} data, not a JPEG"
    return "not a JPEG (no start-of-image marker)"


# Each decoder returns its image and its own name: the count a pass records (``pil-draft`` only where it drafted).
Decoded = tuple[torch.Tensor, str]


def _pil(data: bytes | bytearray, size: int | None) -> Decoded:
    with Image.open(io.BytesIO(data)) as img:
        if size is not None:
            img.draft("RGB", (size, size))
        rgb = img.convert("RGB")
    return torch.from_numpy(np.array(rgb)).permute(2, 0, 1), "pil" if size is None else "pil-draft"


def _tvio(data: bytes | bytearray, size: int | None) -> Decoded:
    buffer = data if isinstance(data, bytearray) else bytearray(data)
    return decode_jpeg(torch.frombuffer(buffer, dtype=torch.uint8), mode=ImageReadMode.RGB), "tvio"


def _simplejpeg(data: bytes | bytearray, size: int | None) -> Decoded:
    import simplejpeg

    return torch.from_numpy(simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)).permute(2, 0, 1), "simplejpeg"


_DECODE: dict[str, Callable[[bytes | bytearray, int | None], Decoded]] = {
    "pil": lambda data, size: _pil(data, None), "pil-draft": _pil, "tvio": _tvio, "simplejpeg": _simplejpeg}


def check_decoder(name: str) -> str:
    """``name`` if it is a known decoder whose library imports here; otherwise a one-line error."""
    check_choice("decoder", name, DECODERS)
    if name == "simplejpeg":
        try:
            import simplejpeg  # noqa: F401
        except ImportError:
            raise LFWError("decoder 'simplejpeg' needs the simplejpeg package: pip install simplejpeg") from None
    return name


def decode(decoder: str, data: bytes | bytearray, where: str, size: int | None = None,
           clock: StageClock | None = None) -> torch.Tensor:
    """Decode ``data`` (the bytes of ``where``) to a (3, H, W) uint8 RGB tensor; ``size``: the side ``pil-draft``
    decodes no smaller than; with ``clock``, the decoder that ran counts the image.

    Raises:
        CorruptImageError: the bytes are not a JPEG, or the decoder failed on them (truncated, corrupt)."""
    if (reason := not_jpeg(data)) is not None:
        raise CorruptImageError(f"cannot decode image {where}: {reason}; {corrupt_image_fix()}")
    try:
        image, ran = _DECODE[decoder](data, size)
    except (OSError, ValueError, RuntimeError, SyntaxError) as exc:
        detail = " ".join(str(exc).split(", ")[-1].split())[:120]
        raise CorruptImageError(f"cannot decode image {where}: truncated or corrupt JPEG ({decoder}: {detail}); "
                                f"{corrupt_image_fix()}") from None
    if clock is not None:
        clock.count(ran)
    return image
