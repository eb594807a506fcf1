"""Whether an answer would be mostly noise, said before anything is spent: one home for the predicted relative error.

A preview (of a question: :class:`~pimento.release.interpretation.Interpretation`; of SQL:
:func:`pimento.release.sql_preview.preview_sql`) knows two things that are free to show: the 95%
half-width of the noise at the synthetic copy's sensitivity for the asked epsilon, and the answer on
the synthetic copy. Their ratio is the *predicted relative error*; above the custodian's
``[release] warn_relative_error`` (default 0.5: the noise would be at least half the answer) the
preview carries a warning in words, and the web page asks the analyst to confirm the spend.

Everything here is computed from public inputs and the synthetic copy (never the private data), so
showing it spends nothing. It is an estimate: the released interval comes from a DP bound of the
private residual sensitivity and is usually wider, and the copy's answer is not the private one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pimento.errors import MostlyNoiseError
from pimento.numbers import json_number

__all__ = ["PLANNER_EPSILONS", "PLANNER_TARGET", "Accuracy", "epsilon_for", "refuse_mostly_noise"]

#: The epsilons the preview's planner prices (besides the one asked for).
PLANNER_EPSILONS = ("0.1", "0.25", "0.5", "1", "2", "4")

#: The relative error the epsilon planner names an epsilon for ("for +-10% you need epsilon 0.8").
PLANNER_TARGET = Fraction(1, 10)

#: The preview's fields the refusal carries as its ``details`` (all public, from the synthetic copy).
REFUSAL_FIELDS = ("predicted_relative_error", "warn_relative_error", "epsilon_for_10_percent", "noise_warning")


def refuse_mostly_noise(shown: Mapping[str, Any], *, accept_noise: bool) -> None:
    """The one decision, before the charge: refuse (a 409 :class:`~pimento.errors.MostlyNoiseError`, its ``details`` the preview's
    :data:`REFUSAL_FIELDS`) when the preview ``shown`` (a SQL request's or a question's) warns that the answer would
    be mostly noise and the request did not accept it.

    No estimate (no synthetic copy charged to the ledger, a grouped query, an exact mode): no warning, no refusal.
    A courtesy to the analyst, not a privacy control: the warning is computed from public inputs and the copy.
    """
    warning = shown.get("noise_warning")
    if not warning or accept_noise:
        return
    better = shown.get("epsilon_for_10_percent")
    hint = ("send the same request with accept_noise = true to spend anyway (the web page: tick the box under the warning)"
            + (f", or ask at epsilon {better} (predicted to give about +-10%)" if better else ", or ask a broader question"))
    raise MostlyNoiseError(f"{warning}; nothing was spent", hint=hint, details={k: shown.get(k) for k in REFUSAL_FIELDS})


def _relative(half_width: Fraction | float | int, estimate: float | int | Fraction | None) -> Fraction | None:
    """``half_width`` over ``|estimate|`` (at least 1: a zero count is not divided by); None without an estimate."""
    if estimate is None:
        return None
    return Fraction(half_width) / max(abs(Fraction(estimate)), Fraction(1))


def _percent(x: Fraction) -> str:
    """``x`` as a percentage for people (3 significant digits)."""
    return f"{float(x) * 100:.3g}%"


def _share(x: Fraction) -> str:
    """``x`` of an answer, for people: "60% of", or a multiple beyond 10 ("21 times")."""
    return f"{float(x):.0f} times" if x > 10 else f"{_percent(x)} of"


def epsilon_for(target: Fraction, rows: Iterable[Mapping[str, Any]], estimate: float | int | Fraction | None) -> str | None:
    """The smallest planner epsilon whose predicted relative error is at most ``target``; None if none is.

    ``rows``: the planner's rows (``epsilon``, ``estimated_half_width_95``), computed on the synthetic copy.
    """
    rows = list(rows)
    meeting = []
    for row in rows:
        relative = _relative(Fraction(str(row["estimated_half_width_95"])), estimate)
        if relative is not None and relative <= target:
            meeting.append(Fraction(str(row["epsilon"])))
    return None if not meeting else next(str(row["epsilon"]) for row in rows if Fraction(str(row["epsilon"])) == min(meeting))


@dataclass(frozen=True)
class Accuracy:
    """The predicted accuracy of one release, from the synthetic copy and public inputs (module docstring).

    ``half_width``: the 95% half-width of the noise at the copy's sensitivity; ``estimate``: the
    answer on the copy (None when no copy could be read); ``threshold``: the custodian's
    ``warn_relative_error``; ``planner``: the planner's rows, for the epsilon that would reach
    :data:`PLANNER_TARGET`.
    """

    half_width: Fraction
    estimate: float | int | None
    threshold: Fraction
    planner: tuple[Mapping[str, Any], ...] = ()
    #: what the half-width is relative to, when not the estimate: an average's half bound range (its interval is
    #: clamped to the declared bounds, so a half-width is only small or large against that range, not against a
    #: value far from zero such as a year), with its words
    reference: Fraction | None = None
    reference_words: str = "the synthetic copy's answer"

    @property
    def scale(self) -> float | int | Fraction | None:
        """The denominator of the relative error: :attr:`reference`, else the estimate."""
        return self.reference if self.reference is not None else self.estimate

    @property
    def relative_error(self) -> Fraction | None:
        """The predicted relative error: ``half_width / max(|scale|, 1)``; None without an estimate."""
        return _relative(self.half_width, self.scale)

    @property
    def mostly_noise(self) -> bool:
        """Whether the predicted relative error exceeds the custodian's threshold."""
        relative = self.relative_error
        return relative is not None and relative > self.threshold

    def epsilon_for_target(self) -> str | None:
        """The smallest planner epsilon predicted to give at most +-10%, if any."""
        return epsilon_for(PLANNER_TARGET, self.planner, self.scale)

    def warning(self) -> str | None:
        """The warning in words when the answer would be mostly noise; None otherwise."""
        if not self.mostly_noise:
            return None
        relative = self.relative_error
        assert relative is not None
        better = self.epsilon_for_target()
        if better is not None:
            advice = f"epsilon {better} is predicted to give about +-10%"
        elif self.planner:
            advice = "no epsilon the planner prices gives +-10%: ask a broader question, or accept the noise"
        else:
            advice = "the noise shrinks about in proportion to 1/epsilon: spend more, or ask a broader question"
        return (f"this answer would be mostly noise: the noise is predicted at about +-{float(self.half_width):.3g} (95%), "
                f"{_share(relative)} {self.reference_words} {self.scale}, above the custodian's warning "
                f"threshold of {_percent(self.threshold)}; {advice}")

    def to_dict(self) -> dict[str, Any]:
        """The analyst-facing fields (every one from the synthetic copy and public inputs)."""
        relative = self.relative_error
        return {
            "predicted_relative_error": None if relative is None else json_number(relative),
            "warn_relative_error": json_number(self.threshold),
            "epsilon_for_10_percent": self.epsilon_for_target(),
            "noise_warning": self.warning(),
        }
