"""The suite engine: what is measured (:mod:`~lfw.suite.matrix`, :mod:`~lfw.suite.profiles`), what a session
leaves out (:mod:`~lfw.suite.skips`), how a group runs (:mod:`~lfw.suite.runner`) and what each case records
(:mod:`~lfw.suite.case_record`), shared by the pytest plugin, the A/B pass server and a user's own dataset."""
