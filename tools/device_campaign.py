"""The device campaign's entry point on a bare GPU machine, where the checkout is not installed:
``python3 tools/device_campaign.py --out DIR ...`` runs :mod:`lfw.gate.device_campaign` from this checkout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lfw.gate.device_campaign import main  # after the checkout is on the path

if __name__ == "__main__":
    sys.exit(main())
