"""Registers the built-in release modes (the same extension point as a plug-in mode), in the paper's order."""

from __future__ import annotations

from pimento.release.modes.base import register_mode
from pimento.release.modes.ci import CI
from pimento.release.modes.contextual import CONTEXTUAL
from pimento.release.modes.dp import DP
from pimento.release.modes.split import SPLIT

for _mode in (CI, DP, SPLIT, CONTEXTUAL):
    register_mode(_mode)
