"""python -m benchmarks.contextual_dp: the three domains, the figure (matplotlib), its absence."""

from __future__ import annotations

import sys

import pytest

from benchmarks import contextual_dp
from benchmarks.contextual_dp import DOMAINS, main, run
from pimento.engines.database import load_database
from pimento.sql import parse_count_query

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The retailer and the school, tiny (12 subjects), built once."""
    folder = tmp_path_factory.mktemp("cdp")
    out = {}
    for name in ("retail", "school"):
        db = folder / name / f"{name}.duckdb"
        db.parent.mkdir()
        DOMAINS[name].build(db, 12, 2)
        out[name] = db
    return out


def test_retail_and_school_queries_parse_join_2_to_4_relations_and_involve_the_subject(built):
    for name, db in built.items():
        spec = DOMAINS[name]
        assert 5 <= len(spec.queries) <= 10
        database = load_database(db, read_only=True)
        try:
            for sql in spec.queries:
                query = parse_count_query(sql, database.catalog)
                assert 2 <= len(query.relations) <= 4, sql
                assert query.alias_of(spec.subject), sql
                assert database.engine.execute(sql).scalar() is not None
        finally:
            database.close()


def test_tiny_run_on_every_domain_never_reports_a_ratio_above_one(built):
    for name, db in built.items():
        result = run(db, epsilon="10", fractions=(0, 90), domain=name)
        assert result["domain"] == name and result["subject"] == DOMAINS[name].subject
        first, last = result["rows"]
        # nothing authorized: the tight variant has nothing to use (CRS may still be below RS: the rules read
        # the subject's key and its own selection, which RS's T_E ignores)
        assert first["mean_tight_over_rs"] == first["mean_crs_over_rs"]
        for row in result["rows"]:
            assert 0 < row["min_crs_over_rs"] <= row["mean_crs_over_rs"] <= 1
            assert 0 < row["min_tight_over_rs"] <= row["mean_tight_over_rs"] <= row["mean_crs_over_rs"]
        assert last["mean_subject_ell_over_ls"] <= 1


def test_tiny_run_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "img" / "rq3.png"
    assert main(["--domains", "retail", "--size", "12", "--seed", "1", "--epsilon", "10", "--fractions", "0,90",
                 "--png", str(png)]) == 0
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and 1000 < len(data) < 500_000
    out = capsys.readouterr().out
    assert "mean CRS/RS" in out and "the paper reports 0.44" in out and str(png) in out


def test_missing_matplotlib_fails_at_once_with_a_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    built = []
    monkeypatch.setattr(contextual_dp, "run_domains", lambda *a, **k: built.append(a))
    assert main(["--domains", "retail", "--png", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "matplotlib" in err and "pimento-dp[bench]" in err and "--no-png" in err
    assert not built and not (tmp_path / "x.png").exists()  # nothing was computed
