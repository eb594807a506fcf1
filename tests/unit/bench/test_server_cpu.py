"""benchmarks.server_cpu: the server's CPU read from /proc (the part that does not need a server)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from benchmarks.server_cpu import main, process_cpu_seconds


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_process_cpu_seconds_counts_this_process_work():
    before = process_cpu_seconds(os.getpid())
    end = time.process_time() + 0.2
    while time.process_time() < end:  # 0.2 s of CPU in this process
        pass
    spent = process_cpu_seconds(os.getpid()) - before
    assert 0.1 <= spent <= 2.0


def test_a_database_without_its_key_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--db", "x.duckdb"])
    assert "--db needs --key" in capsys.readouterr().err
