"""The ground floor every command-line tool and chart shares: one-line argument errors (:mod:`lfw.cli.args`), the
plain-text table (:mod:`lfw.cli.table`), the figure style and saver (:mod:`lfw.cli.figures`), a helper process
spoken to in JSON lines (:mod:`lfw.cli.child`) and the one writer of every file a later command reads, whole or
not at all (:mod:`lfw.cli.saving`). It imports nothing of ``lfw`` but :mod:`lfw.errors`."""
