"""Satisfiability check over compiled views (Section 4.2.2).

For each positive norm, a witness flow (sender, recipient, purpose, cell) permitted by it and
prohibited by no negative norm is searched with SQL on the database. Norms without a witness are
reported with the reason (contradicted by negative norms, or empty views); norms a negative norm
prohibits unconditionally are found statically (without a database).
"""

from __future__ import annotations

from typing import Any

from pimento.engines.base import Engine
from pimento.errors import EngineError, PolicyError
from pimento.policy.compiler import PREFIX, CompiledPolicy, quote
from pimento.policy.formula import NormSQL, cond_cte, norm_predicates, permits_sql, prohibits_sql, role_cte
from pimento.policy.model import ANY, All, Atom, Cond, Const, Norm

__all__ = ["satisfiability", "static_contradictions", "witness"]


def _top_atoms(cond: Cond) -> list[Atom]:
    if isinstance(cond, Atom):
        return [cond]
    if isinstance(cond, All):
        return [a for arg in cond.args for a in _top_atoms(arg)]
    return []


def _kind_of(compiled: CompiledPolicy, norm: Norm, var: str) -> str:
    role = getattr(norm, var)
    if role != ANY:
        return compiled.roles[role].principal
    for atom in _top_atoms(norm.condition):
        view = compiled.conditions[atom.name]
        if var in view.principals:
            return view.principals[var]
    others = [k for k in compiled.principals if k != compiled.subject_principal]
    return others[0] if others else compiled.subject_principal


def witness(compiled: CompiledPolicy, engine: Engine, norm: Norm, purpose: str, with_negatives: bool) -> tuple | None:
    """A flow permitted by ``norm`` (and, with ``with_negatives``, prohibited by no negative norm).

    The search is one conjunctive SQL query: the norm's data view joined with the condition
    views of the top-level conjunction of its condition on shared variables (hash joins, not
    a cross product of candidate senders and recipients); the full norm formula and the
    negative norms are then checked on each joined row.
    """
    sk, rk = _kind_of(compiled, norm, "sender"), _kind_of(compiled, norm, "recipient")
    kinds = {"sender": sk, "recipient": rk}
    froms = [f"({compiled.data_view(norm.id)}) AS x"]
    binding = {"subject": "x.subject"}
    eqs: list[str] = []
    used_conds: set[str] = set()
    for k, atom in enumerate(_top_atoms(norm.condition)):
        view = compiled.conditions[atom.name]
        if any(view.principals.get(v, kinds.get(v)) != kinds.get(v) for v in view.variables if v != "subject"):
            return None  # a conjunct that can never hold for these kinds
        alias = f"a{k}"
        froms.append(f"{cond_cte(atom.name)} AS {alias}")
        used_conds.add(atom.name)
        for var in view.variables:
            if var in binding:
                eqs.append(f"{alias}.{var} = {binding[var]}")
            else:
                binding[var] = f"{alias}.{var}"
    used_roles: set[str] = set()
    for var in ("sender", "recipient"):
        if var not in binding:
            role = getattr(norm, var)
            if role != ANY:
                froms.append(f"{role_cte(role)} AS {var}_c")
                used_roles.add(role)
            else:
                p = compiled.principals[kinds[var]]
                froms.append(f"(SELECT DISTINCT CAST({quote(p['key'])} AS VARCHAR) AS agent FROM {quote(p['relation'])}) AS {var}_c")
            binding[var] = f"{var}_c.agent"
    # the purpose and every purpose including it: norms about those apply to it too (hierarchy)
    purposes = compiled.purpose_closure(purpose)
    pos_ns = NormSQL(compiled, sender_sql=binding["sender"], recipient_sql=binding["recipient"], sender_kind=sk,
                     recipient_kind=rk, purposes=purposes, subject_sql="x.subject")
    pred = permits_sql(pos_ns.cond(norm_predicates(norm)))
    if pred == "FALSE":
        return None
    ns = NormSQL(compiled, sender_sql=binding["sender"], recipient_sql=binding["recipient"], sender_kind=sk,
                 recipient_kind=rk, purposes=purposes)
    negs = []
    # Spark resolves a correlated column one query level up only: there the negative norms'
    # nested EXISTS (over ``d.subject`` and the bound sender/recipient) run as a join of the
    # candidate flows with each negative data view, and the candidates they prohibit are removed
    spark = getattr(engine, "dialect", None) == "spark"
    cand_ns = NormSQL(compiled, sender_sql="c.sender", recipient_sql="c.recipient", sender_kind=sk,
                      recipient_kind=rk, purposes=purposes)
    spark_negs = []
    if with_negatives:
        mine = {(compiled.locations[i].relation, compiled.locations[i].attribute) for i in compiled.norm_locations[norm.id]}
        for other in compiled.norms:
            if other.positive:
                continue
            theirs = {(compiled.locations[i].relation, compiled.locations[i].attribute)
                      for i in compiled.norm_locations[other.id]}
            if not mine & theirs:
                continue
            npred = ns.cond(norm_predicates(other))
            if npred == "FALSE":
                continue
            negs.append(
                f"NOT EXISTS (SELECT 1 FROM ({compiled.data_view(other.id)}) AS d WHERE d.relation = x.relation "
                f"AND d.row_key = x.row_key AND d.attribute = x.attribute AND {prohibits_sql(npred)})"
            )
            if spark:
                spark_negs.append(
                    f"SELECT c.* FROM {PREFIX}cand AS c JOIN ({compiled.data_view(other.id)}) AS d ON d.relation = "
                    f"c.relation AND d.row_key = c.row_key AND d.attribute = c.attribute "
                    f"WHERE {prohibits_sql(cand_ns.cond(norm_predicates(other)))}"
                )
    roles = used_roles | pos_ns.roles_used | ns.roles_used | cand_ns.roles_used
    conds = used_conds | pos_ns.conditions_used | ns.conditions_used | cand_ns.conditions_used
    ctes = [f"{role_cte(r)} AS ({compiled.roles[r].sql})" for r in sorted(roles)]
    ctes += [f"{cond_cte(c)} AS ({compiled.conditions[c].sql})" for c in sorted(conds)]
    where = " AND ".join(eqs + [pred] + negs)
    sql = (
        ("WITH " + ", ".join(ctes) + " " if ctes else "")
        + f"SELECT {binding['sender']}, {binding['recipient']}, x.relation, x.row_key, x.attribute "
        f"FROM {', '.join(froms)} WHERE {where} LIMIT 1"
    )
    if spark_negs:
        cand = (f"{PREFIX}cand AS (SELECT DISTINCT {binding['sender']} AS sender, {binding['recipient']} AS recipient, "
                f"x.relation, x.row_key, x.attribute FROM {', '.join(froms)} WHERE {' AND '.join(eqs + [pred])})")
        sql = (f"WITH {', '.join([*ctes, cand])} SELECT * FROM {PREFIX}cand EXCEPT "
               f"({' UNION '.join(spark_negs)}) LIMIT 1")
    try:
        rows = engine.execute(sql).rows
    except EngineError as exc:
        raise PolicyError(f"clause {norm.id}: the satisfiability check failed on the database: {exc.message}",
                          clause=norm.id,
                          hint="on a large database give the checks more time: `pimento policy compile ... --timeout 600`"
                          ) from None
    return tuple(rows[0]) if rows else None


