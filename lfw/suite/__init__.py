"""The suite engine: what is measured (:mod:`lfw.suite.matrix`, :mod:`lfw.suite.profiles`), what a session
leaves out and why (:mod:`lfw.suite.skips`), how a group is run (:mod:`lfw.suite.runner`: rotation members,
ceilings, warm-up) and what each case records (:mod:`lfw.suite.record`). The pytest plugin, the A/B pass server
and a user's own dataset (:mod:`lfw.suite.user_dataset`) all go through it; pytest-benchmark's writers save
through :mod:`lfw.suite.saving`."""
