"""``ppdm`` commands of the sketch family (being ported from _legacy.py)."""

from __future__ import annotations

from . import cli  # noqa: F401
