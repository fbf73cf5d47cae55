"""What the command-line tools share: one-line argument errors (:mod:`lfw.cli.args`), the plain-text table
(:mod:`lfw.cli.table`), the timing printout of ``-get_timing`` (:mod:`lfw.cli.timing`) and the batch grid of
``-visualize_batch`` (:mod:`lfw.cli.visualize`)."""
