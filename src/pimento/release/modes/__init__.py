"""The release modes, one module each, behind one protocol (:class:`ReleaseMode`), registered by name.

The paper's Table "End-to-end privacy modes":

* ``ci`` (:mod:`.ci`): the SQL answered exactly on the authorized data of the context; no budget.
* ``dp`` (:mod:`.dp`): a noisy count calibrated to residual sensitivity, ``(epsilon, delta)``-DP.
* ``split`` (:mod:`.split`): the authorized part exact, the remainder a DP count.
* ``contextual`` (:mod:`.contextual`): one noisy count calibrated to contextual residual
  sensitivity, ``(epsilon, delta)``-contextual DP for the context.

:func:`release_mode` finds a mode by name; :func:`register_mode` adds one (a new mode or aggregate is
one module and one registration; :class:`~pimento.release.session.Session` never tests a mode's
name). The noisy modes share :class:`pimento.release.modes.noisy.NoisyMode`. Only the protocol and
the registry are imported here: the mode modules load on the first look-up.
"""

from __future__ import annotations

from pimento.release.modes.base import (
    Mode,
    Private,
    ReleaseMode,
    check_neighbourhood,
    check_requirements,
    parse_mode,
    register_mode,
    registered_modes,
    release_mode,
    unregister_mode,
)

__all__ = [
    "Mode",
    "Private",
    "ReleaseMode",
    "check_neighbourhood",
    "check_requirements",
    "parse_mode",
    "register_mode",
    "registered_modes",
    "release_mode",
    "unregister_mode",
]
