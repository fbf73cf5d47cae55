"""The benchmark profiles (defined in :mod:`lfw.profiles`, so tools outside the benchmarks share them)."""

from lfw.profiles import PROFILES, Profile

__all__ = ["PROFILES", "Profile"]
