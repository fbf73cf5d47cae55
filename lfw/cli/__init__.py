"""The ground floor every command-line tool and chart shares (argument errors, table, figures, child processes,
atomic saving); it imports nothing of ``lfw`` but :mod:`lfw.errors`."""
