"""The person unit (mechanisms/PROOF.md section 12) by brute force on small random instances.

Schema Patient <- Visit <- Rx, with a second, redundant chain Rx.pid -> Patient (so one Rx row can
reference two persons). For each random instance (foreign keys hold; NULLs allowed) and each query:

* the contributions SQL (:func:`pimento.sensitivity.person.person_contributions`, run by DuckDB)
  equals a Python brute force that follows every chain of every row of every join result;
* a query :func:`owner_expressions` puts in the one-person class has no result with two persons;
* on EVERY person-level neighbour (each person removed with every row that references it) and on
  drawn additions (a new person with visits and prescriptions), the truncated count moves by at
  most tau (one-person class), and R2T's LP value by at most tau (several persons per result),
  with its certified integer rounding by at most tau + 1.
"""

from __future__ import annotations

from collections import Counter
from itertools import product

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.errors import ConfigError, UnsupportedQuery
from pimento.mechanisms.r2t import certified_lp_count, truncated_count
from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.sensitivity.person import (
    contributions_sql,
    owner_expressions,
    person_contributions,
    person_paths,
    rows_with_several_owners,
)
from pimento.sql.parse import parse_count_query

# Each query: SQL, the relations it reads, the join/selection test of a combination, what it counts
# ("*", or a function of the combination that is None when the result is not counted), one-person class.
QUERIES = {
    "visits": ("SELECT COUNT(*) FROM Visit V WHERE V.x >= 1", "V", lambda r: r["V"][2] >= 1, None, True),
    "visits-patients": ("SELECT COUNT(*) FROM Visit V JOIN Patient P ON V.pid = P.pid", "VP", lambda r: r["V"][1] == r["P"][0], None, True),
    "patients": ("SELECT COUNT(*) FROM Patient P WHERE P.x >= 1", "P", lambda r: r["P"][1] >= 1, None, True),
    "rx": ("SELECT COUNT(*) FROM Rx R", "R", lambda r: True, None, False),
    "rx-visits-same": (
        "SELECT COUNT(*) FROM Rx R JOIN Visit V ON R.vid = V.vid AND R.pid = V.pid",
        "RV",
        lambda r: r["R"][1] == r["V"][0] and r["R"][2] == r["V"][1] and r["R"][2] is not None,
        None,
        True,
    ),
    "rx-visits-count-col": (
        "SELECT COUNT(R.pid) FROM Rx R JOIN Visit V ON R.vid = V.vid WHERE V.x >= 1",
        "RV",
        lambda r: r["R"][1] == r["V"][0] and r["V"][2] >= 1,
        lambda r: r["R"][2],
        False,
    ),
    "rx-patients": ("SELECT COUNT(*) FROM Rx R JOIN Patient P ON R.pid = P.pid", "RP", lambda r: r["R"][2] == r["P"][0], None, False),
    "distinct-patients": (
        "SELECT COUNT(DISTINCT V.pid) FROM Visit V WHERE V.x >= 1",
        "V",
        lambda r: r["V"][2] >= 1,
        lambda r: r["V"][1],
        True,
    ),
}
TABLE_OF = {"P": "Patient", "V": "Visit", "R": "Rx"}


def build(data):
    engine = DuckDBEngine(":memory:", read_only=False)
    engine.execute("CREATE TABLE Patient (pid INTEGER PRIMARY KEY, x INTEGER NOT NULL)")
    engine.execute("CREATE TABLE Visit (vid INTEGER PRIMARY KEY, pid INTEGER REFERENCES Patient (pid), x INTEGER NOT NULL)")
    engine.execute(
        "CREATE TABLE Rx (rid INTEGER PRIMARY KEY, vid INTEGER REFERENCES Visit (vid), "
        "pid INTEGER REFERENCES Patient (pid), x INTEGER NOT NULL)"
    )
    for name, table in (("P", "Patient"), ("V", "Visit"), ("R", "Rx")):
        for row in data[name]:
            engine.execute(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in row)})", list(row))
    return engine


@st.composite
def instances(draw, single: bool):
    """Patients 1..n, visits and prescriptions whose references exist (or are NULL); with ``single``,
    a prescription's pid agrees with its visit's patient (or is NULL): every row has one owner at most."""
    n = draw(st.integers(0, 3))
    pids = list(range(1, n + 1))
    ref = lambda ids: st.sampled_from([None, *ids])  # noqa: E731
    patients = [(p, draw(st.integers(0, 1))) for p in pids]
    visits = [(10 + i, draw(ref(pids)), draw(st.integers(0, 1))) for i in range(draw(st.integers(0, 4)))]
    vids = [v[0] for v in visits]
    rx = []
    for i in range(draw(st.integers(0, 4))):
        vid = draw(ref(vids))
        owner = next((v[1] for v in visits if v[0] == vid), None)
        pid = draw(st.sampled_from([None, owner]) if single and owner is not None else ref(pids))
        rx.append((100 + i, vid, pid, draw(st.integers(0, 1))))
    return {"P": patients, "V": visits, "R": rx}


