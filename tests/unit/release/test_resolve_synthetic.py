"""Which synthetic database `ask`/`search` use when --synthetic is not given, and the error when none."""

from __future__ import annotations

import pytest

from pimento.config import Settings
from pimento.errors import DataSourceError
from pimento.release.ask import default_synthetic_path, resolve_synthetic


def test_the_flag_wins(tmp_path):
    assert resolve_synthetic(tmp_path / "given.duckdb", tmp_path / "db.duckdb") == tmp_path / "given.duckdb"


def test_the_configured_path_is_relative_to_pimento_toml(tmp_path):
    (tmp_path / "copies").mkdir()
    (tmp_path / "copies" / "syn.duckdb").write_bytes(b"")
    settings = Settings(synth={"path": "copies/syn.duckdb"}, base_dir=str(tmp_path))
    assert resolve_synthetic(None, tmp_path / "db.duckdb", settings) == tmp_path / "copies" / "syn.duckdb"


def test_a_configured_path_that_does_not_exist_is_an_error(tmp_path):
    settings = Settings(synth={"path": "missing.duckdb"}, base_dir=str(tmp_path))
    with pytest.raises(DataSourceError, match="does not exist"):
        resolve_synthetic(None, tmp_path / "db.duckdb", settings)


def test_the_copy_beside_the_database(tmp_path):
    db = tmp_path / "hospital.duckdb"
    beside = default_synthetic_path(db)
    assert beside == tmp_path / "hospital.synthetic.duckdb"
    beside.write_bytes(b"")
    assert resolve_synthetic(None, db, Settings()) == beside


def test_no_copy_anywhere_names_the_places_and_the_fix(tmp_path):
    with pytest.raises(DataSourceError) as caught:
        resolve_synthetic(None, tmp_path / "hospital.duckdb", Settings())
    text = caught.value.one_line()
    assert "--synthetic" in text and "hospital.synthetic.duckdb" in text and "pimento synth" in text
    # never the private database itself
    assert not str(caught.value).endswith("hospital.duckdb")
