"""Sensitivity-guided MCTS over DP-compatible actions, run on the synthetic database only."""

from __future__ import annotations

from pimento.search.actions import Action, AddRelation, PartialQuery, SetCount, Stop, decompose
from pimento.search.evaluate import SensitivityInfo
from pimento.search.expanders import Expander, NodeState, SchemaGraphExpander, make_expander, register_expander
from pimento.search.config import SearchConfig
from pimento.search.mcts import Alternative, SearchResult, SensitivitySearch

__all__ = [
    "Action",
    "AddRelation",
    "Alternative",
    "Expander",
    "NodeState",
    "PartialQuery",
    "SchemaGraphExpander",
    "SearchConfig",
    "SearchResult",
    "SensitivityInfo",
    "SensitivitySearch",
    "SetCount",
    "Stop",
    "decompose",
    "make_expander",
    "register_expander",
]
