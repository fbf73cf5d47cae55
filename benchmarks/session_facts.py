"""Facts the benchmarks' session fixtures learn (dataset, worker cap, per-core rates) for ``machine_info``.

The fixtures store them in ``config.stash[SESSION_FACTS]``; the root conftest's machine-info hook, which runs
when pytest-benchmark writes its JSON, copies them in. A module of its own, because two ``conftest.py`` files
cannot import each other by name.
"""

from __future__ import annotations

import pytest

SESSION_FACTS: pytest.StashKey[dict] = pytest.StashKey()
