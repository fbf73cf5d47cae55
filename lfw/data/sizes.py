"""The synthetic trees the benchmark profiles use, by profile name (:mod:`lfw.suite.profiles` picks one each):
a tiny tree for smoke runs, a 2,000-image one for quick runs and one as large as LFW itself. Imports nothing, so
a profile can be read without loading torch."""

SYNTHETIC_SIZES = {"smoke": 160, "quick": 2_000, "full": 13_233}
