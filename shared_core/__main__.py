"""``python -m shared_core``: the ``recall-gate`` command."""

from __future__ import annotations

from .apps.cli import main

raise SystemExit(main())
