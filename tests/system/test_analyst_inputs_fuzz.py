"""Fuzz what an analyst can now send (issue 25/26 inputs), on a database D and a neighbour D' (one tuple).

The brief's standard: whether a release answers or fails is an output too, so after the charge nothing may fail because of
the data. With the noise fixed and ONE synthetic copy for both databases, for random analyst inputs:

1. narrowed clipping ``bounds`` (inside, outside or equal to the declared ``[bounds]``, lo > hi, many places, exponents,
   negative zero, NaN and infinity texts, unicode digits, unknown and unsummed columns, a name twice; over HTTP non-string
   JSON values too) with grouped and summed SQL through ``Session.release_sql`` and ``POST /v1/sql``;
2. ``accept_noise`` (true, false, missing, garbage) over ``POST /v1/sql``;
3. grouped and summed questions through ``Session.ask`` and ``POST /v1/ask``

give the same outcome on D and D' (the answer, or the error's type and message; the HTTP status), and every field of an
answer equal except the noisy values and what is derived from them (tests/neighbours.py). A refusal leaves the ledger as it
was; an answer charges it exactly once; no analyst input ends in an InternalError or a 500.

Checked against mutants applied in process (not in the tree): narrowed bounds refused when they would clip private rows
(caught: outcome differs), the clipping prediction counted on the private data (caught: ``clipped_on_copy`` differs), a
plan refusal after the charge (caught: a refusal charged), the admission's bounds check removed (caught: InternalError),
the mostly-noise decision made on the private answer (caught by the deterministic HIV pair).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neighbours import DIAGNOSES, Clinic, assert_neighbour_invariant, clinics, drop_timings, few_examples, fixed_noise, neighbours, outcome
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session
from test_neighbour_invariance import GROUPED_ALLOW, _charge_copy, charged_copy

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

#: Declared bounds of two columns (so a narrowing may name a declared column the query does not sum) and the domains.
CONFIG = (
    '[ledger]\nanalyst_share = "1"\n\n[domains]\n"Visit.diagnosis" = ["flu", "hiv", "asthma", "none"]\n\n'
    '[bounds]\n"Patient.birth_year" = [1900, 2020]\n"Visit.visit_id" = [0, 5000]\n'
)
SQLS = (
    "SELECT SUM(p.birth_year) FROM Patient p",  # one relation: global Laplace
    "SELECT AVG(p.birth_year) FROM Patient p",
    "SELECT v.diagnosis, SUM(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis",
    "SELECT v.diagnosis, AVG(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis",
    "SELECT SUM(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'hiv'",  # smooth, one value
    "SELECT v.diagnosis, SUM(v.visit_id) FROM Visit v GROUP BY v.diagnosis",
    "SELECT v.diagnosis, COUNT(*) FROM Visit v GROUP BY v.diagnosis",  # a COUNT: any bounds refused
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'",
)
COLUMNS = ("Patient.birth_year", "patient.BIRTH_YEAR", "Visit.visit_id", "Visit.diagnosis", "Nope.col", "birth_year",
           "Patient.", ".birth_year", " Patient.birth_year", "Patient.birth_year ", "Pati\u00e9nt.birth_year", "Patient.birth_year.x")
#: number texts an analyst may type: plain, inside/at/outside the declared [1900, 2020] (and [0, 5000]), odd forms
NUMBER_TEXTS = (
    "1900", "2020", "1950", "1950.5", "1900.000001", "2019.999999", "1900.0000001", "1960.1234567890123", "1899", "2021",
    "-0", "-0.0", "0", "0.000001", "1e3", "1.95e3", "2.02E+3", "1.95e3000", "1e-400", "1e400", "NaN", "nan", "inf", "-Infinity",
    "Infinity", "\uff11\uff19\uff15\uff10", "\u0661\u0669\u0665\u0660", "1950/1", "3901/2", "1/3", "", " ", " 1950 ", "1_950",
    "0x7a0", "+1950", "--1950", "1950.", ".5", "19 50", "1,950", "\u00bd", "1950\u0000", "9" * 250, "5000", "4999.5", "100",
)
JSON_OTHER = (None, True, False, 1950, 2020, 1950.25, 1e308, -0.0, 1e-7, [1950], {"a": 1}, 10**30)


@st.composite
def number_texts(draw: Any) -> str:
    """One bound as text: from the list, or a random decimal near the declared interval."""
    if draw(st.booleans()):
        return draw(st.sampled_from(NUMBER_TEXTS))
    places = draw(st.integers(0, 8))
    whole = draw(st.integers(1890, 2030))
    frac = draw(st.integers(0, 10**places - 1)) if places else 0
    return f"{whole}.{frac:0{places}d}" if places else str(whole)


@st.composite
def well_formed(draw: Any, summed: str) -> tuple[str, list[str]]:
    """Mostly the column the query sums (else the other declared one), and an ordered pair of decimals of up to 6 places
    near its declared interval (mostly inside it: the likely answers)."""
    other = "Visit.visit_id" if summed == "Patient.birth_year" else "Patient.birth_year"
    name = draw(st.sampled_from((summed, summed, summed.lower(), summed.upper(), other)))
    ends = []
    for _ in range(2):
        places = draw(st.integers(0, 6))
        whole = draw(st.sampled_from(range(1898, 2022) if "birth" in name.lower() else range(-2, 5002)))
        ends.append(f"{whole}.{draw(st.integers(0, 10**places - 1)):0{places}d}" if places else str(whole))
    return name, sorted(ends, key=float)


@st.composite
def bounds_values(draw: Any, *, summed: str = "Patient.birth_year", json_values: bool = False) -> Any:
    """What an analyst may send as ``bounds``: a mapping (the body), a list of ``T.c=LO:HI`` texts (``--bounds``), or junk;
    about two thirds well-formed (one summable column, ordered decimals), the rest adversarial."""
    shape = draw(st.sampled_from(("mapping", "mapping", "texts", "one_text", "junk") if not json_values else ("mapping",) * 4 + ("junk",)))
    if shape == "junk" and draw(st.booleans()):
        return draw(st.sampled_from(("Patient.birth_year=1950:2000", 5, [], {}, {"Patient.birth_year": "1950:2000"},
                                     {"Patient.birth_year": ["1950"]}, {"Patient.birth_year": ["1950", "1960", "1970"]})))
    if draw(st.integers(0, 2)):
        name, pair = draw(well_formed(summed))
        names, pairs = [name], [pair]
    else:
        names = [draw(st.sampled_from(COLUMNS)) for _ in range(draw(st.integers(1, 3)))]
        if draw(st.integers(0, 3)) == 0:
            names.append(names[0].upper())  # the same column twice
        pairs = []
        for _name in names:
            value = st.sampled_from(JSON_OTHER) if json_values and draw(st.integers(0, 2)) == 0 else number_texts()
            pairs.append([draw(value), draw(value)])
    if shape == "texts" or (shape == "junk" and not json_values):
        return [f"{name}={lo}:{hi}" for name, (lo, hi) in zip(names, pairs, strict=True)]
    if shape == "one_text":
        return (f"{names[0]}={pairs[0][0]}:{pairs[0][1]}",)
    return dict(zip(names, pairs))  # a mapping keeps the last of a repeated exact name


def _summed(sql: str) -> str:
    """The declared column ``sql`` sums (the birth year when it sums nothing: any bounds are then refused)."""
    return "Visit.visit_id" if "SUM(v.visit_id)" in sql else "Patient.birth_year"


def _charges(session: Session) -> int:
    return len([c for c in session.ledger.charges() if c.analyst == "ann"])


def _session_sql(sql: str, bounds: Any):
    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            answer = outcome(lambda: session.release_sql(sql, "1", "1e-6", bounds=bounds))
            charges = _charges(session)
        assert answer.get("error") != "InternalError", answer  # every refusal of an analyst's input is a clear user error
        assert charges == (0 if "error" in answer else 1), (answer, charges)  # a refusal spends nothing; an answer once
        return {**drop_timings(answer), "charges": charges}

    return run


@few_examples(25)
@given(data=st.data(), d=clinics(max_patients=5, max_visits=8), sql=st.sampled_from(SQLS))
def test_narrowed_bounds_fuzz_session(tmp_path_factory, data, d, sql):
    """Item 1 through ``Session.release_sql``: the same outcome on D and D' for any bounds the analyst sends."""
    bounds = data.draw(bounds_values(summed=_summed(sql)))
    what, d2 = data.draw(neighbours(d))
    assert_neighbour_invariant(_session_sql(sql, bounds), d, d2, tmp_path_factory.mktemp("b"), allow=GROUPED_ALLOW, config=CONFIG,
                               what=f"{what}; {sql}; bounds={bounds!r}")