def static_contradictions(compiled: CompiledPolicy) -> list[dict[str, str]]:
    out = []
    for p in compiled.norms:
        if not p.positive:
            continue
        mine = {(compiled.locations[i].relation, compiled.locations[i].attribute, compiled.locations[i].where_sql)
                for i in compiled.norm_locations[p.id]}
        for n in compiled.norms:
            if n.positive or n.condition != Const(False) or n.when != Const(True):
                continue
            theirs = {(compiled.locations[i].relation, compiled.locations[i].attribute, compiled.locations[i].where_sql)
                      for i in compiled.norm_locations[n.id]}
            covers = all(getattr(n, v) in (ANY, getattr(p, v)) for v in ("sender", "recipient", "subject")) \
                and n.purpose in (ANY, p.purpose) and mine <= theirs
            if covers:
                out.append({"permit": p.id, "deny": n.id,
                            "reason": f"{n.id} unconditionally prohibits every flow {p.id} permits"})
    return out


def satisfiability(compiled: CompiledPolicy, engine: Engine | None, progress: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"witnesses": {}, "unsatisfied": {}, "contradictions": static_contradictions(compiled)}
    if engine is None:
        return result
    positive = [n for n in compiled.norms if n.positive]
    for i, norm in enumerate(positive, start=1):
        if progress is not None:
            progress(f"satisfiability: searching a witness flow for {norm.id} ({i}/{len(positive)})")
        purposes = [norm.purpose] if norm.purpose != ANY else list(compiled.purposes)
        found = None
        for purpose in purposes:
            w = witness(compiled, engine, norm, purpose, with_negatives=True)
            if w is not None:
                found = {"sender": w[0], "recipient": w[1], "purpose": compiled.purposes[purpose][0],
                         "cell": {"relation": w[2], "row_key": w[3], "attribute": w[4]}}
                break
        if found:
            result["witnesses"][norm.id] = found
            continue
        alone = any(witness(compiled, engine, norm, p, with_negatives=False) for p in purposes)
        result["unsatisfied"][norm.id] = (
            "every flow it permits is prohibited by a negative norm (contradiction)" if alone
            else "its views admit no flow on this database (roles, condition and data never hold together)"
        )
    return result
