"""The search's settings: :class:`SearchConfig`, the named variants (the paper's ablations) and vote rules.

A module of plain values, apart from the search itself (:mod:`pimento.search.mcts`), so that the CLI
can offer the variants in ``--help`` and the release layer can build a configuration without
loading the search.

    >>> config_for_variant("no-pruning", rollouts=3).pruning
    False
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from pimento.errors import UserError

__all__ = ["FINAL_VOTES", "VARIANTS", "SearchConfig", "config_for_variant", "votes_for_samples"]


#: How warm-start proposals vote in the final selection (see ``SearchConfig.final_votes``).
FINAL_VOTES = ("ranked", "proposals", "all")


@dataclass(frozen=True)
class SearchConfig:
    """Knobs of the search; the defaults follow the paper (10 rollouts, expansion size 5)."""

    rollouts: int = 10
    expansion_size: int = 5
    widening_k: float = 1.0
    exploration_c: float = math.sqrt(2)
    lambda_s: float = 0.5
    alpha_prune: float = 0.3
    bucket_relative: float = 0.0
    seed: int = 0
    max_relations: int = 5
    max_depth: int = 12
    # Ablations (all True is the full method).
    warm_start: bool = True
    pruning: bool = True
    sensitivity_prior: bool = True
    sensitivity_reward: bool = True
    direct_rs_reward: bool = False
    #: AlphaSQL-style: MCTS without any sensitivity signal (no reward, prior, pruning or RS tie-break).
    ignore_sensitivity: bool = False
    #: Final selection when the chosen cluster's answer is 0 on the synthetic database: take its
    #: incumbent among the formulations of its best-ranked warm-start intent (False: among all
    #: its members, as the paper states it, whatever the answer).
    intent_incumbent: bool = True
    #: Which queries vote for a cluster in the final selection. The search's own reformulations
    #: of a proposal keep its reading by construction, so counting them would favour readings
    #: that happen to have many formulations; by default only warm-start proposals vote:
    #: "ranked" (a ranked list, best first, as the offline parser gives: proposal r weighs 2^-r,
    #: so the best-ranked reading that runs on the synthetic copy is kept), "proposals" (unordered
    #: samples, as an LLM gives: one vote each, ties to the first), or "all" (every evaluated
    #: query, the paper's literal rule).
    final_votes: str = "ranked"

    def __post_init__(self) -> None:
        if self.final_votes not in FINAL_VOTES:
            raise UserError(f"unknown SearchConfig.final_votes {self.final_votes!r}", hint=f"use one of {', '.join(FINAL_VOTES)}")


#: The search variants selectable by name: the full method and the paper's ablations.
VARIANTS: dict[str, dict[str, Any]] = {
    "full": {},
    "no-warm-start": {"warm_start": False},
    "no-pruning": {"pruning": False},
    "no-sensitivity-prior": {"sensitivity_prior": False},
    "no-sensitivity-reward": {"sensitivity_reward": False},
    "direct-rs-reward": {"direct_rs_reward": True},
    "alphasql": {"ignore_sensitivity": True},
    "all-votes": {"final_votes": "all"},
    "proposal-votes": {"final_votes": "proposals"},
}


def votes_for_samples(config: SearchConfig) -> SearchConfig:
    """The config for warm starts that are unordered samples (LLM): one vote per proposal.

    Leaves a variant that chose its own rule (``all-votes``) alone.
    """
    return dataclasses.replace(config, final_votes="proposals") if config.final_votes == "ranked" else config


def config_for_variant(variant: str, **settings: Any) -> SearchConfig:
    """A SearchConfig for a named variant (see :data:`VARIANTS`), with other settings given."""
    if variant not in VARIANTS:
        raise UserError(f"unknown search variant {variant!r}", hint=f"use one of {', '.join(VARIANTS)}")
    return SearchConfig(**settings, **VARIANTS[variant])
