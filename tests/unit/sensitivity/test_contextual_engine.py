"""The engine computes the contextual facts the pure-Python model computes (DuckDB, random tiny instances)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.schema.catalog import Catalog, Column, ForeignKey, Table
from pimento.sensitivity.contextual import AuthorizationView, contextual_sensitivity
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sql.ir import Attribute, CountQuery, JoinCondition, Relation, Selection

from . import _contextual_model as m
from .test_contextual_bruteforce import scenarios
from .test_contextual_change import change_scenarios


def _public_sql(schema: m.Schema, alias: str) -> str | None:
    auth = schema.auth_of(alias)
    if not auth.cols or not set(schema.boundary_cols(alias)) <= set(auth.cols):
        return None
    if auth.phi is None:
        return "TRUE"
    if not auth.phi:
        return "FALSE"
    cols = auth.on or schema.rels[alias]
    terms = [" AND ".join(f'"{alias}"."{c}" = {v}' for c, v in zip(cols, row)) for row in sorted(auth.phi)]
    return " OR ".join(f"({t})" for t in terms)


def build(schema: m.Schema, inst: m.Instance):
    engine = DuckDBEngine(":memory:", read_only=False)
    tables = []
    for a, cols in schema.rels.items():
        engine.execute(f'CREATE TABLE "{a}" ({", ".join(c + " INTEGER" for c in cols)})')
        for _, row in inst[a]:
            engine.execute(f'INSERT INTO "{a}" VALUES ({", ".join("?" for _ in cols)})', list(row))
        key = schema.keys.get(a, ())
        tables.append(Table(a, tuple(Column(c, "int") for c in cols), unique=(key,) if key else (), private=a in schema.private))
    fks = tuple(ForeignKey(f, fc, t, tc) for f, fc, t, tc in schema.fks)
    catalog = Catalog(tuple(tables), fks)
    query = CountQuery(
        tuple(Relation(a, a) for a in schema.aliases),
        tuple(JoinCondition(Attribute(a1, c1), Attribute(a2, c2)) for a1, c1, a2, c2 in schema.joins),
        tuple(Selection(a, f"{a}.{c} = {v}") for a, (c, v) in schema.sel.items()),
    )
    view = AuthorizationView(
        public={a: p for a in schema.private if (p := _public_sql(schema, a)) is not None},
        whole=frozenset(a for a in schema.private if schema.auth_of(a).whole),
    )
    return engine, catalog, query, view


def _engine_matches_model(case):
    if len(case) == 3:  # change_scenarios: (schema, inst, beta), checked under change and both
        schema, inst, beta = case
        for model in (Neighbourhood.CHANGE, Neighbourhood.BOTH):
            _engine_matches_model((schema, inst, model, beta, "paper"))
        return
    schema, inst, model, beta, variant = case
    engine, catalog, query, view = build(schema, inst)
    try:
        got = contextual_sensitivity(engine, query, catalog, beta, view, neighbourhood=model, variant=variant)
    finally:
        engine.close()
    want = m.crs(schema, inst, beta, model, variant)
    got_f = {f.alias: f for f in got.facts}
    for f in want.facts:
        g = got_f[f.alias]
        assert (g.ls, g.unauthorized, g.mu_free_1, g.mu_free_min) == (f.ls, f.unauthorized, f.mu_free_1, f.mu_free_min)
        assert (g.public == "whole") == (f.public == "whole")
        if f.m_unocc is None:
            assert g.m_unocc is None
        elif g.m_unocc is not None:
            assert g.m_unocc >= f.m_unocc  # the engine may only be more conservative
        if f.t_free is None:
            assert g.t_free is None
        elif g.t_free is not None:
            assert g.t_free >= f.t_free
    assert got.crs >= want.crs
    assert got.rs == want.rs


_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@_SETTINGS
@given(scenarios("chain3"))
def test_engine_facts_match_the_model_chain(case):
    _engine_matches_model(case)


@_SETTINGS
@given(scenarios("star"))
def test_engine_facts_match_the_model_star(case):
    _engine_matches_model(case)


@_SETTINGS
@given(scenarios("triangle"))
def test_engine_facts_match_the_model_triangle(case):
    _engine_matches_model(case)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(change_scenarios("chain2"))
def test_engine_facts_match_the_model_change_chain(case):
    """The instances built for change edits: partly authorized boundaries, sigma_phi on some columns."""
    _engine_matches_model(case)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(change_scenarios("triangle"))
def test_engine_facts_match_the_model_change_triangle(case):
    _engine_matches_model(case)


def test_demo_hospital_authorization_view_by_cell_provenance(tmp_path):
    """On the demo hospital with the shipped policy: the public tuples of the view are exactly the
    tuples whose boundary cells are all in the enforcer's A_c (custodian tool authorized_cells)."""
    from pimento.demo.hospital import create_demo
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer, compile_policy, example_policy_path, load_policy
    from pimento.policy.authorized_tuples import authorization_view
    from pimento.sql import parse_count_query

    path = tmp_path / "h.duckdb"
    create_demo(path, patients=120, seed=5)
    db = load_database(path)
    try:
        compiled = compile_policy(load_policy(example_policy_path()), db.catalog, db.engine)
        enforcer = Enforcer(compiled, db.engine, db.catalog)
        sql = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'"
        query = parse_count_query(sql, db.catalog)
        seen_public = 0
        for sender, recipient, purpose in (("employee:1", "employee:1", "treatment"), ("employee:2", "researcher:1", "research")):
            ctx = enforcer.context(sender, recipient, purpose)
            view = authorization_view(enforcer, ctx, query)
            cells = enforcer.authorized_cells(ctx, 'SELECT v.pat_id, v.diagnosis, p.pat_id FROM Visit v, Patient p')
            for alias, table, key, cols in (("v", "Visit", "visit_id", ("pat_id", "diagnosis")), ("p", "Patient", "pat_id", ("pat_id",))):
                got = {str(r[0]) for r in db.engine.execute(
                    f'{view.with_sql} SELECT "{alias}"."{key}" FROM "{table}" AS "{alias}" WHERE {view.public[alias]}',
                    list(view.params)).rows}
                want = {k for k in {rk for (rel, rk, _) in cells if rel == table}
                        if all((table, k, c) in cells for c in cols)}
                assert got == want
                seen_public += len(got)
        assert seen_public > 0
    finally:
        db.close()
