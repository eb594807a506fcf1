"""Neighbour invariance of every DP release path (issue 18, finding 1 and the harness it asks for).

On a database D and a neighbour D' (one tuple of one private relation added or removed), with
the noise source fixed and a fresh ledger each, everything an analyst receives must be equal
except the noisy value, what is derived from it, and separately charged DP draws. See
``tests/neighbours.py`` for the harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neighbours import (
    few_examples,
    HARNESS_DATABASE_KEY,
    write_deployment,
    VALUE_FIELDS,
    Clinic,
    assert_neighbour_invariant,
    cli_json,
    cli_text,
    clinics,
    drop_timings,
    mask_numbers,
    neighbours,
    outcome,
    run_pair,
)

from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

#: Fields that may differ between neighbours: the noisy value, the interval derived from it and
#: from the DP upper bound on RS (a separately charged Laplace draw), and that bound itself.
DP_BOUND_FIELDS: tuple[str, ...] = ("noise_scale_upper", "noise_scale_upper_exact")
ALLOW = VALUE_FIELDS + DP_BOUND_FIELDS


EPS, DELTA = "1", "1e-6"


def interval_from_public_fields(answer: dict) -> None:
    """The interval is value +- the half-width of the PUBLISHED noise-scale bound, nothing else.

    The allow-list lets the interval differ between neighbours because it is derived from the
    noisy value and the DP bound; this checks the derivation, so an interval whose width comes
    from the exact RS (finding 1: inverting it gave the count) cannot hide behind the allow-list.
    """
    from fractions import Fraction

    from pimento.mechanisms.smooth import GlobalLaplace, mechanism_for

    if "value_exact" not in answer:
        return
    assert "noise_scale_upper_exact" in answer, f"no published bound the interval could come from: {sorted(answer)}"
    value = Fraction(answer["value_exact"])
    lo, hi = (Fraction(x) for x in answer["interval_exact"])
    bound = Fraction(answer["noise_scale_upper_exact"])
    if answer["mechanism"] == "global_laplace":
        mech = GlobalLaplace.of(answer["epsilon"])
        half = mech.half_width(bound)  # the public GS / epsilon
        assert bound == 1 / Fraction(answer["epsilon"]), answer
    else:
        # the quantile is public: a function of the law, epsilon, delta and the published share only
        share = Fraction(answer["epsilon_rs_bound"]) / Fraction(answer["epsilon"])
        mech = mechanism_for(answer["epsilon"], answer["delta"] if Fraction(answer["delta"]) else None, share=share)
        assert mech.name == answer["mechanism"] and mech.epsilon_rs_bound == Fraction(answer["epsilon_rs_bound"]), answer
        half = mech.half_width(bound, mech._q_bound)
    if "value_unclamped" in answer:  # clamped at zero (post-processing): check the unclamped derivation
        value = Fraction(str(answer["value_unclamped"]))
        want = (max(value - half, Fraction(0)), max(value + half, Fraction(0)))
        assert Fraction(answer["value_exact"]) == max(value, Fraction(0)), answer
        assert answer["clamped"] == (value - half < 0), answer
    else:
        want = (value - half, value + half)
    assert (lo, hi) == want, f"interval {lo}..{hi} is not {value} +- {half} from the published bound {bound} (clamped at 0)"

QUERIES = (
    "SELECT COUNT(*) FROM Visit WHERE diagnosis = 'hiv'",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.pat_id = 1 AND v.diagnosis = 'hiv'",
    "SELECT COUNT(*) FROM Visit v JOIN Prescription r ON v.visit_id = r.visit_id WHERE r.drug = 'warfarin'",
)

#: Finding 1: RS of this count is max_k e^{-beta k}(max(c, 1) + k), strictly increasing in the
#: true count c, so printing it (or a width proportional to it) discloses c.
ATTACK = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.pat_id = 1 AND v.diagnosis = 'hiv'"

#: Each example writes two databases and runs two releases: few examples, no shrinking (a failure
#: prints its D and D' already small).
SLOW = few_examples(12)


def _session_sql(sql: str, *, epsilon: str = EPS, delta: str | None = DELTA):
    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            answer = outcome(lambda: session.release_sql(sql, epsilon, delta))
        return {**answer, "budget": cli_json(["budget", "--db", str(path)], 0)}

    return run


def _cli_sql(sql: str, *, text: bool = False):
    def run(path: Path, rng) -> dict:
        seed = rng.getrandbits(32)
        args = ["sql", "--db", str(path), "--sql", sql, "--epsilon", EPS, "--delta", DELTA, "--analyst", "ann"]
        return cli_text(args, seed) if text else cli_json(args, seed)

    return run


def _attack_pair(c: int, change: int) -> tuple[Clinic, Clinic]:
    """Patient 1 with ``c`` HIV visits (D) and with ``c + change`` (D'), other patients unchanged."""

    def clinic(hiv: int) -> Clinic:
        patients = tuple((i, f"P{i}", 1950 + i) for i in range(1, 5))
        visits = [(100 + j, 1, "hiv") for j in range(hiv)]
        visits += [(200 + j, 1 + j % 4, "flu") for j in range(9)]
        return Clinic({"Patient": patients, "Visit": tuple(visits), "Prescription": ()})

    return clinic(c), clinic(c + change)


# --------------------------------------------------------------------------------------
# Session.release_sql
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", [-1, 1])
def test_finding_1_attack_session(tmp_path, change):
    """The attack of finding 1: neighbours with different true counts give the same fields but value/interval/bound."""
    d, d2 = _attack_pair(5, change)
    assert d.count(ATTACK) != d2.count(ATTACK)
    a, b = assert_neighbour_invariant(_session_sql(ATTACK), d, d2, tmp_path, allow=ALLOW, derived=interval_from_public_fields, what=f"{change:+d} HIV visit")
    assert "error" not in a, a
    assert "value" in a and "value" in b


@pytest.mark.slow
@SLOW
@given(data=st.data(), d=clinics(), sql=st.sampled_from(QUERIES))
def test_release_sql_neighbour_invariant(tmp_path_factory, data, d, sql):
    what, d2 = data.draw(neighbours(d))
    assert_neighbour_invariant(_session_sql(sql), d, d2, tmp_path_factory.mktemp("n"), allow=ALLOW, derived=interval_from_public_fields, what=f"{what}; {sql}")


@pytest.mark.parametrize("delta", [DELTA, None])
def test_pure_and_approximate_dp_join_counts(tmp_path, delta):
    """Both noise laws (Laplace with delta, the quartic law without) on the attack's neighbours."""
    d, d2 = _attack_pair(3, 1)
    assert_neighbour_invariant(_session_sql(ATTACK, delta=delta), d, d2, tmp_path, allow=ALLOW, derived=interval_from_public_fields, what=f"delta={delta}")


# --------------------------------------------------------------------------------------
# pimento sql --json and its text output
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", [-1, 1])
def test_finding_1_attack_cli_json(tmp_path, change):
    d, d2 = _attack_pair(6, change)
    a, _ = assert_neighbour_invariant(_cli_sql(ATTACK), d, d2, tmp_path, allow=ALLOW, derived=interval_from_public_fields, what="pimento sql --json")
    assert "value" in a, a


def _allowed_numbers(data: dict) -> list:
    """The numbers of the allowed fields of one JSON answer (to mask them in the text twins).

    The texts of D and D' are masked with the union of both answers' allowed numbers, so the
    mask is the same on both sides; a private number that happens to equal an allowed one is
    masked too (a weakness of comparing text; the JSON comparison has none).
    """
    from neighbours import _allowed, flatten

    return [v for p, v in flatten(data).items() if p != "." and _allowed(p, ALLOW) and not isinstance(v, tuple)]


def test_finding_1_attack_cli_text(tmp_path):
    """The text output too: equal on D and D' once the allowed numbers (from its JSON twin) are masked."""
    d, d2 = _attack_pair(6, -1)
    as_json = run_pair(_cli_sql(ATTACK), d, d2, tmp_path / "json")
    as_text = run_pair(_cli_sql(ATTACK, text=True), d, d2, tmp_path / "text")
    allowed = _allowed_numbers(as_json[0]) + _allowed_numbers(as_json[1])  # the same mask on both sides
    masked = [mask_numbers(t["stdout"], allowed) for t in as_text]
    assert as_text[0]["exit_code"] == as_text[1]["exit_code"] == 0, as_text
    assert masked[0] == masked[1], f"text output differs between neighbours beyond the allowed numbers:\nD : {masked[0]}\nD': {masked[1]}"


# --------------------------------------------------------------------------------------
# Error paths: the same error text, and the same budget afterwards, on D and D'
# --------------------------------------------------------------------------------------


def test_a_failing_selection_gives_the_same_error_on_neighbours(tmp_path):
    """A WHERE that fails on some private rows must not tell D from D' (finding 9's oracle)."""
    sql = "SELECT COUNT(*) FROM Patient WHERE CAST(name AS INTEGER) = 1"
    d = Clinic({"Patient": ((1, "Ana Baker", 1970), (2, "Bo Chen", 1980)), "Visit": (), "Prescription": ()})
    d2 = d.without_row("Patient", (1, "Ana Baker", 1970))
    a, b = assert_neighbour_invariant(_session_sql(sql), d, d2, tmp_path / "s", allow=ALLOW, derived=interval_from_public_fields, what="session error")
    assert "Ana Baker" not in str(a) and "Bo Chen" not in str(b)
    assert_neighbour_invariant(_cli_sql(sql), d, d2, tmp_path / "c", allow=ALLOW, derived=interval_from_public_fields, what="CLI error")


def test_a_failure_after_the_charge_gives_one_fixed_message_on_neighbours(tmp_path, monkeypatch):
    """An engine error while the private data is read (here: RS computation failing with a message that
    carries a private count) must read the same on D and D', and the charge must stand on both."""
    import pimento.sensitivity
    from pimento.errors import DataSourceError

    def failing(engine, query, catalog, beta, **kw):
        n = engine.execute("SELECT COUNT(*) FROM Visit WHERE diagnosis = 'hiv'").scalar()
        raise DataSourceError(f"Out of Memory Error: failed after {n} hiv rows")

    monkeypatch.setattr(pimento.sensitivity, "residual_sensitivity", failing)
    d, d2 = _attack_pair(4, 1)
    a, b = assert_neighbour_invariant(_session_sql(ATTACK), d, d2, tmp_path / "s", allow=ALLOW, what="failure after charge")
    assert "error" in a and "hiv rows" not in a["message"], a
    assert a["budget"]["spent"]["epsilon"] == EPS, a["budget"]  # the charge stands
    c, _ = assert_neighbour_invariant(_cli_sql(ATTACK), d, d2, tmp_path / "c", allow=ALLOW, what="CLI failure after charge")
    assert c["exit_code"] == 2 and "hiv rows" not in c["stderr"], c


def test_an_unsupported_query_is_refused_alike_on_neighbours(tmp_path):
    """A refusal by the parser (data-independent) is identical, and nothing differs in the budget."""
    d, d2 = _attack_pair(2, 1)
    a, _ = assert_neighbour_invariant(
        _session_sql("SELECT pat_id, COUNT(*) FROM Visit GROUP BY pat_id HAVING COUNT(*) > 1"), d, d2, tmp_path, allow=ALLOW,
        derived=interval_from_public_fields, what="refusal"
    )
    assert "error" in a


# --------------------------------------------------------------------------------------
# Grouped COUNT, SUM and AVG (issue 25): only the noisy values and what derives from them differ
# --------------------------------------------------------------------------------------

GROUPED_CONFIG = '[domains]\n"Visit.diagnosis" = ["flu", "hiv", "asthma", "none"]\n\n[bounds]\n"Patient.birth_year" = [1900, 2020]\n'
GROUPED_QUERIES = (
    "SELECT v.diagnosis, COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis",
    "SELECT v.diagnosis, SUM(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis",
    "SELECT v.diagnosis, AVG(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis",
    "SELECT v.diagnosis, COUNT(*) FROM Visit v GROUP BY v.diagnosis",
    "SELECT SUM(p.birth_year) FROM Patient p",
    "SELECT SUM(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'hiv'",  # one value, a join
    "SELECT r.drug, COUNT(*) FROM Prescription r GROUP BY r.drug",  # an undeclared private domain: partition selection
    "SELECT SUM(v.visit_id) FROM Visit v",  # no bounds: refused alike
)
#: per group: the noisy values and their intervals; per released vector: its DP bound of the noise scale
GROUPED_ALLOW = ALLOW + ("groups.*.value", "groups.*.value_exact", "groups.*.interval*", "groups.*.sum", "groups.*.count",
                         "releases.*.noise_scale_upper", "releases.*.noise_scale_upper_exact")
#: partition selection: which keys are shown is the DP output itself
SELECTION_ALLOW = GROUPED_ALLOW + ("groups", "groups.*")


def grouped_intervals_from_public_fields(answer: dict) -> None:
    """Each group's interval is its value +- the half-width of the PUBLISHED scale bound (clamped at 0), nothing else."""
    from fractions import Fraction

    from pimento.mechanisms.smooth import GlobalLaplace, mechanism_for
    from pimento.mechanisms.vector_smooth import VectorSmoothLaplace

    if "groups" not in answer or answer["aggregate"] == "avg" or answer["partition_selection"]:
        return
    (part,) = answer["releases"]
    grid, bound = Fraction(part["grid"]), Fraction(part["noise_scale_upper_exact"])
    share = Fraction(part["epsilon_rs_bound"]) / Fraction(part["epsilon"])
    if part["mechanism"] == "global_laplace":
        half = GlobalLaplace.of(part["epsilon"]).half_width(bound / grid) * grid
    elif part["mechanism"] == "smooth_laplace":  # one value over a join: the scalar mechanism
        scalar = mechanism_for(part["epsilon"], part["delta"], share=share)
        half = scalar.half_width(bound / grid, scalar._q_bound) * grid
    else:
        share = Fraction(part["epsilon_rs_bound"]) / Fraction(part["epsilon"])
        mech = VectorSmoothLaplace.of(part["epsilon"], part["delta"], dimension=len(answer["groups"]), share=share)
        half = mech.half_width(bound / grid, mech._q_bound) * grid
    for group in answer["groups"]:
        lo, hi = (Fraction(x) for x in group["interval_exact"])
        value = Fraction(group["value_exact"])
        assert lo <= value <= hi and hi - lo <= 2 * half and (lo == 0 or hi - lo == 2 * half), (group, half)


@pytest.mark.parametrize("sql", GROUPED_QUERIES)
def test_a_grouped_release_differs_only_in_its_noisy_values(tmp_path, sql):
    """Patient 1 with one more HIV visit: every field but the noisy values (and, under partition selection, the keys shown) is equal."""
    d, d2 = _attack_pair(3, 1)
    d = d.with_row("Prescription", (1000, 100, "warfarin"))
    d2 = d2.with_row("Prescription", (1000, 100, "warfarin"))
    allow = SELECTION_ALLOW if "drug" in sql else GROUPED_ALLOW
    a, _ = assert_neighbour_invariant(_session_sql(sql), d, d2, tmp_path, allow=allow, config=GROUPED_CONFIG,
                                      derived=grouped_intervals_from_public_fields, what=sql)
    assert ("error" in a) == ("visit_id" in sql), a


@pytest.mark.slow
@few_examples(6)
@given(data=st.data(), d=clinics(), sql=st.sampled_from(GROUPED_QUERIES[:6]))
def test_grouped_release_neighbour_invariant(tmp_path_factory, data, d, sql):
    what, d2 = data.draw(neighbours(d))
    assert_neighbour_invariant(_session_sql(sql), d, d2, tmp_path_factory.mktemp("g"), allow=GROUPED_ALLOW, config=GROUPED_CONFIG,
                               derived=grouped_intervals_from_public_fields, what=f"{what}; {sql}")


# --------------------------------------------------------------------------------------
# pimento ask / Session.ask: the search runs on ONE synthetic copy (a separately charged DP
# release), the same for D and D'
# --------------------------------------------------------------------------------------


COPY_BUDGET = ("1.6", "1e-6")
COPY_ID = "neighbour-invariance-copy"


def charged_copy(folder: Path, workdir: Path) -> Path:
    """A stand-in for `pimento synth`'s copy of the database that :func:`run_pair` writes under ``workdir``.

    A clinic with other data, with the copy's metadata row (budget, copy id, the key of the
    database it stands for). Each run charges the copy to its fresh ledger (:func:`_charge_copy`)
    as `pimento synth` would, so D and D' use ONE copy, a separately charged DP release.
    """
    import json

    import duckdb

    from pimento.synth import META_TABLE

    folder.mkdir(parents=True, exist_ok=True)
    rows = _attack_pair(4, 0)[0].with_row("Visit", (999, 2, "hiv"))
    path = rows.write(folder / "clinic.synthetic.duckdb")
    con = duckdb.connect(str(path))
    con.execute(
        f"CREATE TABLE {META_TABLE} (epsilon VARCHAR NOT NULL, delta VARCHAR NOT NULL, root VARCHAR NOT NULL, "
        "seed BIGINT NOT NULL, source_fingerprint VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, "
        "pimento_version VARCHAR NOT NULL, ledger_charge VARCHAR, details VARCHAR NOT NULL, "
        "copy_id VARCHAR NOT NULL, database_key VARCHAR NOT NULL)"
    )
    con.execute(
        f"INSERT INTO {META_TABLE} VALUES (?, ?, 'Patient', 0, 'stand-in', TIMESTAMP '2026-01-01', 'test', NULL, ?, ?, ?)",
        [*COPY_BUDGET, json.dumps({}), COPY_ID, HARNESS_DATABASE_KEY],  # the deployment D and D' share
    )
    con.close()
    return path


def _charge_copy(session: Session) -> None:
    from pimento.mechanisms import Budget

    session.ledger.charge_synthetic(session.location, Budget.of(*COPY_BUDGET), copy_id=COPY_ID)


#: A join the search cannot drop (the predicate reads both relations), so the release is a smooth one.
ASK_SEEDS = ("SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE p.birth_year < 1953 AND v.diagnosis = 'hiv'",)


def _session_ask(synthetic: Path):
    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            _charge_copy(session)
            answer = outcome(
                lambda: session.ask("", synthetic=synthetic, epsilon=EPS, delta=DELTA, seed_sql=ASK_SEEDS)
            )
        return {**drop_timings(answer), "budget": cli_json(["budget", "--db", str(path)], 0)}

    return run


def _cli_ask(synthetic: Path, *, text: bool = False):
    def run(path: Path, rng) -> dict:
        with Session(path, analyst="ann") as session:
            _charge_copy(session)
        args = ["ask", "", "--db", str(path), "--synthetic", str(synthetic), "--epsilon", EPS, "--delta", DELTA, "--analyst", "ann", "--yes"]
        for sql in ASK_SEEDS:
            args += ["--seed-sql", sql]
        seed = rng.getrandbits(32)
        return cli_text(args, seed) if text else drop_timings(cli_json(args, seed))

    return run


@pytest.mark.parametrize("change", [-1, 1])
def test_finding_1_attack_ask_session(tmp_path, change):
    d, d2 = _attack_pair(5, change)
    synthetic_copy = charged_copy(tmp_path / "syn", tmp_path)
    a, _ = assert_neighbour_invariant(_session_ask(synthetic_copy), d, d2, tmp_path, allow=ALLOW, derived=interval_from_public_fields, what="Session.ask")
    assert "value" in a, a


def test_finding_1_attack_ask_cli(tmp_path):
    d, d2 = _attack_pair(5, 1)
    synthetic_copy = charged_copy(tmp_path / "syn", tmp_path / "json")
    a, _ = assert_neighbour_invariant(_cli_ask(synthetic_copy), d, d2, tmp_path / "json", allow=ALLOW, derived=interval_from_public_fields, what="pimento ask --json")
    assert "value" in a, a
    as_text = run_pair(_cli_ask(charged_copy(tmp_path / "syn_t", tmp_path / "text"), text=True), d, d2, tmp_path / "text")
    as_json = run_pair(_cli_ask(charged_copy(tmp_path / "syn_j", tmp_path / "json2")), d, d2, tmp_path / "json2")
    allowed = _allowed_numbers(as_json[0]) + _allowed_numbers(as_json[1])  # the same mask on both sides
    masked = [mask_numbers(t["stdout"], allowed) for t in as_text]
    assert as_text[0]["exit_code"] == 0, as_text[0]
    assert masked[0] == masked[1], f"pimento ask text differs between neighbours:\nD : {masked[0]}\nD': {masked[1]}"


def test_search_output_is_identical_on_neighbours(tmp_path):
    """`pimento search` reads only the synthetic copy: nothing at all may differ (timings aside)."""
    d, d2 = _attack_pair(5, 1)
    synthetic_copy = charged_copy(tmp_path / "syn", tmp_path)

    def run(path: Path, rng) -> dict:
        with Session(path, analyst="ann") as session:
            _charge_copy(session)
        args = ["search", "", "--db", str(path), "--synthetic", str(synthetic_copy), "--seed-sql", ASK_SEEDS[0]]
        return {"json": drop_timings(cli_json(args, 0)), "text": " ".join(cli_text(args, 0)["stdout"].split(" evaluations")[0:1])}

    a, _ = assert_neighbour_invariant(run, d, d2, tmp_path, allow=(), what="pimento search")
    assert "sql" in a["json"], a


@pytest.mark.slow
@settings(SLOW, max_examples=6)
@given(data=st.data(), d=clinics(min_patients=2))
def test_ask_neighbour_invariant(tmp_path_factory, data, d):
    what, d2 = data.draw(neighbours(d))
    workdir = tmp_path_factory.mktemp("a")
    synthetic_copy = charged_copy(workdir / "syn", workdir)
    assert_neighbour_invariant(_session_ask(synthetic_copy), d, d2, workdir, allow=ALLOW, derived=interval_from_public_fields, what=what)


# --------------------------------------------------------------------------------------
# The harness itself can fail: a field computed from the private data is caught
# --------------------------------------------------------------------------------------


def test_harness_catches_a_private_field(tmp_path):
    d, d2 = _attack_pair(3, 1)

    def leaky(path: Path, rng) -> dict:
        import duckdb

        con = duckdb.connect(str(path), read_only=True)
        n = con.execute("SELECT COUNT(*) FROM Visit").fetchone()[0]
        con.close()
        return {"value": n + rng.randint(-3, 3), "visits": n}

    with pytest.raises(AssertionError, match="visits"):
        assert_neighbour_invariant(leaky, d, d2, tmp_path, allow=ALLOW)
    # ... and the noisy value alone passes.
    assert_neighbour_invariant(lambda p, r: {"value": leaky(p, r)["value"]}, d, d2, tmp_path, allow=ALLOW)


def test_text_masking_hides_only_the_allowed_numbers():
    text = "7 (95% interval 1 .. 13) noise laplace scale 2.5 (rs 3.25)"
    assert mask_numbers(text, [7, 1, 13]) == "<n> (95% interval <n> .. <n>) noise laplace scale 2.5 (rs 3.25)"


# --------------------------------------------------------------------------------------
# docs/analyst-learns.md lists every field an analyst receives
# --------------------------------------------------------------------------------------


def test_docs_page_names_every_analyst_field(tmp_path):
    """Each top-level JSON field of sql, ask, search, budget and authorize is named in docs/analyst-learns.md."""
    from types import SimpleNamespace

    from pimento.policy.enforce import Authorization

    page = (Path(__file__).resolve().parents[2] / "docs" / "analyst-learns.md").read_text(encoding="utf-8")
    d, _ = _attack_pair(3, 0)
    folder = tmp_path / "db"
    folder.mkdir()
    path = d.write(folder / "clinic.duckdb")
    (folder / "pimento.toml").write_text(GROUPED_CONFIG)  # bounds and domains: only grouped and summed releases read them
    write_deployment(path)
    synthetic = charged_copy(tmp_path / "syn", tmp_path)
    with Session(path, analyst="ann") as session:
        _charge_copy(session)
    sql = cli_json(["sql", "--db", str(path), "--sql", ATTACK, "--epsilon", EPS, "--delta", DELTA, "--analyst", "ann"], 1)
    ask = cli_json(
        ["ask", "", "--db", str(path), "--synthetic", str(synthetic), "--epsilon", EPS, "--delta", DELTA, "--analyst", "ann",
         "--seed-sql", ASK_SEEDS[0], "--yes"],
        2,
    )
    search = cli_json(["search", "", "--db", str(path), "--synthetic", str(synthetic), "--seed-sql", ASK_SEEDS[0]], 3)
    budget = cli_json(["budget", "--db", str(path)], 4)
    context = SimpleNamespace(sender="employee:1", recipient="researcher:2", purpose="research")
    authorize = Authorization(context, "p", "SELECT 1", ("x",), ((1,),)).to_dict()  # type: ignore[arg-type]
    grouped = cli_json(["sql", "--db", str(path), "--sql", GROUPED_QUERIES[2], "--epsilon", EPS, "--delta", DELTA, "--analyst", "bob"], 5)
    outputs = {"sql": sql, "ask": ask, "search": search, "search.alternatives": search["alternatives"][0], "budget": budget,
               "authorize": authorize, "sql (grouped)": grouped, "sql (grouped).groups": grouped["groups"][0],
               "sql (grouped).releases": grouped["releases"][0]}
    for name, data in outputs.items():
        assert "exit_code" not in data, (name, data)
        missing = sorted(k for k in data if f"`{k}`" not in page)
        assert not missing, f"docs/analyst-learns.md does not name {missing} of `pimento {name}`"


# --------------------------------------------------------------------------------------
# The person unit (issue 26): D' is D without ONE PERSON and every row that references them
# --------------------------------------------------------------------------------------

PERSON_CONFIG = '[privacy]\nunit = "Patient"\nmax_contribution = 8\n'
PERSON_QUERIES = (
    "SELECT COUNT(*) FROM Visit WHERE diagnosis = 'hiv'",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'",
    "SELECT COUNT(*) FROM Visit v JOIN Prescription r ON v.visit_id = r.visit_id WHERE r.drug = 'warfarin'",
    "SELECT COUNT(DISTINCT v.pat_id) FROM Visit v WHERE v.diagnosis = 'hiv'",
    "SELECT COUNT(DISTINCT v.diagnosis) FROM Visit v",  # refused alike, before the charge
)


def person_interval_from_public_fields(answer: dict) -> None:
    """The interval of a person-unit count is a function of the value and the public plan the answer states, nothing else."""
    from fractions import Fraction

    from pimento.mechanisms.r2t import error_bound, r2t_plan
    from pimento.mechanisms.smooth import GlobalLaplace
    from pimento.mechanisms.budget import Budget
    from pimento.release.person_release import R2T_BETA

    if "value_exact" not in answer:
        return
    choice = answer["person_release"]
    assert answer["unit"] == choice["unit"] == "Patient" and answer["mechanism"] == choice["mechanism"], answer
    eps, value = Fraction(answer["epsilon"]), Fraction(str(answer["value_unclamped"]))
    lo, hi = (Fraction(x) for x in answer["interval_exact"])
    if choice["mechanism"] == "r2t" and len(choice["thresholds"]) > 1:
        plan = r2t_plan(eps, choice["max_contribution"], beta=R2T_BETA, lp=choice["several_persons"])
        assert list(plan.thresholds) == choice["thresholds"] and Fraction(answer["noise_scale_upper_exact"]) == max(plan.scales)
        want = (value, value + error_bound(plan, plan.gs))
    else:
        (tau,) = choice["thresholds"]
        s = tau + 1 if choice["several_persons"] else tau
        assert Fraction(answer["noise_scale_upper_exact"]) == s / eps, answer
        half = GlobalLaplace(Budget.spend(eps), gs=s).half_width(s / eps)
        if choice["mechanism"] == "r2t":
            half = Fraction(error_bound(r2t_plan(eps, 1, beta=R2T_BETA, lp=choice["several_persons"]), 1))
        want = (value - half, value + half)
    assert (lo, hi) == (max(want[0], Fraction(0)), max(want[1], Fraction(0))), (answer, want)


def _person_sql(sql: str, synthetic: Path | None):
    from pimento.release.request import SearchOptions

    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            if synthetic is not None:
                _charge_copy(session)
            answer = outcome(lambda: session.release_sql(sql, EPS, search=SearchOptions(synthetic=synthetic)))
        return {**answer, "budget": cli_json(["budget", "--db", str(path)], 0)}

    return run


def _heavy_pair() -> tuple[Clinic, Clinic]:
    """Patient 1 with five HIV visits and a prescription on each (D), and D without patient 1 and their rows (D')."""
    from neighbours import without_person

    d = _attack_pair(5, 0)[0]
    for j in range(5):
        d = d.with_row("Prescription", (1000 + j, 100 + j, "warfarin"))
    return d, without_person(d, 1)


@pytest.mark.parametrize("with_copy", [True, False])
@pytest.mark.parametrize("sql", PERSON_QUERIES)
def test_a_person_unit_release_differs_only_in_its_noisy_value(tmp_path, sql, with_copy):
    """One person (and their ten rows) less: every field but the noisy value is equal; refusals are alike."""
    d, d2 = _heavy_pair()
    assert d.count(PERSON_QUERIES[0]) != d2.count(PERSON_QUERIES[0])
    synthetic = charged_copy(tmp_path / "syn", tmp_path) if with_copy else None
    a, b = assert_neighbour_invariant(_person_sql(sql, synthetic), d, d2, tmp_path, config=PERSON_CONFIG,
                                      derived=person_interval_from_public_fields, what=f"person unit; {sql}")
    assert ("error" in a) == ("v.diagnosis)" in sql), a
    if "error" not in a:
        assert a["unit"] == "Patient" and a["budget"]["spent"]["epsilon"] == ("2.6" if with_copy else EPS)  # the copy's 1.6 too


@pytest.mark.slow
@few_examples(8)
@given(data=st.data(), d=clinics(), sql=st.sampled_from(PERSON_QUERIES[:4]))
def test_person_unit_release_neighbour_invariant(tmp_path_factory, data, d, sql):
    from neighbours import person_neighbours

    what, d2 = data.draw(person_neighbours(d))
    workdir = tmp_path_factory.mktemp("p")
    assert_neighbour_invariant(_person_sql(sql, charged_copy(workdir / "syn", workdir)), d, d2, workdir, config=PERSON_CONFIG,
                               derived=person_interval_from_public_fields, what=f"{what}; {sql}")
