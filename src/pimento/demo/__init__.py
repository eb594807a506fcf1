"""The demo hospital database (see docs/demo.md)."""

from __future__ import annotations

from pimento.demo.hospital import (
    DEMO_QUESTION,
    DEMO_SQL_ORDERS,
    DEMO_SQL_PRESCRIPTION,
    DemoInfo,
    check_target,
    create_demo,
)

__all__ = ["DEMO_QUESTION", "DEMO_SQL_ORDERS", "DEMO_SQL_PRESCRIPTION", "DemoInfo", "check_target", "create_demo"]
