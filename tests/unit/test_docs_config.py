"""docs/configuration.md documents every pimento.toml key, with the description the code declares.

Print the reference table from the models with ``python tests/unit/test_docs_config.py``.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from pimento.config import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def settings_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[tuple[str, str, str, str | None]]:
    """(key, type, default, description) for every leaf setting, ``[]`` marking arrays of tables."""
    rows = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = prefix + (field.alias or name)
        annotation = field.annotation
        nested = [a for a in (annotation, *typing.get_args(annotation)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested:
            rows += settings_keys(nested[0], key + ("[]." if typing.get_origin(annotation) is list else "."))
            continue
        if field.default_factory is not None:
            default = repr(field.default_factory())  # type: ignore[call-arg]
        elif field.default is PydanticUndefined:
            default = "required"
        else:
            default = repr(field.default)
        kind = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
        kind = kind or str(annotation).replace("typing.", "").replace(" | ", " or ")
        rows.append((key, kind, default, field.description))
    return rows


def render_table() -> str:
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, kind, default, description in settings_keys():
        lines.append(f"| `{key}` | {kind} | `{default}` | {description or ''} |")
    return "\n".join(lines)


def _documented_rows() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_every_setting_is_documented_with_its_description() -> None:
    rows = _documented_rows()
    missing = [key for key, *_ in settings_keys() if key not in rows]
    assert not missing, f"docs/configuration.md lacks rows for: {missing}"
    for key, _kind, _default, description in settings_keys():
        if description:
            assert description in rows[key], f"docs/configuration.md: the row of {key} does not say {description!r}"


def test_no_documented_setting_is_stale() -> None:
    known = {key for key, *_ in settings_keys()}
    stale = [key for key in _documented_rows() if key not in known]
    assert not stale, f"docs/configuration.md documents keys the settings do not have: {stale}"


if __name__ == "__main__":
    print(render_table())
