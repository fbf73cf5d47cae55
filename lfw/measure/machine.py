"""What a measurement depends on (library builds, the CPUs this process may use, torch's threads, the data),
recorded beside every result as pytest-benchmark's ``machine_info``; the gate warns when it differs."""

from __future__ import annotations

import os
import platform
import re
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import PIL
import psutil
import torch
from PIL import features

from lfw.measure.callgrind import valgrind_version
from lfw.measure.ceiling import PROBE
from lfw.measure.cpus import cpu_facts, usable_cores
from lfw.measure.resources import Limits, MiB
from lfw.results import keys as K


def jpeg_library() -> str:
    """``libjpeg-turbo <version>`` or ``libjpeg <version>``: the decoder Pillow was built with."""
    if features.check_feature("libjpeg_turbo"):
        return f"libjpeg-turbo {features.version('libjpeg_turbo')}"
    return f"libjpeg {features.version('jpg') or 'unknown'}"


def package_version(name: str) -> str:
    """An installed distribution's version, or ``not installed``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


NVIDIA_VERSION_FILE = "/proc/driver/nvidia/version"


def nvidia_driver(text: str | None = None) -> str | None:
    """The NVIDIA kernel driver's release (e.g. ``580.159.04``) from :data:`NVIDIA_VERSION_FILE` (or ``text``),
    None where there is none (torch names the CUDA runtime only)."""
    if text is None:
        try:
            with open(NVIDIA_VERSION_FILE) as f:
                text = f.read()
        except OSError:
            return None
    found = re.search(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    return found.group(1) if found else None


def cuda_info() -> dict[str, Any]:
    if not torch.cuda.is_available():
        return {"cuda_available": False}
    props = torch.cuda.get_device_properties(0)
    return {
        "cuda_available": True,
        "cuda_device": props.name,
        "cuda_memory_gib": round(props.total_memory / 2**30, 1),
        "cuda_runtime": torch.version.cuda,
        "cuda_driver": nvidia_driver(),
    }


# The quick profile's cases fit in 1 GiB, the size the suite's hints ask for (docker run --shm-size=1g)
SMALL_SHM_BYTES = 2**30


def runner_class() -> str:
    """A name for the class of machine a baseline belongs to: ``gpu`` or ``cpu-<cores>core``, with
    ``-shm<MiB>m`` when ``/dev/shm`` is smaller than :data:`SMALL_SHM_BYTES` (a container's default 64 MB:
    another machine for the gate, not a regression)."""
    if override := os.environ.get("LFW_RUNNER"):
        return override
    name = "gpu" if torch.cuda.is_available() else f"cpu-{usable_cores()}core"
    shm = Limits.read().shm_total
    return name + (f"-shm{shm // MiB}m" if shm is not None and shm < SMALL_SHM_BYTES else "")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """Library versions, decoder, the CPUs (:class:`lfw.measure.cpus.CpuFacts`), torch's threads, memory and
    accelerator of this process's machine."""
    import torchvision  # here, not at import: lfw.measure stays importable without torchvision

    return {
        "runner_class": runner_class(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "numpy": np.__version__,
        "jpeg_library": jpeg_library(),
        "simplejpeg": package_version("simplejpeg"),
        **cpu_facts().machine_info(),
        K.CAPACITY_PROBE: PROBE,
        "torch_num_threads": torch.get_num_threads(),
        "total_memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "valgrind": valgrind_version(),
        **Limits.read().machine_info(),
        **cuda_info(),
    }