# --------------------------------------------------------------------------------------------------- HTTP


#: per HTTP answer: the noisy values and their DP bounds (the harness's GROUPED_ALLOW under the response's key)
HTTP_ALLOW = tuple(f"sql.body.{p}" for p in GROUPED_ALLOW) + tuple(f"ask.body.{p}" for p in GROUPED_ALLOW)
MISSING = object()


def _install_copy(path: Path, copy: Path) -> None:
    """The one synthetic copy beside the database (where the deployment looks), charged to its fresh ledger."""
    shutil.copy(copy, path.parent / "clinic.synthetic.duckdb")
    with Session(path, analyst="ann") as session:
        _charge_copy(session)


def _http(copy: Path, sql_body: dict[str, Any] | None, ask_body: dict[str, Any] | None):
    """``run`` for the harness: a deployment on the database with the shared copy, the bodies posted with the noise fixed;
    each response as its status and JSON, with the charges before and after."""

    def run(path: Path, rng) -> dict:
        from fastapi.testclient import TestClient

        from pimento.service.app import ServiceOptions, create_app
        from pimento.service.deployment import Deployment, SearchSettings

        _install_copy(path, copy)
        deployment = Deployment(path, search=SearchSettings(rollouts=1, k=3))
        entry, key = deployment.add_key("ann")
        client = TestClient(create_app(deployment, ServiceOptions(rate=1000, burst=1000)), raise_server_exceptions=False)
        headers = {"Authorization": f"Bearer {key}"}
        out: dict[str, Any] = {}
        with fixed_noise(rng.getrandbits(32)):
            for name, route, body in (("sql", "/v1/sql", sql_body), ("ask", "/v1/ask", ask_body)):
                if body is None:
                    continue
                before = _service_charges(deployment, entry.analyst)
                response = client.post(route, headers=headers, json={k: v for k, v in body.items() if v is not MISSING})
                after = _service_charges(deployment, entry.analyst)
                assert response.status_code != 500, response.text  # a crash is never an outcome
                assert after - before == (1 if response.status_code == 200 else 0), (response.status_code, response.text, before, after)
                out[name] = {"status": response.status_code, "body": drop_timings(response.json()), "charged": after - before}
        return out

    return run


