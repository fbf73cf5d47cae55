"""Statistics shared by the suite, the gate and the report, free of torch: paired comparisons
(:mod:`lfw.stats.paired`) and the spread of rounds (:mod:`lfw.stats.variation`)."""
