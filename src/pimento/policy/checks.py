"""Canonical checks over compiled views (Section 4.2.2): coverage, redundancy,
satisfiability, information implication.

* **Coverage** happens in :func:`~pimento.policy.compiler.compile_policy`: every clause
  compiles to at least one view or a PolicyError names it. Here we record, per clause, the
  views it produced.
* **Information implication** (:mod:`pimento.policy.implication`): a step of
  :func:`~pimento.policy.compiler.compile_policy`, which turns the policy into ``P+`` (a negative
  norm's locations grow by the columns that reveal them through functional dependencies and
  foreign keys). Here it is reported, not applied again.
* **Redundancy** (:mod:`pimento.policy.redundancy`): role and condition views with the same SQL are merged into one; norms that
  are identical after that (sign, roles, data cells, purpose, condition) are merged. Views
  with different SQL that return the same rows on this database are *reported*, not merged:
  merging them would change the policy's meaning once the data changes.
* **Satisfiability** (:mod:`pimento.policy.satisfiability`): for each positive norm, a witness flow (sender, recipient, purpose,
  cell) permitted by it and prohibited by no negative norm is searched with SQL on the
  database. Norms without a witness are reported with the reason (contradicted by negative
  norms, or empty views); a policy where no flow at all is permitted raises PolicyError.
* **Unresolved subjects** (reported): for each norm that tests the data subject, the
  locations whose cells have no resolvable subject, where the norm cannot be evaluated and
  fails closed (a deny prohibits, a permit does not permit).
* **Observable denials** (reported; :mod:`pimento.policy.observable`): deny norms with a row
  filter on a relation whose other columns a permit norm governs and the norm does not withhold
  on the same rows: there a withheld cell in a visible row shows that the row passes the filter.
  ``pimento serve`` refuses such a policy unless the custodian acknowledges each one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pimento.engines.base import Engine
from pimento.errors import PolicyError
from pimento.policy.compiled import CompiledPolicy
from pimento.policy.formula import subject_resolved_sql
from pimento.policy.implication import apply_implications, policy_dependencies
from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Not, Policy, RoleIs
from pimento.policy.observable import observable_denials
from pimento.policy.redundancy import canonical_sql, redundancy as _redundancy
from pimento.policy.satisfiability import satisfiability as _satisfiability
from pimento.policy.views_sql import NO_SUBJECT, location_view_sql, norm_views
from pimento.schema import Catalog

__all__ = ["apply_implications", "canonical_sql", "run_checks"]


# --------------------------------------------------------------------------- unresolved subjects


def _mentions_subject(compiled: CompiledPolicy, cond: Cond) -> bool:
    if isinstance(cond, RoleIs):
        return cond.variable == "subject"
    if isinstance(cond, Atom):
        return "subject" in compiled.conditions[cond.name].variables
    if isinstance(cond, Not):
        return _mentions_subject(compiled, cond.arg)
    if isinstance(cond, (All, AnyOf)):
        return any(_mentions_subject(compiled, a) for a in cond.args)
    return False


def _unresolved_subjects(compiled: CompiledPolicy, engine: Engine | None) -> list[dict[str, Any]]:
    """Cells on which a norm cannot be evaluated, because it tests the data subject and the
    cell's subject is unresolved (the column has no subject, or the row's subject is NULL or
    names no subject-principal row). There the subject atoms are unknown: a deny norm
    prohibits the cell, a permit norm does not permit it (fail closed). One entry per
    (norm, location); ``cells`` counts the location's cells with an unresolved subject on
    this database (``None`` without an engine)."""
    out: list[dict[str, Any]] = []
    for norm in compiled.norms:
        tests = norm.subject != ANY or _mentions_subject(compiled, norm.condition) or \
            (not norm.positive and _mentions_subject(compiled, norm.when))
        if not tests:
            continue
        for loc_id in compiled.norm_locations[norm.id]:
            loc = compiled.locations[loc_id]
            static = loc.subject_sql == NO_SUBJECT
            cells = None
            if engine is not None:
                where = "TRUE" if static else f"NOT {subject_resolved_sql(compiled, 'd.subject')}"
                cells = int(engine.execute(f"SELECT COUNT(*) FROM ({location_view_sql(loc)}) AS d WHERE {where}").rows[0][0])
                if not static and cells == 0:
                    continue
            elif not static:
                continue
            out.append({
                "norm": norm.id,
                "sign": norm.sign,
                "location": f"{loc.relation}.{loc.attribute}",
                "cells": cells,
                "reason": (f"no column of {loc.relation} references the subject principal {compiled.subject_principal!r}"
                           if static else "the row's subject is NULL or names no subject-principal row"),
                "effect": "denied where the rest of the norm holds (fail closed)" if not norm.positive
                else "never permitted by this norm",
            })
    return out


# --------------------------------------------------------------------------- all checks


def run_checks(compiled: CompiledPolicy, catalog: Catalog, engine: Engine | None = None, *, policy: Policy | None = None,
               require_satisfiable: bool = True, progress: Any = None) -> CompiledPolicy:
    """Run the checks: the checked policy, ``compiled`` in its canonical form (redundant views and
    norms merged) with the report in ``checks`` (plain JSON data: ``checks_report()``).
    ``compiled`` itself is a frozen value and does not change.

    Information implication is a step of :func:`~pimento.policy.compiler.compile_policy`: its
    record is reported here, not applied again (a policy that records none gets it here).

    ``progress`` (optional) is called with a short line before each long step (each norm's
    satisfiability search runs queries over the whole database).

    Raises:
        PolicyError: the policy is unsatisfiable (no flow at all is permitted), naming the
            contradictions found.
    """
    def step(text: str) -> None:
        if progress is not None:
            progress(text)

    coverage = {n.id: sorted(norm_views(compiled, n.id)) for n in compiled.norms}
    step("information implication")
    # compile_policy applied it; a policy without the record (an older file) gets it here
    if compiled.implication is None:
        compiled = apply_implications(compiled, catalog, policy_dependencies(catalog, policy))
    implication = compiled.implication
    step("redundancy")
    compiled, redundancy = _redundancy(compiled, engine, catalog)
    satisfiability = _satisfiability(compiled, engine, progress)
    step("unresolved subjects")
    unresolved = _unresolved_subjects(compiled, engine)
    report = {
        "coverage": {"clauses": len(coverage), "views": coverage, "ok": True},
        "information_implication": implication,
        "redundancy": redundancy,
        "satisfiability": satisfiability,
        "unresolved_subjects": unresolved,
        "observable_denials": observable_denials(compiled),
    }
    compiled = replace(compiled, checks=report)
    if require_satisfiable:
        positive = [n.id for n in compiled.norms if n.positive]
        if not positive:
            raise PolicyError("unsatisfiable policy: it has no positive norm, so every flow is denied",
                              hint="add a 'permit' norm")
        if engine is not None and not satisfiability["witnesses"]:
            reasons = "; ".join(f"{k}: {v}" for k, v in satisfiability["unsatisfied"].items())
            raise PolicyError(f"unsatisfiable policy: no information flow is permitted ({reasons})",
                              clause=positive[0])
        if engine is None and len(satisfiability["contradictions"]) and \
                {c["permit"] for c in satisfiability["contradictions"]} >= set(positive):
            raise PolicyError("unsatisfiable policy: " + "; ".join(c["reason"] for c in satisfiability["contradictions"]),
                              clause=positive[0])
    return compiled
