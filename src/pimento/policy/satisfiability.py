"""Satisfiability check over compiled views (Section 4.2.2).

For each positive norm, a witness flow (sender, recipient, purpose, cell) permitted by it and
prohibited by no negative norm is searched with SQL on the database. Norms without a witness are
reported with the reason (contradicted by negative norms, or empty views); norms a negative norm
prohibits unconditionally are found statically (without a database).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pimento.engines.base import Engine
from pimento.errors import EngineError, PolicyError
from pimento.policy.compiled import CompiledPolicy
from pimento.policy.formula import NormSQL, cond_cte, norm_predicates, permits_sql, prohibits_sql, role_cte
from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Const, Norm, Not, RoleIs
from pimento.policy.views_sql import PREFIX, data_view_sql, location_view_sql, quote

__all__ = ["FIRST_SUBJECTS", "satisfiability", "static_contradictions", "witness"]

#: The witness search looks first among the cells of this many subjects (the first by their
#: identifier), then, if none of them gives a flow, among all.
FIRST_SUBJECTS = 1000


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


def _role_references(compiled: CompiledPolicy, conds: list[Cond], var: str) -> set[str] | None:
    """The roles ``var`` is tested for in ``conds``; None when a condition view mentions it.

    A variable only ever tested for roles cannot tell apart two identities with the same roles:
    one of each role combination stands for all (see :func:`witness`).
    """
    roles: set[str] = set()

    def walk(cond: Cond) -> bool:
        if isinstance(cond, RoleIs):
            if cond.variable == var:
                roles.add(cond.role)
            return True
        if isinstance(cond, Atom):
            return var not in compiled.conditions[cond.name].variables
        if isinstance(cond, Not):
            return walk(cond.arg)
        if isinstance(cond, (All, AnyOf)):
            return all(walk(a) for a in cond.args)
        return True

    return roles if all(walk(c) for c in conds) else None


def _cell_eq(a: str, b: str) -> str:
    return f"{a}.relation = {b}.relation AND {a}.row_key = {b}.row_key AND {a}.attribute = {b}.attribute"


def witness(compiled: CompiledPolicy, engine: Engine, norm: Norm, purpose: str, with_negatives: bool, *,
            progress: Callable[[str], None] | None = None) -> tuple | None:
    """A flow permitted by ``norm`` (and, with ``with_negatives``, prohibited by no negative norm).

    Returns ``(sender, recipient, relation, row_key, attribute)`` or None. The search never
    builds the product of the norm's cells with its candidate contexts (at 100k demo patients
    that product was hundreds of millions of rows). It relies on what a norm formula can see of
    a cell: its subject, and for each negative norm whether that norm's data view holds the
    cell (and with which subject). So:

    1. *Cell classes*: one row per distinct ``(subject, f_1..f_k)`` of the norm's cells, where
       ``f_i`` is 0 when the i-th relevant negative norm's data view does not hold the cell, 1
       when it holds it with the same subject only, and 2 otherwise (then the class keeps the
       cell itself and that norm is tested on the cell as before). Each ``f_i`` is a hash join
       of the cells with that view grouped per cell: linear in the data.
    2. *Contexts*: the condition views of the top-level conjunction joined on their shared
       variables and on the class's subject (hash joins); a sender or recipient no condition
       binds ranges over its role (or principal), reduced to one identity per combination of
       the roles the formulas test it for, when no condition view mentions it (the formulas
       cannot tell such identities apart).
    3. The norm's formula and each relevant negative norm's (for the classes whose ``f_i`` says
       its view holds the cell) are tested on each joined row; ``LIMIT 1``. This runs first on
       the cells of the first :data:`FIRST_SUBJECTS` subjects (and those without subject),
       where a satisfiable norm usually has a flow, and only if none is found there on all.
    4. For a class without its own cell, one cell of the class is then fetched: every cell of a
       class gives the same answer for every context.

    ``progress`` (optional) is told when the search goes on to all subjects.
    """
    sk, rk = _kind_of(compiled, norm, "sender"), _kind_of(compiled, norm, "recipient")
    kinds = {"sender": sk, "recipient": rk}
    froms: list[str] = []
    binding = {"subject": "k.subject"}
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
    # the negative norms that govern a column of this norm's cells
    negatives: list[Norm] = []
    if with_negatives:
        mine = {(compiled.locations[i].relation, compiled.locations[i].attribute) for i in compiled.norm_locations[norm.id]}
        for other in compiled.norms:
            theirs = {(compiled.locations[i].relation, compiled.locations[i].attribute)
                      for i in compiled.norm_locations[other.id]}
            if not other.positive and mine & theirs:
                negatives.append(other)
    formulas = [norm_predicates(norm)] + [norm_predicates(n) for n in negatives]
    used_roles: set[str] = set()
    for var in ("sender", "recipient"):
        if var not in binding:
            role = getattr(norm, var)
            if role != ANY:
                domain = f"SELECT agent FROM {role_cte(role)}"
                used_roles.add(role)
            else:
                p = compiled.principals[kinds[var]]
                domain = f"SELECT DISTINCT CAST({quote(p['key'])} AS VARCHAR) AS agent FROM {quote(p['relation'])}"
            tested = _role_references(compiled, formulas, var)
            if tested is not None:
                # one identity per combination of the roles tested (MIN ignores NULL: an all-NULL
                # group keeps NULL; an empty domain has no group, as the domain itself)
                tested = {r for r in tested if compiled.roles[r].principal == kinds[var]}
                used_roles |= tested
                flags = [f"CASE WHEN EXISTS (SELECT 1 FROM {role_cte(r)} AS r WHERE r.agent = dom.agent) THEN 1 ELSE 0 END "
                         f"AS g{j}" for j, r in enumerate(sorted(tested))] or ["0 AS g0"]
                groups = ", ".join(f"q.g{j}" for j in range(len(flags)))
                domain = (f"SELECT MIN(q.agent) AS agent FROM (SELECT dom.agent, {', '.join(flags)} "
                          f"FROM ({domain}) AS dom) AS q GROUP BY {groups}")
            froms.append(f"({domain}) AS {var}_c")
            binding[var] = f"{var}_c.agent"
    # the purpose and every purpose including it: norms about those apply to it too (hierarchy)
    purposes = compiled.purpose_closure(purpose)

    def norm_sql(subject: str, sender: str = binding["sender"], recipient: str = binding["recipient"]) -> NormSQL:
        return NormSQL(compiled, sender_sql=sender, recipient_sql=recipient, sender_kind=sk, recipient_kind=rk,
                       purposes=purposes, subject_sql=subject)

    pos_ns = norm_sql("k.subject")
    pred = permits_sql(pos_ns.cond(norm_predicates(norm)))
    if pred == "FALSE":
        return None
    ns_list = [pos_ns]
    # Spark resolves a correlated column one query level up only: there the cells a negative
    # norm holds under another subject (f = 2, which needs a nested EXISTS) are tested as a
    # join of the candidate flows with that norm's data view, and the candidates it prohibits
    # are removed (EXCEPT)
    spark = getattr(engine, "dialect", None) == "spark"
    negs: list[str] = []
    spark_negs: list[str] = []
    flagged: list[tuple[int, Norm]] = []
    for other in negatives:
        k_ns, d_ns = norm_sql("k.subject"), norm_sql("d.subject")
        ns_list += [k_ns, d_ns]
        same = k_ns.cond(norm_predicates(other))
        if same == "FALSE":
            continue  # never prohibits in this context
        i = len(flagged)
        flagged.append((i, other))
        on_cell = (f"NOT EXISTS (SELECT 1 FROM ({data_view_sql(compiled, other.id)}) AS d WHERE {_cell_eq('d', 'k')} "
                   f"AND {prohibits_sql(d_ns.cond(norm_predicates(other)))})")
        if spark:
            # the candidates' alias is not ``c``: NormSQL's condition subqueries use that alias, so
            # ``c.recipient`` there would read the condition view's own column (always equal)
            c_ns = norm_sql("d.subject", "cn.sender", "cn.recipient")
            ns_list.append(c_ns)
            negs.append(f"(k.f{i} <> 1 OR NOT {prohibits_sql(same)})")
            spark_negs.append(
                f"SELECT cn.* FROM {PREFIX}cand AS cn JOIN ({data_view_sql(compiled, other.id)}) AS d ON {_cell_eq('d', 'cn')} "
                f"WHERE cn.f{i} = 2 AND {prohibits_sql(c_ns.cond(norm_predicates(other)))}"
            )
        else:
            negs.append(f"(k.f{i} = 0 OR (k.f{i} = 1 AND NOT {prohibits_sql(same)}) OR (k.f{i} = 2 AND {on_cell}))")
    roles = used_roles.union(*(n.roles_used for n in ns_list))
    conds = used_conds.union(*(n.conditions_used for n in ns_list))
    ctes = [f"{role_cte(r)} AS ({compiled.roles[r].sql})" for r in sorted(roles)]
    ctes += [f"{cond_cte(c)} AS ({compiled.conditions[c].sql})" for c in sorted(conds)]
    classes = {first: _class_ctes(compiled, norm, [o for _, o in flagged], first=first) for first in (True, False)}
    fcols = [f"k.f{i}" for i, _ in flagged]
    cell = ["k.relation", "k.row_key", "k.attribute"] if flagged else ["CAST(NULL AS VARCHAR)"] * 3
    cols = [f"{binding['sender']} AS sender", f"{binding['recipient']} AS recipient", "k.subject AS subject",
            *fcols, *(f"{c} AS {n}" for c, n in zip(cell, ("relation", "row_key", "attribute")))]
    where = " AND ".join(eqs + [pred] + negs)

    def search(first: bool) -> list[tuple]:
        body = f"SELECT {', '.join(cols)} FROM {PREFIX}k AS k, {', '.join(froms)} WHERE {where}"
        with_ = [*ctes, *classes[first]]
        if spark_negs:
            sql = (f"WITH {', '.join([*with_, f'{PREFIX}cand AS (SELECT DISTINCT * FROM ({body}) AS b)'])} "
                   f"SELECT * FROM {PREFIX}cand EXCEPT ({' UNION '.join(spark_negs)}) LIMIT 1")
        else:
            sql = f"WITH {', '.join(with_)} {body} LIMIT 1"
        return _run(engine, norm, sql)

    # first among the cells of a few subjects (a flow found there is a flow), then among all
    rows = search(True)
    if not rows:
        if progress is not None:
            progress(f"satisfiability: {norm.id} ({purpose}): no flow among the cells of the first {FIRST_SUBJECTS} "
                     "subjects, searching all")
        rows = search(False)
    if not rows:
        return None
    sender, recipient, subject, *rest = rows[0]
    flags, found = rest[:len(fcols)], rest[len(fcols):]
    if found[0] is not None:
        return (sender, recipient, *found)
    # a class without its own cell: one of its cells
    match = ["x.subject IS NULL" if subject is None else "x.subject = ?"]
    match += [f"x.f{i} = {int(f)}" for i, f in enumerate(flags)]
    cell_sql = (f"WITH {', '.join(_class_ctes(compiled, norm, [o for _, o in flagged], classes=False))} "
                f"SELECT x.relation, x.row_key, x.attribute FROM {PREFIX}x AS x WHERE {' AND '.join(match)} LIMIT 1")
    cells = _run(engine, norm, cell_sql, [] if subject is None else [subject])
    if not cells:  # pragma: no cover - the class came from these cells
        raise PolicyError(f"clause {norm.id}: the satisfiability check found a class of cells it cannot read back",
                          clause=norm.id)
    return (sender, recipient, *cells[0])


def _class_ctes(compiled: CompiledPolicy, norm: Norm, negatives: list[Norm], *, classes: bool = True,
                first: bool = False) -> list[str]:
    """``__p_x``: the norm's cells with, per negative norm, ``f_i`` (0: its view does not hold
    the cell; 1: it holds it with the cell's subject only; 2: otherwise); ``__p_k``: one row
    per distinct ``(subject, f_1..f_k)``, keeping the cell only where some ``f_i`` is 2.

    With ``first``, only the cells without subject or of the first :data:`FIRST_SUBJECTS`
    subject-principal identifiers (a subset: a flow found among them is a flow).
    """
    ctes, joins, flags = [], [], []
    cells = data_view_sql(compiled, norm.id)
    if first:
        p = compiled.principals[compiled.subject_principal]
        ctes.append(f"{PREFIX}s AS (SELECT CAST(t.{quote(p['key'])} AS VARCHAR) AS subject FROM {quote(p['relation'])} AS t "
                    f"ORDER BY 1 LIMIT {FIRST_SUBJECTS})")
        cells = "\nUNION ALL\n".join(
            f"SELECT * FROM ({location_view_sql(compiled.locations[loc])}) AS v WHERE v.subject IS NULL OR v.subject IN "
            f"(SELECT subject FROM {PREFIX}s)" for loc in compiled.norm_locations[norm.id])
    for i, other in enumerate(negatives):
        ctes.append(f"{PREFIX}g{i} AS (SELECT d.relation, d.row_key, d.attribute, COUNT(*) AS n, COUNT(d.subject) AS nn, "
                    f"MIN(d.subject) AS lo, MAX(d.subject) AS hi FROM ({data_view_sql(compiled, other.id)}) AS d "
                    f"GROUP BY d.relation, d.row_key, d.attribute)")
        joins.append(f"LEFT JOIN {PREFIX}g{i} AS g{i} ON {_cell_eq(f'g{i}', 'x')}")
        flags.append(f"CASE WHEN g{i}.n IS NULL THEN 0 WHEN (g{i}.nn = 0 AND x.subject IS NULL) OR (g{i}.nn = g{i}.n "
                     f"AND g{i}.lo = x.subject AND g{i}.hi = x.subject) THEN 1 ELSE 2 END AS f{i}")
    ctes.append(f"{PREFIX}x AS (SELECT x.relation, x.row_key, x.attribute, x.subject{''.join(', ' + f for f in flags)} "
                f"FROM ({cells}) AS x {' '.join(joins)})")
    if classes:
        fcols = [f"f{i}" for i in range(len(negatives))]
        if negatives:
            two = " OR ".join(f"{f} = 2" for f in fcols)
            cell = ", ".join(f"CASE WHEN {two} THEN {c} END AS {c}" for c in ("relation", "row_key", "attribute"))
            ctes.append(f"{PREFIX}k AS (SELECT DISTINCT subject, {', '.join(fcols)}, {cell} FROM {PREFIX}x)")
        else:
            ctes.append(f"{PREFIX}k AS (SELECT DISTINCT subject FROM {PREFIX}x)")
    return ctes


def _run(engine: Engine, norm: Norm, sql: str, params: list[Any] | None = None) -> list[tuple]:
    try:
        return [tuple(r) for r in engine.execute(sql, params or None).rows]
    except EngineError as exc:
        raise PolicyError(f"clause {norm.id}: the satisfiability check failed on the database: {exc.message}",
                          clause=norm.id,
                          hint="on a large database give the checks more time: `pimento policy compile ... --timeout 600`"
                          ) from None


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
        for k, purpose in enumerate(purposes):
            if k and progress is not None:
                progress(f"satisfiability: {norm.id}: no witness for purpose {purposes[k - 1]}, trying {purpose}")
            w = witness(compiled, engine, norm, purpose, with_negatives=True, progress=progress)
            if w is not None:
                found = {"sender": w[0], "recipient": w[1], "purpose": compiled.purposes[purpose][0],
                         "cell": {"relation": w[2], "row_key": w[3], "attribute": w[4]}}
                break
        if found:
            result["witnesses"][norm.id] = found
            continue
        if progress is not None:
            progress(f"satisfiability: no witness for {norm.id}; searching without the negative norms (a contradiction?)")
        alone = any(witness(compiled, engine, norm, p, with_negatives=False, progress=progress) for p in purposes)
        result["unsatisfied"][norm.id] = (
            "every flow it permits is prohibited by a negative norm (contradiction)" if alone
            else "its views admit no flow on this database (roles, condition and data never hold together)"
        )
    return result
