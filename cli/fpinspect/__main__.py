"""``python -m fpinspect``."""

from __future__ import annotations

import sys

from fpinspect.main import main

if __name__ == "__main__":
    sys.exit(main())
