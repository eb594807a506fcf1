"""The demo's declared ``[domains]`` (issue 25): public by the demo's account, and complete for the data it generates.

A value of the private data outside a declared domain is dropped after the charge (docs/grouped.md), so each list the
demo's pimento.toml declares must hold every value its generator writes. The formulary is declared (the medication
columns), so the demo's grouped questions per medication are answered over it.
"""

from __future__ import annotations

import tomllib

import duckdb

from pimento.demo.hospital import MEDICATIONS, create_demo, demo_config_text


def test_every_declared_domain_holds_every_value_the_demo_writes(tmp_path):
    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=60, seed=3)
    domains = tomllib.loads((tmp_path / "pimento.toml").read_text())["domains"]
    assert domains["MedicationOrders.medication"] == domains["Prescription.medication"] == list(MEDICATIONS)
    con = duckdb.connect(str(db), read_only=True)
    try:
        for key, declared in domains.items():
            table, column = key.split(".")
            found = {r[0] for r in con.execute(f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL').fetchall()}
            assert found <= set(declared), (key, found - set(declared))
    finally:
        con.close()


def test_the_config_text_declares_the_formulary_under_domains():
    domains = tomllib.loads(demo_config_text("h.duckdb"))["domains"]
    assert set(domains) >= {"MedicationOrders.medication", "Prescription.medication", "Visit.diagnosis", "Patient.sex"}
