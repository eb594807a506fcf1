"""One epsilon -> beta formula, the mechanisms' (issue 24).

The sensitivity layer takes beta and never derives it from epsilon: a second formula there
(``beta_from_epsilon``, removed) used the whole epsilon where the mechanism uses the noise's share
of it, so its beta was about 11% too large and an RS computed with it too small. The mechanism's
beta is ARCHITECTURE's: ``eps_noise / (2 ln(2/delta))`` for (eps, delta), ``eps_noise / 10`` for
pure eps, never above the exact value and within a hair of it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

import pimento.sensitivity
from pimento.mechanisms.smooth import float_down, mechanism_for

#: Parameter names that would mean a function derives something from a privacy budget.
BUDGET_PARAMETERS = {"epsilon", "eps", "delta", "budget", "epsilon_noise"}


def _sensitivity_callables() -> list[tuple[str, object]]:
    """Every function and method defined in a module of pimento.sensitivity, by qualified name."""
    out: list[tuple[str, object]] = []
    for info in pkgutil.iter_modules(pimento.sensitivity.__path__, "pimento.sensitivity."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                out.append((f"{module.__name__}.{name}", obj))
            elif inspect.isclass(obj):
                out += [(f"{module.__name__}.{name}.{m}", f) for m, f in vars(obj).items() if inspect.isfunction(f)]
    return out


def test_the_sensitivity_layer_has_no_epsilon_to_beta_function():
    callables = _sensitivity_callables()
    assert len(callables) > 20  # the walk found the package's functions
    offenders = [
        name
        for name, fn in callables
        if BUDGET_PARAMETERS & set(inspect.signature(fn).parameters)
        or "beta_from" in name.rsplit(".", 1)[-1]
    ]
    assert not offenders, f"epsilon -> beta belongs to pimento.mechanisms only: {offenders}"
    assert not [n for n in pimento.sensitivity.__all__ if "epsilon" in n or "beta_from" in n]


def _ln(x: int, digits: int = 60) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = digits
        return Decimal(x).ln()


@pytest.mark.parametrize(
    ("epsilon", "delta", "noise_share"),
    [("1", "1e-6", Fraction(9, 10)), ("0.5", "1e-9", Fraction(9, 10)), ("2", "0.001", Fraction(3, 4))],
)
def test_the_laplace_beta_is_eps_noise_over_2_ln_2_over_delta(epsilon, delta, noise_share):
    mechanism = mechanism_for(epsilon, delta, share=1 - noise_share)
    eps_noise = Fraction(epsilon) * noise_share
    assert mechanism.epsilon_noise == eps_noise
    log = _ln(int(2 / Fraction(delta)))  # 2/delta is an integer here; ln correct to ~1e-58
    with localcontext() as ctx:
        ctx.prec = 60
        above = Fraction(Decimal(eps_noise.numerator) / (2 * Decimal(eps_noise.denominator) * (log - Decimal("1e-55"))))
        below = Fraction(Decimal(eps_noise.numerator) / (2 * Decimal(eps_noise.denominator) * (log + Decimal("1e-55"))))
    beta = mechanism.beta()
    assert beta <= below  # never above the exact value: a smaller beta only makes RS larger
    assert beta >= above * (1 - Fraction(1, 10**7))  # and within a hair of it (ln is bounded to ~1e-9)
    assert mechanism.beta_float() == float_down(beta) and mechanism.beta_float() <= beta


@pytest.mark.parametrize(("epsilon", "noise_share"), [("1", Fraction(9, 10)), ("0.3", Fraction(1, 2)), ("7", Fraction(9, 10))])
def test_the_pure_epsilon_beta_is_eps_noise_over_10(epsilon, noise_share):
    mechanism = mechanism_for(epsilon, None, share=1 - noise_share)
    exact = Fraction(epsilon) * noise_share / 10
    beta = mechanism.beta()
    assert exact * (1 - Fraction(1, 1 << 38)) <= beta <= exact
    assert mechanism.beta_float() <= beta


def test_the_beta_is_the_noise_share_not_the_whole_epsilon():
    """The removed formula's error: at eps 1, delta 1e-6 the whole epsilon gives 0.03446, the mechanism 0.03102."""
    beta = mechanism_for("1", "1e-6").beta_float()
    assert 0.031015 < beta < 0.031016
    assert mechanism_for("1").beta_float() == pytest.approx(0.09, rel=1e-9)
