"""Join variables unique on the data act as keys without any declared key (issue 13, item 3).

compute_te checks, in one small statement, which join variable of each relation with two or more
variables is unique among the rows its T_E reads; those skip GROUP BYs exactly as declared keys
do. The T_E values never change: a duplicate makes the variable an ordinary one again.
"""

from __future__ import annotations

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.sensitivity import compute_te, needed_subsets, residual_sensitivity
from pimento.sql.ir import Attribute, CountQuery, JoinCondition, Relation, Selection

# nation - customer - orders - lineitem, as TPC-H's chain (no key declared anywhere)
DDL = (
    "CREATE TABLE nation (n INTEGER)",
    "CREATE TABLE customer (c INTEGER, n INTEGER)",
    "CREATE TABLE orders (o INTEGER, c INTEGER)",
    "CREATE TABLE lineitem (o INTEGER, x INTEGER)",
    "INSERT INTO nation VALUES (1), (2)",
    "INSERT INTO customer VALUES (10, 1), (11, 1), (12, 2), (NULL, 2)",
    "INSERT INTO orders VALUES (100, 10), (101, 10), (102, 11), (103, 12), (104, NULL)",
    "INSERT INTO lineitem VALUES (100, 1), (100, 2), (101, 1), (102, 5), (103, 1), (103, 2), (103, 3), (104, 1)",
)


def chain(selection: bool = False) -> CountQuery:
    joins = (
        JoinCondition(Attribute("customer", "n"), Attribute("nation", "n")),
        JoinCondition(Attribute("orders", "c"), Attribute("customer", "c")),
        JoinCondition(Attribute("lineitem", "o"), Attribute("orders", "o")),
    )
    sels = (Selection("lineitem", "lineitem.x >= 2"),) if selection else ()
    return CountQuery(tuple(Relation(t, t) for t in ("nation", "customer", "orders", "lineitem")), joins, sels)


def engine_with(*extra: str) -> DuckDBEngine:
    engine = DuckDBEngine(":memory:", read_only=False)
    for statement in (*DDL, *extra):
        engine.execute(statement)
    return engine


def test_unique_columns_found_on_the_data_skip_group_bys_with_the_same_t_e():
    engine = engine_with()
    query = chain()
    subsets = needed_subsets(query, query.aliases, attribution=True)
    checked = compute_te(engine, query, None, subsets)
    unchecked = compute_te(engine, query, None, subsets, unique_check=False)
    assert checked.values == unchecked.values
    assert set(checked.unique_on_data) == {("customer", "c"), ("orders", "o")}
    assert checked.unique_sql and checked.statements == 1
    assert checked.sql[0].count("GROUP BY") < unchecked.sql[0].count("GROUP BY")
    # hand-computed: orders 103 has three lineitems; customer 10 has two orders with three lineitems
    assert checked[{"lineitem"}] == 3
    assert checked[{"orders", "lineitem"}] == 3  # per customer: c=10 -> 2 + 1, c=12 -> 3
    assert checked[{"customer", "orders", "lineitem"}] == 4  # per nation: n=1 -> 3 + 1


def test_a_duplicate_makes_the_column_an_ordinary_one_again():
    engine = engine_with("INSERT INTO orders VALUES (103, 11)")  # order 103 now under two customers
    query = chain()
    subsets = needed_subsets(query, query.aliases, attribution=True)
    checked = compute_te(engine, query, None, subsets)
    unchecked = compute_te(engine, query, None, subsets, unique_check=False)
    assert ("orders", "o") not in checked.unique_on_data
    assert ("customer", "c") in checked.unique_on_data
    assert checked.values == unchecked.values
    # hand-computed: per customer, c=11 now has orders 102 (1 lineitem) and 103 (3 lineitems)
    assert checked[{"orders", "lineitem"}] == 4
    assert checked[{"customer", "orders", "lineitem"}] == 7  # per nation: n=1 -> 3 + 4


def test_uniqueness_is_checked_on_the_rows_the_selection_keeps():
    # a duplicate customer key whose rows the selection on lineitem cannot remove: not unique
    engine = engine_with("INSERT INTO customer VALUES (12, 1)")
    query = chain(selection=True)
    subsets = needed_subsets(query, query.aliases, attribution=True)
    checked = compute_te(engine, query, None, subsets)
    assert ("customer", "c") not in checked.unique_on_data
    assert checked.values == compute_te(engine, query, None, subsets, unique_check=False).values
    assert residual_sensitivity(engine, query, None, 0.5).rs == residual_sensitivity(engine, query, engine.introspect(), 0.5).rs