def _service_charges(deployment, analyst: str) -> int:
    with deployment.ledger() as ledger:
        return len([c for c in ledger.charges() if c.analyst == analyst])


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """ONE synthetic copy (a separately charged DP release) for every D and D': 60 patients and 200 visits, so that at
    epsilon 1 or 3 most answers are not predicted mostly noise (at 0.01 they are), with the metadata of
    :func:`charged_copy`'s stand-in (the copy id and the deployment D and D' share)."""
    import duckdb

    from pimento.synth import META_TABLE

    folder = tmp_path_factory.mktemp("copy")
    small = charged_copy(folder / "small", folder)
    rng = random.Random(7)
    patients = tuple((i, f"P{i}", rng.randint(1930, 2010)) for i in range(1, 61))
    visits = tuple((100 + j, rng.randint(1, 60), rng.choice(DIAGNOSES)) for j in range(200))
    path = Clinic({"Patient": patients, "Visit": visits, "Prescription": ()}).write(folder / "clinic.synthetic.duckdb")
    con = duckdb.connect(str(path))
    try:
        con.execute(f"ATTACH '{small}' AS small (READ_ONLY)")
        con.execute(f"CREATE TABLE {META_TABLE} AS SELECT * FROM small.{META_TABLE}")
    finally:
        con.close()
    return path


#: accept_noise as sent: true, false, left out, what pydantic reads as a bool ("yes", 1, "0") and what it refuses (422);
#: the tiny copy predicts most answers mostly noise, so without acceptance most are a 409
ACCEPT: tuple[Any, ...] = (True, MISSING, MISSING, False, False, "yes", 1, "0", None, "garbage", 2, [])


@few_examples(14)
@given(data=st.data(), d=clinics(max_patients=5, max_visits=8), sql=st.sampled_from(SQLS))
def test_bounds_fuzz_http(tmp_path_factory, copy, data, d, sql):
    """Item 1 through ``POST /v1/sql`` (noise accepted, so the bounds reach the release): the same status and fields
    on D and D' for any JSON ``bounds`` (422 from the body's schema or the admission, or 200)."""
    bounds = data.draw(bounds_values(summed=_summed(sql), json_values=True))
    what, d2 = data.draw(neighbours(d))
    body = {"sql": sql, "epsilon": "1", "delta": "1e-6", "accept_noise": True, "bounds": bounds}
    assert_neighbour_invariant(_http(copy, body, None), d, d2, tmp_path_factory.mktemp("h"), allow=HTTP_ALLOW, config=CONFIG,
                               what=f"{what}; {body!r}")


