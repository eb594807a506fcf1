"""The frozen policy texts' pins (:mod:`benchmarks.cql_frozen`, issue 27): every frozen file is pinned and
matches its SHA-256, a changed or unpinned text is refused, and ``--round`` picks the texts scored.

Nothing here prints or compares the frozen texts' content: only their digests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cql_dev, cql_frozen
from benchmarks.cql_frozen import DOMAINS, DOMAINS_ROUND2, FROZEN, ROOT, ROUNDS, check_frozen


def test_the_pins_match_the_files() -> None:
    check_frozen()
    check_frozen(domains=DOMAINS)
    check_frozen(domains=DOMAINS_ROUND2)


def test_every_frozen_text_of_every_round_is_pinned_and_nothing_else() -> None:
    assert ROUNDS == {1: ("social_services", "clinical_trial"), 2: ("frozen2_ride_hailing", "frozen2_smart_meter")}
    expected = {f"{name}/{f}" for names in ROUNDS.values() for name in names
                for f in ("policy.txt", "schema.sql", "gold.yaml")}
    assert set(FROZEN) == expected
    assert all(len(d) == 64 and int(d, 16) >= 0 for d in FROZEN.values())


def _copy_round2(tmp_path: Path) -> Path:
    for name in DOMAINS_ROUND2:
        shutil.copytree(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("changed", ["policy.txt", "schema.sql", "gold.yaml"])
def test_a_changed_round2_file_is_refused(tmp_path: Path, changed: str) -> None:
    root = _copy_round2(tmp_path)
    check_frozen(root, DOMAINS_ROUND2)  # the copy itself passes
    target = root / DOMAINS_ROUND2[1] / changed
    target.chmod(0o644)
    target.write_bytes(target.read_bytes() + b"\n")
    with pytest.raises(SystemExit, match=f"{DOMAINS_ROUND2[1]}/{changed} changed"):
        check_frozen(root, DOMAINS_ROUND2)
    check_frozen(root, (DOMAINS_ROUND2[0],))  # the other text's pins still hold


def test_a_text_without_pins_is_not_scored_as_frozen(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="dev_telecom is not a frozen text"):
        check_frozen(domains=("dev_telecom",))
    with pytest.raises(SystemExit, match="not a frozen text"):
        cql_frozen.run(tmp_path, ("dev_telecom",))


def _scored(monkeypatch: pytest.MonkeyPatch, module: Any, argv: list[str]) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []

    def fake_run(workdir: Path, domains: tuple[str, ...] = ("default",)) -> dict[str, Any]:
        calls.append(domains)
        return {}

    monkeypatch.setattr(module, "run", fake_run)
    module.main(argv)
    return calls


def test_round_picks_the_texts_scored_and_round_1_is_the_default(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    assert _scored(monkeypatch, cql_frozen, []) == [DOMAINS]
    assert _scored(monkeypatch, cql_frozen, ["--round", "1"]) == [DOMAINS]
    assert _scored(monkeypatch, cql_frozen, ["--round", "2"]) == [DOMAINS_ROUND2]
    with pytest.raises(SystemExit):
        cql_frozen.main(["--round", "3"])
    # the development benchmark shares the command line but has no rounds
    assert _scored(monkeypatch, cql_dev, []) == [("default",)]
    with pytest.raises(SystemExit):
        cql_dev.main(["--round", "2"])
    capsys.readouterr()
