"""Released counts are clamped at zero as post-processing, and the answer says so."""

from __future__ import annotations

from pimento.service.deployment import clamp_count


def test_negative_value_and_interval_are_clamped():
    out = clamp_count({"value": -12, "value_exact": "-12", "interval": [-40, 16], "interval_exact": ["-40", "16"], "epsilon": "1"})
    assert out["value"] == 0 and out["value_exact"] == "0" and out["interval"] == [0, 16] and out["interval_exact"] == ["0", "16"]
    assert out["clamped"] is True and out["value_unclamped"] == -12 and out["epsilon"] == "1"


def test_an_interval_reaching_below_zero_is_clamped_even_when_the_value_is_not():
    out = clamp_count({"value": 3, "value_exact": "3", "interval": [-5, 11], "interval_exact": ["-5", "11"]})
    assert out["value"] == 3 and out["interval"] == [0, 11] and out["clamped"] is True


def test_nothing_to_clamp():
    data = {"value": 30, "value_exact": "30", "interval": [20, 40], "interval_exact": ["20", "40"]}
    out = clamp_count(data)
    assert out["clamped"] is False and out["value"] == 30 and out["interval"] == [20, 40] and out["value_unclamped"] == 30


def test_the_whole_interval_below_zero():
    out = clamp_count({"value": "-50", "interval": ["-90", "-10"]})
    assert out["value"] == 0 and out["interval"] == [0, 0] and out["clamped"] is True


def test_release_answers_are_clamped_in_pimento_release(tmp_path):
    """The clamp lives in pimento.release: Session answers (and so the CLI) carry it, not only the service."""
    import random

    import duckdb

    from pimento.mechanisms.samplers import fixed_noise_for_tests
    from pimento.release.session import Session

    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")  # empty: the true count is 0, so about half the draws are negative
    con.close()
    (tmp_path / "pimento.toml").write_text('[ledger]\nanalyst_share = "1"\n')  # 12 x 1/2 by one analyst (default cap: a quarter of 10)
    seen_negative = False
    with fixed_noise_for_tests(random.Random(1)), Session(path) as s:
        for i in range(12):
            data = s.release_sql(f"SELECT COUNT(*) FROM t WHERE a > {i}", "1/2").to_dict()
            assert data["value"] >= 0 and data["interval"][0] >= 0
            assert data["clamped"] == (data["value_unclamped"] < 0 or data["interval"][0] == 0 and data["value_unclamped"] - (data["interval"][1] - data["value_unclamped"]) < 0)
            seen_negative |= data["value_unclamped"] < 0
    assert seen_negative