@few_examples(14)
@given(data=st.data(), d=clinics(max_patients=5, max_visits=8), sql=st.sampled_from(SQLS),
       epsilon=st.sampled_from(("3", "1", "0.01")), accept=st.sampled_from(ACCEPT),
       bounds=st.sampled_from((MISSING, None, {"Patient.birth_year": ["1950", "2000.5"]}, {"Visit.visit_id": [100, 150]})))
def test_accept_noise_fuzz_http(tmp_path_factory, copy, data, d, sql, epsilon, accept, bounds):
    """Item 2 through ``POST /v1/sql``: the same status on D and D' (409 mostly noise, 422, 200) and the same fields."""
    what, d2 = data.draw(neighbours(d))
    body = {"sql": sql, "epsilon": epsilon, "delta": "1e-6", "accept_noise": accept, "bounds": bounds}
    assert_neighbour_invariant(_http(copy, body, None), d, d2, tmp_path_factory.mktemp("h"), allow=HTTP_ALLOW, config=CONFIG,
                               what=f"{what}; {body!r}")


@pytest.mark.parametrize("sql", SQLS)
def test_accept_noise_left_out_on_the_hiv_pair(tmp_path, copy, sql):
    """Item 2, deterministic: accept_noise left out at epsilon 1 (the copy predicts some answers mostly noise, not others)
    on D and D' differing by one HIV visit of patient 1: the same 409 or 200 (test_neighbour_invariance._attack_pair)."""
    from test_neighbour_invariance import _attack_pair

    d, d2 = _attack_pair(3, 1)
    body = {"sql": sql, "epsilon": "1", "delta": "1e-6"}
    assert_neighbour_invariant(_http(copy, body, None), d, d2, tmp_path, allow=HTTP_ALLOW, config=CONFIG, what=f"+1 HIV visit; {body!r}")


QUESTIONS = ("How many visits per diagnosis?", "What is the total birth year of patients per diagnosis?",
             "What is the average birth year of patients?", "How many patients are there?")


@pytest.mark.parametrize("question", QUESTIONS)
@few_examples(2)
@given(data=st.data(), d=clinics(max_patients=5, max_visits=8))
def test_questions_session_ask(tmp_path_factory, copy, question, data, d):
    """Item 3 through ``Session.ask``: the reading, refusal or answer, and every non-noisy field equal on D and D'."""
    what, d2 = data.draw(neighbours(d))

    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            _charge_copy(session)
            before = _charges(session)
            answer = outcome(lambda: session.ask(question, synthetic=copy, epsilon="1", delta="1e-6"))
            charged = _charges(session) - before
        assert answer.get("error") != "InternalError", answer
        assert charged == (0 if "error" in answer else 1), (answer, charged)
        return {**drop_timings(answer), "charged": charged}

    assert_neighbour_invariant(run, d, d2, tmp_path_factory.mktemp("q"), allow=GROUPED_ALLOW, config=CONFIG,
                               what=f"{what}; {question}")


@few_examples(6)
@given(data=st.data(), d=clinics(max_patients=5, max_visits=8), question=st.sampled_from(QUESTIONS),
       epsilon=st.sampled_from(("1", "0.001")), accept=st.sampled_from(ACCEPT),
       bounds=st.sampled_from((MISSING, {"Patient.birth_year": ["1950", "2000"]}, {"Visit.visit_id": [0, 10]})))
def test_questions_http_ask(tmp_path_factory, copy, data, d, question, epsilon, accept, bounds):
    """Items 2 and 3 through ``POST /v1/ask``: the same status and fields on D and D', with or without accept_noise."""
    what, d2 = data.draw(neighbours(d))
    body = {"question": question, "epsilon": epsilon, "delta": "1e-6", "accept_noise": accept, "bounds": bounds}
    assert_neighbour_invariant(_http(copy, None, body), d, d2, tmp_path_factory.mktemp("a"), allow=HTTP_ALLOW, config=CONFIG,
                               what=f"{what}; {body!r}")

