"""The synthesis pipeline: read, cap, encode, test ties, fit, sample, mint keys, link, repair.

See PRIVACY.md for the guarantee and the sensitivity of every measurement made here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pimento.errors import ConfigError
from pimento.schema import Catalog, ForeignKey
from pimento.synth._budget import Accountant
from pimento.synth._encode import (
    PLACEHOLDER,
    ColumnData,
    Encoding,
    bucket_keys,
    public_encoding,
    select_keys,
    selection_sensitivity_sq,
    MIN_COVERAGE,
    KEYS_PER_UNIT,
)
from pimento.synth._mst import fit_table_model
from pimento.synth._plan import Plan
from pimento.synth._types import TYPE_SENSITIVITY, classes_for, coerce, decide_family, to_datetime64, value_classes

__all__ = ["synthesize_tables", "Progress"]

Progress = Callable[[str, int, int], None]

#: Largest fan-out a cap may take, and most rows one unit may hold in any table.
MAX_CAP = 64
CAP_BINS = np.array([0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
MAX_UNIT_ROWS = 4096
#: Cap quantile: the cap covers this share of the (noisy) parents' degrees.
CAP_QUANTILE = 0.95
#: A tie (copy a parent's value) is declared when the noisy mismatch share is at most this.
TIE_MISMATCH = 0.02
#: A 1:1 extension present in at least this noisy share of parent rows is always generated.
TOTAL_PARTICIPATION = 0.97
#: Public link keys modelled as categories (larger public tables: uniform choice).
MAX_PUBLIC_KEYS = 200
#: Budget shares inside a component.
SHARE_CAPS, SHARE_SELECT, SHARE_TIES = 0.05, 0.25, 0.05
#: Share for the column-type tests (taken from the models' share, only in components with a
#: tested column: TEXT columns, and DATE/TIMESTAMP columns of engines that do not enforce types).
SHARE_TYPES = 0.05
#: Engines whose declared column types are enforced on every stored value.
TYPED_ENGINES = ("duckdb", "postgres")
#: Share for link in-degrees (taken from the models' share, only in components that own links
#: to private tables).
SHARE_LINKS = 0.08
#: Link rows of one unit counted in the in-degree measurement (a random choice).
LINK_ROWS_PER_UNIT = 1
#: Rows of one unit counted in the marginals of an entity model (a random choice): the noise
#: scales with this bound, not with the product of the caps (PRIVACY.md, "Models").
MODEL_ROWS_PER_UNIT = 1
#: Largest in-degrees measured per link-context cell (sorted, descending).
LINK_TOP_K = 8
#: A public value set (declared or a link context) larger than this is refused.
MAX_PUBLIC_VALUES = 1000


@dataclass
class Attr:
    """One modelled attribute of an entity row."""

    name: str  # unique within the entity model
    kind: str  # "col" | "has" | "deg" | "link" | "linknull" | "ctx"
    table: str
    column: str | None = None
    size: int = 1
    encoding: Encoding | None = None
    fk: ForeignKey | None = None
    ref_column: str | None = None  # for link attributes: the referenced table's column
    child: str | None = None  # for deg: the child table
    tied_to: str | None = None  # name of the partner attribute (own row "a" or parent row "^a")


@dataclass
class LinkDegrees:
    """Noisy in-degree profile of one link (a foreign key to a private table), per context cell.

    ``top[cell]`` holds the LINK_TOP_K largest in-degrees of referenced keys whose context is
    ``cell`` (noisy, then made non-increasing), ``total[cell]`` the noisy number of counted link
    rows. Degrees are on the thinned scale (LINK_ROWS_PER_UNIT rows per unit); only ratios
    matter when link targets are drawn in proportion to them (``_sample.link_weights``).
    """

    table: str
    fk: ForeignKey
    context: list[str]  # context columns of the referenced table (public encodings)
    encodings: list[Encoding]
    top: np.ndarray  # (cells, LINK_TOP_K)
    total: np.ndarray  # (cells,)
    sigma: float


@dataclass
class EntityInfo:
    name: str
    tables: list[str]  # the entity table then its extensions (parents before children)
    attrs: list[Attr] = field(default_factory=list)
    ctx: list[str] = field(default_factory=list)  # parent attribute names used as context
    unit_rows: int = 1


def _read_table(engine: Any, catalog: Catalog, table: str) -> dict[str, ColumnData]:
    t = catalog.table(table)
    cols = [c.name for c in t.columns]
    sql = "SELECT " + ", ".join(f'"{c}"' for c in cols) + f' FROM "{t.name}"'
    con = getattr(engine, "connection", None)
    out: dict[str, ColumnData] = {}
    if con is not None and getattr(engine, "name", "") == "duckdb":
        data = con.execute(sql).fetchnumpy()
        for c in t.columns:
            v = data[c.name]
            null = np.ma.getmaskarray(v) if isinstance(v, np.ma.MaskedArray) else np.zeros(len(v), dtype=bool)
            raw = np.ma.getdata(v)
            if raw.dtype.kind == "M":
                raw = raw.astype("datetime64[us]")
            elif raw.dtype.kind in "iub" and c.type != "boolean":
                raw = raw.astype(np.int64)
            if c.type == "boolean" or raw.dtype.kind not in "iufM":
                vals = np.empty(len(raw), dtype=object)
                vals[:] = list(raw)
                vals[null] = None
                raw = vals
            out[c.name] = ColumnData(c.type, raw, null)
        return out
    rows = engine.execute(sql).rows
    for i, c in enumerate(t.columns):
        vals = np.empty(len(rows), dtype=object)
        vals[:] = [r[i] for r in rows]
        null = np.array([x is None for x in vals], dtype=bool)
        if c.type in ("integer", "real"):
            num = np.zeros(len(rows), dtype=float)
            ok = ~null
            try:
                num[ok] = np.array([float(x) for x in vals[ok]], dtype=float)
            except (TypeError, ValueError):
                # Some stored value is not a number (engines that do not enforce types): keep
                # the stored values; keys compare them as stored, and a modelled column is
                # coerced to its family later (``decide_types``), non-numbers becoming NULL.
                out[c.name] = ColumnData(c.type, vals, null)
                continue
            if c.type == "integer" and np.all(num[ok] == np.round(num[ok])):
                num = num.astype(np.int64)
            out[c.name] = ColumnData(c.type, num, null)
        else:
            # Dates stay as stored (a DATE column may hold integers or text in SQLite); a
            # modelled column is coerced to its family by ``decide_types``.
            out[c.name] = ColumnData(c.type, vals, null)
    return out


def _key_tuples(data: dict[str, ColumnData], cols: tuple[str, ...], idx: np.ndarray | None = None) -> list[tuple]:
    arrays = [data[c].values if idx is None else data[c].values[idx] for c in cols]
    nulls = [data[c].null if idx is None else data[c].null[idx] for c in cols]
    n = len(arrays[0])
    out = []
    lists = [a.tolist() for a in arrays]
    nl = [m.tolist() for m in nulls]
    for i in range(n):
        if any(m[i] for m in nl):
            out.append(None)
        else:
            out.append(tuple(_norm(lst[i]) for lst in lists))
    return out


def _norm(x: Any) -> Any:
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, (bytes, bytearray)):
        return bytes(x)
    return x


def _lookup(parent_keys: list[tuple], child_keys: list[tuple]) -> np.ndarray:
    index: dict[tuple, int] = {}
    for i, k in enumerate(parent_keys):
        if k is not None and k not in index:
            index[k] = i
    return np.fromiter((index.get(k, -1) if k is not None else -1 for k in child_keys), dtype=np.int64, count=len(child_keys))


def _check_domains(engine: Any, catalog: Catalog) -> dict[tuple[str, str], list[Any]]:
    import sqlglot
    from sqlglot import exp

    out: dict[tuple[str, str], list[Any]] = {}
    if getattr(engine, "name", "") != "duckdb":
        return out
    rows = engine.execute(
        "SELECT table_name, expression FROM duckdb_constraints() WHERE constraint_type = 'CHECK' AND schema_name = current_schema()"
    ).rows
    for table, expression in rows:
        try:
            tree = sqlglot.parse_one(expression, read="duckdb")
        except sqlglot.errors.ParseError:
            continue
        while isinstance(tree, exp.Paren):
            tree = tree.this
        if isinstance(tree, exp.In) and isinstance(tree.this, exp.Column) and tree.expressions:
            if all(isinstance(v, exp.Literal) for v in tree.expressions) and catalog.has_table(table):
                t = catalog.table(table)
                if t.has_column(tree.this.name):
                    col = t.column(tree.this.name)
                    vals = [v.this if v.is_string else (int(v.this) if col.type == "integer" else float(v.this)) for v in tree.expressions]
                    out[(t.name, col.name)] = vals
    return out


def degree_profile(deg: np.ndarray, cell: np.ndarray, n_cells: int, k: int = LINK_TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest in-degrees of each cell (descending, zero-padded) and each cell's total.

    ``deg[i]`` is the in-degree of key ``i`` and ``cell[i]`` its context cell. One link row more
    or less changes one key's degree by 1: in its cell the sorted sequence changes in exactly one
    position by 1 (the first, resp. last, position holding the old value) and the total by 1.
    """
    top = np.zeros((n_cells, k))
    total = np.zeros(n_cells)
    for c in np.unique(cell):
        d = np.sort(deg[cell == c])[::-1][:k]
        top[c, : d.size] = d
        total[c] = float(deg[cell == c].sum())
    return top, total