def owners(data, name, row):
    """Every person a row references through some chain of foreign keys."""
    if name == "P":
        return {row[0]}
    if name == "V":
        return {row[1]} if row[1] is not None else set()
    found = {row[2]} if row[2] is not None else set()
    if row[1] is not None:
        visit = next(v for v in data["V"] if v[0] == row[1])
        found |= owners(data, "V", visit)
    return found


def brute(data, query):
    """(sorted c_p, results of nobody, counted results, most persons in one result), by enumeration."""
    _sql, names, keep, counted, _one = QUERIES[query]
    per: Counter = Counter()
    public = total = most = 0
    seen_distinct = set()
    for combo in product(*[data[n] for n in names]):
        r = dict(zip(names, combo, strict=True))
        if not keep(r) or (counted is not None and counted(r) is None):
            continue
        who = set().union(*(owners(data, n, r[n]) for n in names))
        if query == "distinct-patients":
            seen_distinct.add(counted(r))
            continue
        total += 1
        most = max(most, len(who))
        per.update(who)
        public += not who
    if query == "distinct-patients":
        return sorted([1] * len(seen_distinct)), 0, len(seen_distinct), min(len(seen_distinct), 1)
    return sorted(per.values()), public, total, most


def result_owner_sets(data, query):
    _sql, names, keep, counted, _one = QUERIES[query]
    public, sets = 0, []
    for combo in product(*[data[n] for n in names]):
        r = dict(zip(names, combo, strict=True))
        if not keep(r) or (counted is not None and counted(r) is None):
            continue
        who = set().union(*(owners(data, n, r[n]) for n in names))
        if who:
            sets.append(sorted(who))
        else:
            public += 1
    return public, sets


def lp_value(sets, tau):
    """R2T's LP (float): max sum u_k, 0 <= u <= 1, each person's load <= tau."""
    if not sets:
        return 0.0
    persons = sorted({p for s in sets for p in s})
    a = np.array([[1.0 if p in s else 0.0 for s in sets] for p in persons])
    res = linprog(-np.ones(len(sets)), A_ub=a, b_ub=np.full(len(persons), float(tau)), bounds=(0, 1), method="highs")
    return -res.fun


def remove_person(data, p):
    """The neighbour without person p and every row that references p (through any chain)."""
    return {n: [row for row in data[n] if p not in owners(data, n, row)] for n in data}


@st.composite
def additions(draw, data, single: bool):
    """A new person with 0-2 visits and 0-2 prescriptions referencing it (by a new visit or by pid;
    with ``single``, never a prescription of someone else's visit)."""
    p = 1 + max((r[0] for r in data["P"]), default=0)
    new_visits = [(50 + i, p, draw(st.integers(0, 1))) for i in range(draw(st.integers(0, 2)))]
    old_pids = [r[0] for r in data["P"]]
    new_rx = []
    for i in range(draw(st.integers(0, 2))):
        if new_visits and draw(st.booleans()):
            vid = draw(st.sampled_from([v[0] for v in new_visits]))
            pid = draw(st.sampled_from([p, None] if single else [p, None, *old_pids]))
        else:  # references p by its pid, possibly through an old visit of someone else
            vid, pid = (None if single else draw(st.sampled_from([None, *[v[0] for v in data["V"]]]))), p
        new_rx.append((500 + i, vid, pid, draw(st.integers(0, 1))))
    return {"P": [*data["P"], (p, draw(st.integers(0, 1)))], "V": [*data["V"], *new_visits], "R": [*data["R"], *new_rx]}


