"""Who holds a pending charge, and whether that process still lives.

A charge stays pending until its answer or failure is recorded; an identical request waits for it
meanwhile. The entry names its payer by host, pid and the process's start time
(:func:`owner_token`), so that a payer that is gone (:func:`owner_alive` is False) is told apart
from one that is still working, even when its pid was reused.
"""

from __future__ import annotations

import os
import socket

__all__ = ["owner_alive", "owner_token"]


def owner_token() -> str:
    """Who holds a pending charge: host, pid and the process's start time (pid reuse is caught)."""
    return f"{socket.gethostname()}|{os.getpid()}|{_process_start(os.getpid())}"


def _process_start(pid: int) -> str:
    """The start time of ``pid`` from /proc ("" where /proc is not available); "-" if there is no such
    live process (gone, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return "-"
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return "-"
    return fields[19] if len(fields) > 19 else ""


def owner_alive(owner: str) -> bool | None:
    """True/False when it can be told (same host), None otherwise (another host: wait for the timeout)."""
    host, _, rest = owner.partition("|")
    pid_text, _, start = rest.partition("|")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    now = _process_start(pid)
    if now == "-":
        return False
    if now and start:
        return now == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