def link_sensitivity(m: int) -> float:
    """L2 sensitivity of :func:`degree_profile` when one unit with at most ``m`` counted link
    rows is replaced: m removals and m additions, each of L2 norm sqrt 2 (PRIVACY.md)."""
    return 2.0 * m * math.sqrt(2.0)


def _non_increasing(y: np.ndarray) -> np.ndarray:
    """Least-squares non-increasing fit of ``y`` (pool adjacent violators): post-processing."""
    vals: list[float] = []
    counts: list[int] = []
    for v in y.tolist():
        vals.append(float(v))
        counts.append(1)
        while len(vals) > 1 and vals[-2] < vals[-1]:
            c = counts[-2] + counts[-1]
            vals[-2] = (vals[-2] * counts[-2] + vals[-1] * counts[-1]) / c
            counts[-2] = c
            vals.pop()
            counts.pop()
    return np.repeat(np.array(vals), counts) if vals else np.zeros(0)


def _col_name(table: str, column: str) -> str:
    return f"{table}.{column}"


class Synthesizer:
    """One run of the pipeline over a plan (not thread-safe; use :func:`synthesize_tables`)."""

    def __init__(
        self,
        engine: Any,
        plan: Plan,
        accountant: Accountant,
        *,
        seed: int,
        caps: dict[str, int] | None,
        link_context: list[str],
        progress: Progress | None,
        public_values: list[str] | tuple[str, ...] = (),
    ) -> None:
        self.engine = engine
        self.plan = plan
        self.cat = plan.catalog
        self.acc = accountant
        self.rng = np.random.default_rng(seed)
        self.order_rng = np.random.default_rng(accountant._rng.integers(0, 2**63 - 1))
        self.user_caps = {k.lower(): v for k, v in (caps or {}).items()}
        self.link_context = self._parse_link_context(link_context)
        self.public_values = self._parse_columns(public_values, "public value set")
        self.link_degrees: dict[tuple[str, str], LinkDegrees] = {}
        #: Component roots with declared link context: the exact context codes of their rows
        #: (a public directory, PRIVACY.md caveat 1); sampling copies them.
        self.directory: dict[str, dict[str, np.ndarray]] = {}
        self.progress = progress or (lambda stage, done, total: None)
        self.data: dict[str, dict[str, ColumnData]] = {}
        self.parent_idx: dict[str, np.ndarray] = {}
        self.valid: dict[str, np.ndarray] = {}
        self.unit: dict[str, np.ndarray] = {}
        self.unit_rows: dict[str, int] = {}
        self.caps: dict[str, int] = {}
        self.enc: dict[tuple[str, str], Encoding] = {}
        self.entities: dict[str, EntityInfo] = {}
        self.models: dict[str, Any] = {}
        #: The family each modelled column is modelled and written in (``decide_types``).
        self.family: dict[tuple[str, str], str] = {}
        #: Number of DP type tests per component (their share is charged only where there are some).
        self.type_tests: dict[str, int] = {}
        self.report: dict[str, Any] = {
            "caps": {}, "ties": [], "free_text": [], "models": {}, "components": plan.components, "column_types": {},
        }

    # ------------------------------------------------------------------ helpers

    def _parse_columns(self, items: Any, what: str) -> set[tuple[str, str]]:
        out = set()
        for item in items:
            if not isinstance(item, str) or "." not in item:
                raise ConfigError(f"{what} {item!r} is not Table.column", hint="e.g. public_values = [\"Prescription.medication\"]")
            t, c = item.split(".", 1)
            table = self.cat.table(t.strip())
            out.add((table.name, table.column(c.strip()).name))
        return out

    def _parse_link_context(self, items: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for item in items:
            if "." not in item:
                raise ConfigError(f"link context {item!r} is not Table.column", hint="e.g. --link-context Employee.specialty")
            t, c = item.split(".", 1)
            table = self.cat.table(t)
            col = table.column(c)
            out.setdefault(table.name, []).append(col.name)
        return out

    def _fk_columns(self, table: str) -> set[str]:
        return {c for fk in self.cat.foreign_keys_of(table) for c in fk.columns}

    def _minted(self, table: str) -> set[str]:
        """Single-column keys that are not foreign keys: fresh values are minted."""
        t = self.cat.table(table)
        fkcols = self._fk_columns(table)
        out = set()
        for key in [t.primary_key, *t.unique]:
            if len(key) == 1 and key[0] not in fkcols:
                out.add(key[0])
        return out

    # ------------------------------------------------------------------ stage 1: read and cap

    def load(self) -> None:
        names = [t for t in self.plan.tables if self.plan.tables[t].kind != "public"]
        for i, t in enumerate(self.plan.order):
            self.data[t] = _read_table(self.engine, self.cat, t)
            self.progress("read", i + 1, len(names))

    @property
    def check_domains(self) -> dict[tuple[str, str], list[Any]]:
        """Columns whose CHECK constraint is ``col IN (literal, ...)``: a public domain (DuckDB only)."""
        if getattr(self, "_check_domains", None) is None:
            self._check_domains = _check_domains(self.engine, self.cat)
        return self._check_domains

    def _n(self, table: str) -> int:
        d = self.data[table]
        return len(next(iter(d.values())).values) if d else 0

    def cap_and_link(self) -> None:
        """Parents of every row, caps chosen with DP top-down, and the unit of every kept row."""
        for comp in self.plan.components:
            self.acc.scope = comp
            tables = self._component_tables(comp)
            edges = [t for t in tables if self.plan.tables[t].kind == "entity" and self.plan.tables[t].parent]
            rho_comp = self.acc.rho_total
            rho_cap = rho_comp * SHARE_CAPS / max(len(edges), 1) if edges else 0.0
            for t in tables:
                tp = self.plan.tables[t]
                n = self._n(t)
                if tp.parent is None:
                    self.parent_idx[t] = np.full(n, -1, dtype=np.int64)
                    self.valid[t] = np.ones(n, dtype=bool)
                    self.unit[t] = np.arange(n, dtype=np.int64)
                    self.unit_rows[t] = 1
                    continue
                fk = tp.parent_fk
                assert fk is not None
                pkeys = _key_tuples(self.data[tp.parent], fk.ref_columns)
                ckeys = _key_tuples(self.data[t], fk.columns)
                pidx = _lookup(pkeys, ckeys)
                ok = pidx >= 0
                ok[ok] &= self.valid[tp.parent][pidx[ok]]
                # Derived keys must agree with the ancestor they copy (else the row is dropped).
                for dfk, anc in tp.derived:
                    anc_idx = pidx.copy()
                    cur = tp.parent
                    while cur != anc:
                        up = self.parent_idx[cur]
                        anc_idx = np.where(anc_idx >= 0, up[np.maximum(anc_idx, 0)], -1)
                        cur = self.plan.tables[cur].parent
                    akeys = _key_tuples(self.data[anc], dfk.ref_columns)
                    mine = _key_tuples(self.data[t], dfk.columns)
                    agree = np.array([a >= 0 and (m is None or akeys[a] == m) for a, m in zip(anc_idx.tolist(), mine)], dtype=bool)
                    ok &= agree
                if tp.kind == "extension":
                    cap = 1
                    user = self.user_caps.get(t.lower())
                    if user is not None and user != 1:
                        raise ConfigError(
                            f"impossible cap {user} for {t}: its foreign key {fk} is unique, so each parent has at most one",
                            hint=f"use cap 1 for {t} or leave it out",
                        )
                    # Uniqueness holds in valid data; keep the first row per parent to be safe.
                    ok = self._truncate(ok, pidx, 1)
                else:
                    cap = self._choose_cap(t, pidx, ok, rho_cap)
                    ok = self._truncate(ok, pidx, cap)
                self.caps[t] = cap
                self.report["caps"][t] = cap
                self.parent_idx[t] = np.where(ok, pidx, -1)
                self.valid[t] = ok
                self.unit[t] = np.where(ok, self.unit[tp.parent][np.maximum(pidx, 0)], -1)
                self.unit_rows[t] = self.unit_rows[tp.parent] * cap
                if self.unit_rows[t] > MAX_UNIT_ROWS:
                    raise ConfigError(
                        f"impossible cap: one unit may hold {self.unit_rows[t]} rows of {t} (caps along the path multiply)",
                        hint=f"lower the caps on the path to {t} so that their product stays at most {MAX_UNIT_ROWS}",
                    )

    def _truncate(self, ok: np.ndarray, pidx: np.ndarray, cap: int) -> np.ndarray:
        """Keep at most ``cap`` rows per parent, chosen in a random order (independent of other units)."""
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return ok
        perm = idx[self.order_rng.permutation(idx.size)]
        perm = perm[np.argsort(pidx[perm], kind="stable")]
        p = pidx[perm]
        starts = np.r_[0, np.flatnonzero(np.diff(p)) + 1]
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(p)]))
        rank = np.arange(len(p)) - starts[group]
        out = np.zeros_like(ok)
        out[perm[rank < cap]] = True
        return out

    def _choose_cap(self, table: str, pidx: np.ndarray, ok: np.ndarray, rho: float) -> int:
        tp = self.plan.tables[table]
        parent = tp.parent
        assert parent is not None
        user = self.user_caps.get(table.lower())
        if user is not None:
            if not isinstance(user, int) or user < 1 or user > MAX_CAP:
                raise ConfigError(f"impossible cap {user!r} for {table}", hint=f"caps are integers from 1 to {MAX_CAP}")
            return user
        n_parent = self._n(parent)
        deg = np.bincount(pidx[ok], minlength=n_parent)[self.valid[parent]]
        # Geometric bins: bin i holds degrees in (CAP_BINS[i-1], CAP_BINS[i]].
        which = np.searchsorted(CAP_BINS, np.minimum(deg, MAX_CAP), side="left")
        hist = np.bincount(which, minlength=len(CAP_BINS)).astype(float)
        sens = math.sqrt(2.0) * self.unit_rows[parent]
        sigma = self.acc.sigma(sensitivity=sens, rho=rho)
        noisy = self.acc.gaussian(hist, sensitivity=sens, rho=rho, what=f"cap of {table}")
        # Only bins whose noisy count is clearly above noise count; the cap is the smallest bin
        # edge that leaves at most 1 - CAP_QUANTILE of the (significant) parents above it.
        # (3 sigma: with 13 bins a 2-sigma threshold lets a spurious high bin through in about
        # a quarter of the choices, which made caps of 64 on tables of a few dozen rows.)
        sig = np.where(noisy > 3.0 * sigma, noisy, 0.0)
        total = sig.sum()
        if total <= 0:
            return 1
        above = total - np.cumsum(sig)
        i = int(np.flatnonzero(above <= (1 - CAP_QUANTILE) * total)[0])
        cap = max(1, int(CAP_BINS[i]))
        return max(1, min(cap, MAX_CAP, MAX_UNIT_ROWS // max(self.unit_rows[parent], 1)))

    # ------------------------------------------------------------------ stage 1b: column types

    def _declared_domain(self, table: str, column: str) -> bool:
        return (
            self.check_domains.get((table, column)) is not None
            or column in self.link_context.get(table, [])
            or (table, column) in self.public_values
        )

    def column_family(self, table: str, column: str) -> str:
        """The family a column is modelled and written in (its declared type unless tested)."""
        return self.family.get((table, column)) or self.cat.table(table).column(column).type

    def decide_types(self) -> None:
        """DP test of what modelled columns hold, where the declared type does not settle it
        (PRIVACY.md, "Column types"): TEXT columns (numbers only?) and, for engines that do not
        enforce types, DATE/TIMESTAMP columns (dates, numbers or text?). Then every modelled
        column is coerced to its family; values that do not fit become NULL."""
        loose = getattr(self.engine, "name", "") not in TYPED_ENGINES
        for comp in self.plan.components:
            self.acc.scope = comp
            tables = self._component_tables(comp)
            todo = []
            for t, c in self._modelled_columns(tables):
                self.family[(t, c.name)] = c.type
                if c.type == "boolean" or self._declared_domain(t, c.name):
                    continue
                if c.type == "text" or (loose and c.type in ("date", "timestamp")):
                    todo.append((t, c))
            self.type_tests[comp] = len(todo)
            if todo:
                rho = self.acc.rho_total * SHARE_TYPES / len(todo)
                sigma = self.acc.sigma(sensitivity=TYPE_SENSITIVITY, rho=rho)
                for t, c in todo:
                    col = self.data[t][c.name]
                    rows = np.flatnonzero(self.valid[t] & ~col.null)
                    # One value per unit, chosen in a random order independent of other units.
                    kept = rows[self._per_unit_sample(self.unit[t][rows], 1)]
                    classes = classes_for(c.type)
                    cls = value_classes(col.values[kept], c.type)
                    hist = np.array([float(np.sum(cls == k)) for k in classes])
                    noisy = self.acc.gaussian(hist, sensitivity=TYPE_SENSITIVITY, rho=rho, what=f"type of {t}.{c.name}")
                    fam = decide_family(c.type, dict(zip(classes, noisy.tolist())), sigma)
                    self.family[(t, c.name)] = fam
                    if fam != c.type:
                        self.report["column_types"][f"{t}.{c.name}"] = fam
            for t in tables:
                for c in self.cat.table(t).columns:
                    fam = self.family.get((t, c.name))
                    if fam is not None:
                        self.data[t][c.name] = coerce(self.data[t][c.name], fam)

    def _component_tables(self, comp: str) -> list[str]:
        return [t for t in self.plan.order if self.plan.tables[t].component == comp]

    def _modelled_columns(self, tables: list[str]):
        """(table, column) of every column the models cover: not a foreign key, not a minted key."""
        for t in tables:
            fkcols = self._fk_columns(t)
            minted = self._minted(t)
            for c in self.cat.table(t).columns:
                if c.name not in fkcols and c.name not in minted:
                    yield t, c

    def changed_families(self) -> dict[tuple[str, str], str]:
        """Columns the type test moved away from their declared family (written accordingly)."""
        return {(t, c): f for (t, c), f in self.family.items() if f != self.cat.table(t).column(c).type}

    def _share_types(self, comp: str) -> float:
        return SHARE_TYPES if self.type_tests.get(comp) else 0.0

    # ------------------------------------------------------------------ stage 2: encodings

    def encode_columns(self) -> None:
        for comp in self.plan.components:
            self.acc.scope = comp
            todo = []
            for t, c in self._modelled_columns(self._component_tables(comp)):
                fam = self.column_family(t, c.name)
                domain = self.check_domains.get((t, c.name))
                if domain is None and (c.name in self.link_context.get(t, []) or (t, c.name) in self.public_values):
                    # Declared public value sets and link context: the set of values is read
                    # without budget (PRIVACY.md, "Declared public values").
                    domain = self._public_keys(t, c.name, limit=MAX_PUBLIC_VALUES)
                    if domain is None:
                        raise ConfigError(
                            f"{t}.{c.name} has more than {MAX_PUBLIC_VALUES} distinct values: too many for a public value set",
                            hint=f"remove {t}.{c.name} from [synth] public_values / link_context (it is then selected with DP)",
                        )
                if fam == "boolean":
                    self.enc[(t, c.name)] = public_encoding("boolean", [False, True], c.nullable)
                elif domain is not None:
                    self.enc[(t, c.name)] = public_encoding(fam, domain, c.nullable)
                elif fam in ("text", "integer", "real", "date", "timestamp"):
                    todo.append((t, c))
                else:
                    self.enc[(t, c.name)] = Encoding(fam, "free", nullable=c.nullable)
            if not todo:
                continue
            fams = [self.column_family(t, c.name) for t, c in todo]
            weights = [2 if f in ("integer", "real", "date", "timestamp") else 1 for f in fams]
            rho_unit = self.acc.rho_total * SHARE_SELECT / sum(weights)
            delta_col = self.acc.delta_selection / sum(weights)
            for i, ((t, c), fam) in enumerate(zip(todo, fams)):
                col = self.data[t][c.name].take(np.flatnonzero(self.valid[t]))
                unit = self.unit[t][self.valid[t]]
                present = ~col.null
                m = min(KEYS_PER_UNIT, self.unit_rows[t])
                sens = math.sqrt(selection_sensitivity_sq(m))
                levels = ["fine", "coarse"] if fam in ("integer", "real", "date", "timestamp") else ["fine"]
                chosen = None
                for level in levels:
                    sigma = self.acc.sigma(sensitivity=sens, rho=rho_unit)
                    self.acc.spend(f"selection {t}.{c.name} ({level})", rho_unit, delta_col)
                    keys = bucket_keys(col, level)
                    kept, weights_kept, coverage = select_keys(
                        keys, present, unit, sigma=sigma, delta_column=delta_col, keys_per_unit=m,
                        noise=lambda size, s=sigma: self.acc.normal(size, s), order_rng=self.order_rng,
                    )
                    if kept and (coverage >= MIN_COVERAGE or level == "coarse"):
                        chosen = Encoding(fam, "cat", level, kept, weights_kept, True, c.nullable)
                        break
                if chosen is None:
                    chosen = Encoding(fam, "free", nullable=c.nullable)
                    self.report["free_text"].append(f"{t}.{c.name}")
                self.enc[(t, c.name)] = chosen
                self.progress("encode", i + 1, len(todo))

    # ------------------------------------------------------------------ stage 2b: link in-degrees

    def private_links(self, comp: str) -> list[tuple[str, ForeignKey]]:
        """Links owned by tables of component ``comp`` that point at a private table and are not
        modelled as a public key attribute: their targets are drawn in proportion to in-degrees."""
        out = []
        for t in self.plan.order:
            tp = self.plan.tables[t]
            if tp.component != comp:
                continue
            for fk in tp.links:
                if self.cat.table(fk.ref_table).private:
                    out.append((t, fk))
        return out

    def _share_links(self, comp: str) -> float:
        return SHARE_LINKS if self.private_links(comp) else 0.0

    def link_context_of(self, ref: str) -> list[str]:
        """Declared context columns of ``ref`` that have a public categorical encoding."""
        return [c for c in self.link_context.get(ref, []) if (enc := self.enc.get((ref, c))) is not None and enc.kind == "cat"]

    def measure_link_degrees(self) -> None:
        """For every link to a private table: the noisy LINK_TOP_K largest in-degrees and the noisy
        number of link rows, per context cell of the referenced row (PRIVACY.md, "Link in-degrees").

        Each unit counts at most LINK_ROWS_PER_UNIT of its (valid, capped) link rows, chosen at
        random. One counted row changes one key's in-degree by 1, which changes the sorted
        in-degree sequence of its cell in one position by 1 and the cell's total by 1 (L2 sqrt 2);
        replacing a unit removes and adds at most m rows each: L2 sensitivity 2 m sqrt 2.
        Only the owning component's data is read (the key values of its rows), plus the declared
        link context of the referenced rows, which is public.
        """
        for comp in self.plan.components:
            links = self.private_links(comp)
            if not links:
                continue
            self.acc.scope = comp
            rho_link = self.acc.rho_total * SHARE_LINKS / len(links)
            for t, fk in links:
                ref = fk.ref_table
                ctx_cols = self.link_context_of(ref)
                encs = [self.enc[(ref, c)] for c in ctx_cols]
                sizes = [e.size for e in encs]
                n_cells = int(np.prod(sizes)) if sizes else 1
                rows = np.flatnonzero(self.valid[t])
                m = min(LINK_ROWS_PER_UNIT, self.unit_rows[t])
                keys = _key_tuples(self.data[t], fk.columns, rows)
                has_key = np.array([k is not None for k in keys], dtype=bool)
                rows = rows[has_key]
                keys = [k for k in keys if k is not None]
                # At most m counted rows per unit, in a random order (independent of other units).
                chosen = self._per_unit_sample(self.unit[t][rows], m)
                kept_keys = [keys[i] for i in chosen.tolist()]
                # Key identities (values of the foreign key) and their context cell.
                uniq: dict[tuple, int] = {}
                key_id = np.fromiter((uniq.setdefault(k, len(uniq)) for k in kept_keys), dtype=np.int64, count=len(kept_keys))
                deg = np.bincount(key_id, minlength=len(uniq))
                cell = np.zeros(len(uniq), dtype=np.int64)
                if ctx_cols and uniq:
                    rdata = self.data[ref]
                    ridx = _lookup(_key_tuples(rdata, fk.ref_columns), list(uniq))
                    for c, enc in zip(ctx_cols, encs):
                        col = rdata[c].take(np.maximum(ridx, 0))
                        code = enc.encode(col)
                        code = np.where(ridx >= 0, code, enc.null_code if enc.nullable else 0)
                        cell = cell * enc.size + code
                top, total = degree_profile(deg, cell, n_cells)
                sens = link_sensitivity(m)
                sigma = self.acc.sigma(sensitivity=sens, rho=rho_link)
                noisy = self.acc.gaussian(
                    np.concatenate([top.ravel(), total]), sensitivity=sens, rho=rho_link, what=f"in-degrees of {t}.{','.join(fk.columns)}"
                )
                ntop = noisy[: top.size].reshape(top.shape)
                ntotal = noisy[top.size :]
                ntop = np.array([_non_increasing(np.clip(r, 0.0, None)) for r in ntop]) if ntop.size else ntop
                self.link_degrees[(t, str(fk))] = LinkDegrees(t, fk, ctx_cols, encs, ntop, np.clip(ntotal, 0.0, None), sigma)
                self.report.setdefault("link_degrees", {})[f"{t}.{','.join(fk.columns)}"] = {
                    "context": [f"{ref}.{c}" for c in ctx_cols],
                    "sigma": round(sigma, 2),
                    "largest": [round(float(x), 1) for x in np.sort(ntop[:, 0])[::-1][:4]] if ntop.size else [],
                }

    # ------------------------------------------------------------------ stage 3: entity rows

    def _entity_tables(self, e: str) -> list[str]:
        out = [e]
        i = 0
        while i < len(out):
            out.extend(self.plan.tables[out[i]].extensions)
            i += 1
        return out

    def build_entities(self) -> None:
        for t in self.plan.order:
            if self.plan.tables[t].kind != "entity":
                continue
            info = EntityInfo(t, self._entity_tables(t), unit_rows=self.unit_rows[t])
            for tt in info.tables:
                tp = self.plan.tables[tt]
                if tt != t:
                    info.attrs.append(Attr(f"has:{tt}", "has", tt, size=2))
                minted = self._minted(tt)
                fkcols = self._fk_columns(tt)
                for c in self.cat.table(tt).columns:
                    if c.name in fkcols or c.name in minted:
                        continue
                    enc = self.enc[(tt, c.name)]
                    if enc.kind != "cat":
                        continue
                    info.attrs.append(Attr(_col_name(tt, c.name), "col", tt, c.name, enc.size, enc))
                for fk in tp.links:
                    ref = self.cat.table(fk.ref_table)
                    nullable = any(self.cat.table(tt).column(c).nullable for c in fk.columns)
                    if not ref.private and len(fk.columns) == 1:
                        keys = self._public_keys(ref.name, fk.ref_columns[0])
                        if keys is not None:
                            enc = public_encoding("key", keys, nullable)
                            info.attrs.append(Attr(f"link:{tt}.{fk.columns[0]}", "link", tt, fk.columns[0], enc.size, enc, fk, fk.ref_columns[0]))
                            continue
                    ctx_cols = self.link_context.get(ref.name, []) if ref.private else []
                    for rc in ctx_cols:
                        enc = self.enc.get((ref.name, rc))
                        if enc is None or enc.kind != "cat":
                            continue
                        enc2 = Encoding(enc.family, "cat", enc.level, enc.keys, enc.weights, enc.has_other, True)
                        info.attrs.append(Attr(f"ctx:{tt}.{fk.columns[0]}.{rc}", "ctx", tt, fk.columns[0], enc2.size, enc2, fk, rc))
                    if nullable and not (ctx_cols):
                        info.attrs.append(Attr(f"linknull:{tt}.{fk.columns[0]}", "linknull", tt, fk.columns[0], 2, fk=fk))
                for child in tp.children:
                    info.attrs.append(Attr(f"deg:{child}", "deg", tt, size=self.caps[child] + 1, child=child))
            self.entities[t] = info

    def _public_keys(self, table: str, column: str, limit: int = MAX_PUBLIC_KEYS) -> list[Any] | None:
        rows = self.engine.execute(f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL').rows
        if len(rows) > limit:
            return None
        return sorted((_norm(r[0]) for r in rows), key=lambda x: (str(type(x)), x))

    def _entity_row_index(self, e: str) -> dict[str, np.ndarray]:
        """For each table of entity ``e``: the row of that table for each valid entity row (-1: none)."""
        info = self.entities[e]
        base = np.flatnonzero(self.valid[e])
        out = {e: base}
        pos_of: dict[str, np.ndarray] = {}
        n_e = self._n(e)
        inv = np.full(n_e, -1, dtype=np.int64)
        inv[base] = np.arange(base.size)
        pos_of[e] = inv
        for tt in info.tables[1:]:
            parent = self.plan.tables[tt].parent
            assert parent is not None
            valid = np.flatnonzero(self.valid[tt])
            pos = pos_of[parent][self.parent_idx[tt][valid]]
            arr = np.full(base.size, -1, dtype=np.int64)
            ok = pos >= 0
            arr[pos[ok]] = valid[ok]
            out[tt] = arr
            inv_t = np.full(self._n(tt), -1, dtype=np.int64)
            inv_t[valid[ok]] = pos[ok]
            pos_of[tt] = inv_t
        return out

    def _raw_attr(self, e: str, a: Attr, rows: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Comparable raw values of attribute ``a`` for each valid entity row, and a presence mask."""
        r = rows[a.table]
        present = r >= 0
        safe = np.maximum(r, 0)
        if a.kind == "col":
            col = self.data[a.table][a.column]
            vals = np.where(col.null[safe], None, col.values[safe].astype(object))
            return vals, present
        if a.kind in ("link", "ctx"):
            fk = a.fk
            keys = _key_tuples(self.data[a.table], fk.columns, safe)
            if a.kind == "link":
                vals = np.array([k[0] if k is not None else None for k in keys], dtype=object)
                return vals, present
            ref = fk.ref_table
            rdata = self.data[ref]
            ridx = _lookup(_key_tuples(rdata, fk.ref_columns), keys)
            col = rdata[a.ref_column]
            vals = np.where(ridx >= 0, np.where(col.null[np.maximum(ridx, 0)], None, col.values[np.maximum(ridx, 0)].astype(object)), None)
            return vals, present
        return np.zeros(len(r), dtype=object), present

    def _codes(self, e: str, a: Attr, rows: dict[str, np.ndarray]) -> np.ndarray:
        r = rows[a.table]
        present = r >= 0
        safe = np.maximum(r, 0)
        n = len(r)
        if a.kind == "has":
            return present.astype(np.int64)
        if a.kind == "deg":
            child = a.child
            pidx = self.parent_idx[child][self.valid[child]]
            deg = np.bincount(pidx, minlength=self._n(a.table))
            return np.where(present, np.minimum(deg[safe], self.caps[child]), 0).astype(np.int64)
        if a.kind == "linknull":
            col = self.data[a.table][a.column]
            return np.where(present, col.null[safe], 1).astype(np.int64)
        enc = a.encoding
        assert enc is not None
        if a.kind == "col":
            col = self.data[a.table][a.column].take(safe)
            codes = enc.encode(col)
        else:
            vals, _ = self._raw_attr(e, a, rows)
            null = np.array([v is None for v in vals], dtype=bool)
            fam = enc.family if a.kind == "ctx" else "key"
            if a.kind == "link":
                lookup = {k: i for i, k in enumerate(enc.keys)}
                codes = np.array([lookup.get(_norm(v), enc.null_code if enc.nullable else 0) for v in vals], dtype=np.int64)
            else:
                values = vals.copy()
                if fam in ("integer", "real"):
                    values = np.array([0 if v is None else v for v in vals], dtype=float)
                elif fam in ("date", "timestamp"):
                    values, bad = to_datetime64(vals)
                    null = null | bad
                codes = enc.encode(ColumnData(fam, values, null))
        if enc.nullable:
            codes = np.where(present, codes, enc.null_code)
        return codes.astype(np.int64)

    def test_ties_and_fit(self) -> None:
        ents = [e for e in self.plan.order if e in self.entities]
        # Ties are tested per component with a shared budget share.
        for comp in self.plan.components:
            self.acc.scope = comp
            comp_ents = [e for e in ents if self.plan.tables[e].component == comp]
            if not comp_ents:
                continue
            candidates = []
            for e in comp_ents:
                info = self.entities[e]
                parent_ent = self.plan.entity_of(self.plan.tables[e].parent) if self.plan.tables[e].parent else None
                parent_attrs = self.entities[parent_ent].attrs if parent_ent else []
                for i, a in enumerate(info.attrs):
                    if a.kind == "has":
                        candidates.append((e, a, None))
                        continue
                    if a.kind not in ("col", "link", "ctx"):
                        continue
                    partner = self._partner(a, info.attrs[:i], parent_attrs)
                    if partner is not None:
                        candidates.append((e, a, partner))
            rho_tie = self.acc.rho_total * SHARE_TIES / len(candidates) if candidates else 0.0
            rows_cache = {e: self._entity_row_index(e) for e in comp_ents}
            for e, a, partner in candidates:
                rows = rows_cache[e]
                n_rows = self.entities[e].unit_rows
                sens = math.sqrt(2.0) * n_rows
                if a.kind == "has":
                    base_present = np.ones(len(rows[e]), dtype=bool)
                    parent_tab = self.plan.tables[a.table].parent
                    if parent_tab in rows:
                        base_present = rows[parent_tab] >= 0
                    stats = np.array([float((rows[a.table] >= 0).sum()), float(base_present.sum())])
                    noisy = self.acc.gaussian(stats, sensitivity=sens, rho=rho_tie, what=f"participation of {a.table}")
                    sigma = self.acc.sigma(sensitivity=sens, rho=rho_tie)
                    if noisy[1] > 0 and noisy[0] >= TOTAL_PARTICIPATION * noisy[1] - 2.0 * sigma:
                        a.tied_to = "=1"
                        self.report["ties"].append(f"{a.table} present for every parent row")
                    continue
                mine, present = self._raw_attr(e, a, rows)
                theirs = self._partner_values(e, partner, rows)
                mism = float(np.sum(present & np.array([_norm(x) != _norm(y) for x, y in zip(mine.tolist(), theirs.tolist())], dtype=bool)))
                stats = np.array([mism, float(present.sum())])
                noisy = self.acc.gaussian(stats, sensitivity=sens, rho=rho_tie, what=f"tie {a.name}")
                sigma = self.acc.sigma(sensitivity=sens, rho=rho_tie)
                if noisy[1] > 0 and noisy[0] <= TIE_MISMATCH * noisy[1] + 2.0 * sigma:
                    a.tied_to = partner
                    self.report["ties"].append(f"{a.name} = {partner}")
        # Fit one model per entity.
        for i, e in enumerate(ents):
            comp = self.plan.tables[e].component
            rho_model = self.acc.rho_total * (
                1 - SHARE_CAPS - SHARE_SELECT - SHARE_TIES - self._share_links(comp) - self._share_types(comp)
            )
            info = self.entities[e]
            self.acc.scope = self.plan.tables[e].component
            comp_ents = [x for x in ents if self.plan.tables[x].component == self.plan.tables[e].component]
            rows = self._entity_row_index(e)
            codes: dict[str, np.ndarray] = {}
            sizes: dict[str, int] = {}
            for a in info.attrs:
                if a.tied_to is not None:
                    continue
                codes[a.name] = self._codes(e, a, rows)
                sizes[a.name] = a.size
            parent = self.plan.tables[e].parent
            if parent is not None:
                pent = self.plan.entity_of(parent)
                pinfo = self.entities[pent]
                pmodelled = [a for a in pinfo.attrs if a.tied_to is None and a.kind in ("col", "link", "ctx", "has") and a.size > 1]
                preferred = {p.lstrip("^") for a in info.attrs if isinstance(a.tied_to, str) for p in [a.tied_to] if p.startswith("^")}
                pmodelled.sort(key=lambda a: (a.name not in preferred, a.size))
                info.ctx = [a.name for a in pmodelled[:3]]
                if info.ctx:
                    prow = self._parent_entity_pos(e)
                    prows = self._entity_row_index(pent)
                    for name in info.ctx:
                        pa = next(a for a in pinfo.attrs if a.name == name)
                        pc = self._codes(pent, pa, prows)
                        codes["^" + name] = pc[prow]
                        sizes["^" + name] = pa.size
            # At most MODEL_ROWS_PER_UNIT rows of each unit enter the marginals (random choice,
            # independent of other units): the sensitivity is that bound, not the cap product.
            model_rows = min(info.unit_rows, MODEL_ROWS_PER_UNIT)
            n_rows = len(rows[e])
            if model_rows < info.unit_rows:
                keep = self._per_unit_sample(self.unit[e][self.valid[e]], model_rows)
                codes = {k: v[keep] for k, v in codes.items()}
                n_rows = len(keep)
            model = fit_table_model(
                codes, sizes, rho=rho_model / len(comp_ents), unit_rows=model_rows, accountant=self.acc, what=f"model {e}",
                n_rows=n_rows,
            )
            self.models[e] = model
            self.report["models"][e] = {"attributes": len(model.columns), "pairs": [list(p) for p in model.pairs]}
            self.progress("fit", i + 1, len(ents))

    def read_directory(self) -> None:
        """Exact context codes of component roots whose columns are declared link context.

        Declaring ``T.c`` link context makes the directory of ``T`` public: which rows exist and
        their context values (a staff directory listing each employee's role and specialty). No
        budget is spent; the synthetic table gets the same number of rows per context tuple, with
        fresh keys, and its other attributes are drawn from the model given the context.
        """
        for e, info in self.entities.items():
            tp = self.plan.tables[e]
            if tp.parent is not None:
                continue
            names = {_col_name(e, c) for c in self.link_context_of(e)}
            attrs = [a for a in info.attrs if a.kind == "col" and a.table == e and a.name in names and a.tied_to is None]
            if not attrs:
                continue
            rows = self._entity_row_index(e)
            self.directory[e] = {a.name: self._codes(e, a, rows) for a in attrs}
            self.report.setdefault("public_directory", {})[e] = {"rows": int(len(rows[e])), "columns": [a.column for a in attrs]}

    def _per_unit_sample(self, unit: np.ndarray, m: int) -> np.ndarray:
        """Positions of at most ``m`` entries per unit value, chosen in a random order."""
        if unit.size == 0:
            return np.zeros(0, dtype=np.int64)
        perm = self.order_rng.permutation(unit.size)
        perm = perm[np.argsort(unit[perm], kind="stable")]
        u = unit[perm]
        starts = np.r_[0, np.flatnonzero(np.diff(u)) + 1]
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(u)]))
        rank = np.arange(len(u)) - starts[group]
        return np.sort(perm[rank < m])

    def _parent_entity_pos(self, e: str) -> np.ndarray:
        """For each valid row of entity ``e``: the position of its parent entity row (among valid rows)."""
        parent = self.plan.tables[e].parent
        pent = self.plan.entity_of(parent)
        prows = self._entity_row_index(pent)
        inv = np.full(self._n(parent), -1, dtype=np.int64)
        arr = prows[parent]
        ok = arr >= 0
        inv[arr[ok]] = np.flatnonzero(ok)
        mine = self.parent_idx[e][self.valid[e]]
        return inv[mine]

    def _partner(self, a: Attr, earlier: list[Attr], parent_attrs: list[Attr]) -> str | None:
        def same(b: Attr) -> bool:
            if b.kind != a.kind or b is a:
                return False
            if a.kind == "col":
                return b.column.lower() == a.column.lower() and b.table != a.table and b.encoding.family == a.encoding.family
            return b.fk.ref_table == a.fk.ref_table and b.ref_column == a.ref_column

        for b in earlier:
            if same(b):
                return b.name
        for b in parent_attrs:
            if same(b):
                return "^" + b.name
        return None

    def _partner_values(self, e: str, partner: str, rows: dict[str, np.ndarray]) -> np.ndarray:
        if partner.startswith("^"):
            pent = self.plan.entity_of(self.plan.tables[e].parent)
            pinfo = self.entities[pent]
            pa = next(a for a in pinfo.attrs if a.name == partner[1:])
            vals, _ = self._raw_attr(pent, pa, self._entity_row_index(pent))
            return vals[self._parent_entity_pos(e)]
        info = self.entities[e]
        pa = next(a for a in info.attrs if a.name == partner)
        vals, _ = self._raw_attr(e, pa, rows)
        return vals


