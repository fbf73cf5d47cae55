"""The benchmarks' pytest wiring lives in one plugin module, :mod:`benchmarks.plugin` (options, the machine-info
hook, session fixtures); loading it here makes it apply to ``pytest`` from the repository root, ``make test`` and
``make bench`` alike."""

pytest_plugins = ("benchmarks.plugin",)