@pytest.mark.parametrize("single", [False, True], ids=["several-owners-per-row", "single-owner-rows"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(draw=st.data())
def test_contributions_sql_matches_the_brute_force_and_truncation_moves_at_most_tau(single, draw):
    check_instance(draw.draw(instances(single)), single, draw)


def check_instance(data, single, draw) -> None:
    engine = build(data)
    catalog = engine.introspect()
    paths = person_paths(catalog, "Patient", one_person_per_row=single)
    for name, (sql, _names, _keep, _counted, one_person) in QUERIES.items():
        one_person = one_person or single  # under one_person_per_row every query here has one owner group
        query = parse_count_query(sql, catalog)
        assert (len(owner_expressions(query, catalog, paths)) <= 1) is one_person, name
        got = person_contributions(engine, query, catalog, paths)
        counts, public, total, most = brute(data, name)
        assert (sorted(got.counts), got.public, got.total, got.most_owners) == (counts, public, total, most), name
        if one_person:
            assert got.most_owners <= 1, name  # the structural class holds on this database
            assert total == public + sum(counts)
        neighbours = [remove_person(data, p) for p, _x in data["P"]]
        neighbours += [draw.draw(additions(data, single)) for _ in range(3)]
        for tau in (1, 2, 3):
            if one_person:
                base = truncated_count(counts, public, tau)
                for other in neighbours:
                    c2, pub2, _t, _m = brute(other, name)
                    assert abs(base - truncated_count(c2, pub2, tau)) <= tau, (name, tau)
            else:
                pub, sets = result_owner_sets(data, name)
                exact = pub + lp_value(sets, tau)
                rounded = certified_lp_count(sets, pub, tau)
                assert abs(rounded - exact) < 1
                for other in neighbours:
                    pub2, sets2 = result_owner_sets(other, name)
                    assert abs(exact - pub2 - lp_value(sets2, tau)) <= tau + 1e-6, (name, tau)
                    assert abs(rounded - certified_lp_count(sets2, pub2, tau)) <= tau + 1, (name, tau)


def test_one_person_per_row_is_checked_on_the_data():
    """rows_with_several_owners finds the prescription whose pid and visit name different patients."""
    good = {"P": [(1, 0), (2, 0)], "V": [(10, 1, 0)], "R": [(100, 10, 1, 0), (101, 10, None, 0), (102, None, 2, 0)]}
    bad = {**good, "R": [*good["R"], (103, 10, 2, 0)]}
    for data, expected in ((good, ()), (bad, ("Rx",))):
        engine = build(data)
        catalog = engine.introspect()
        assert rows_with_several_owners(engine, catalog, person_paths(catalog, "Patient")) == expected


def test_a_null_chain_does_not_hide_the_owner_under_one_person_per_row():
    """A prescription with pid NULL but a visit of patient 1 belongs to patient 1 (not to the public part)."""
    data = {"P": [(1, 0)], "V": [(10, 1, 0)], "R": [(100, 10, None, 0)]}
    engine = build(data)
    catalog = engine.introspect()
    got = person_contributions(engine, parse_count_query("SELECT COUNT(*) FROM Rx R", catalog), catalog, person_paths(catalog, "Patient"))
    assert got.counts == (1,) and got.public == 0


def test_a_multi_person_query_has_a_result_with_two_persons():
    """The class is not only conservative: Rx's two chains do disagree on some database."""
    data = {"P": [(1, 0), (2, 0)], "V": [(10, 1, 0)], "R": [(100, 10, 2, 0)]}
    engine = build(data)
    catalog = engine.introspect()
    paths = person_paths(catalog, "Patient", one_person_per_row=False)
    got = person_contributions(engine, parse_count_query("SELECT COUNT(*) FROM Rx R", catalog), catalog, paths)
    assert got.most_owners == 2 and got.owner_sets == ((0, 1),) and not got.one_person


def test_truncation_is_tight_a_person_removal_moves_it_by_exactly_tau():
    """One person with 5 visits: at tau = 3 removing them moves the truncated count by 3 (not less)."""
    data = {"P": [(1, 1)], "V": [(10 + i, 1, 1) for i in range(5)], "R": []}
    counts, public, _t, _m = brute(data, "visits")
    c2, p2, _t2, _m2 = brute(remove_person(data, 1), "visits")
    assert truncated_count(counts, public, 3) - truncated_count(c2, p2, 3) == 3


def _catalog(private_employee: bool = True, key: bool = True) -> Catalog:
    cols = lambda *names: tuple(Column(n, "integer") for n in names)  # noqa: E731
    return Catalog(
        (
            Table("Patient", cols("pid", "x"), ("pid",) if key else ()),
            Table("Visit", cols("vid", "pid", "eid"), ("vid",)),
            Table("Employee", cols("eid"), ("eid",), private=private_employee),
            Table("Dx", cols("code"), ("code",), private=False),
        ),
        (ForeignKey("Visit", ("pid",), "Patient", ("pid",)), ForeignKey("Visit", ("eid",), "Employee", ("eid",))),
    )


def test_the_unit_setting_is_checked_against_the_catalog():
    with pytest.raises(ConfigError, match=r"pimento.toml: \[privacy\] unit = 'Patient': private relation 'Employee' does not reach"):
        person_paths(_catalog(), "Patient")
    paths = person_paths(_catalog(private_employee=False), "patient")
    assert paths.unit == "Patient" and paths.key == ("pid",) and len(paths.chains_of("Visit")) == 1
    with pytest.raises(ConfigError, match="no such relation"):
        person_paths(_catalog(False), "Patients", source="/srv/db/pimento.toml")
    with pytest.raises(ConfigError, match="is public"):
        person_paths(_catalog(False), "Dx")
    with pytest.raises(ConfigError, match="has no key"):
        person_paths(_catalog(False, key=False), "Patient")


def test_count_distinct_of_anything_but_the_person_is_refused():
    data = {"P": [], "V": [], "R": []}
    catalog = build(data).introspect()
    single, several = person_paths(catalog, "Patient"), person_paths(catalog, "Patient", one_person_per_row=False)
    distinct_pid = parse_count_query("SELECT COUNT(DISTINCT R.pid) FROM Rx R", catalog)
    contributions_sql(distinct_pid, catalog, single)  # R.pid is the owner of every prescription
    for sql, paths in (("SELECT COUNT(DISTINCT V.x) FROM Visit V", single), ("SELECT COUNT(DISTINCT R.pid) FROM Rx R", several)):
        with pytest.raises(UnsupportedQuery, match="person's own key"):
            contributions_sql(parse_count_query(sql, catalog), catalog, paths)
