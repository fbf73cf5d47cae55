"""The data: the LFW dataset (:mod:`~lfw.data.dataset`), its file index (:mod:`~lfw.data.index`), the transform
presets, the offline LFW-like tree (:mod:`~lfw.data.synth`), where the images come from and the skip screen.
Importing it imports nothing, so a profile reads :data:`SYNTHETIC_SIZES` without loading torch."""

SYNTHETIC_SIZES = {"smoke": 160, "quick": 2_000, "full": 13_233}  # the synthetic tree per benchmark profile
