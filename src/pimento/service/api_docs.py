"""The API reference page (``/docs``; ``/redoc`` sends there): the app's OpenAPI document, rendered here.

FastAPI's own pages (Swagger UI, ReDoc) load their scripts and styles from a CDN: blank on a machine
without internet, and a third-party script on this origin could act in a signed-in analyst's session.
Pimento renders the same document on the server instead, with its own template and stylesheet and
the web page's headers (``script-src 'none'``): every route with its method, summary, description,
authentication (the bearer scheme it requires), parameters, request body and responses, then every
schema with its fields, then the security schemes. Nothing is loaded from elsewhere.
:func:`reference` turns the document into what the template lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Operation", "SchemaDoc", "reference", "type_parts"]

METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


@dataclass
class Operation:
    """One route and method, as the page lists it."""

    method: str
    path: str
    anchor: str
    summary: str
    description: str
    tags: list[str]
    security: list[str]
    parameters: list[dict[str, Any]] = field(default_factory=list)
    body: list[dict[str, str | None]] | None = None
    responses: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SchemaDoc:
    """One schema of ``components.schemas``, as the page lists it."""

    name: str
    description: str
    fields: list[dict[str, Any]]


def type_parts(schema: dict[str, Any] | None) -> list[dict[str, str | None]]:
    """A schema's type as text pieces, each ``{"text", "ref"}`` (``ref``: the schema it names, linked on the page).

    >>> [p["text"] for p in type_parts({"anyOf": [{"type": "string"}, {"type": "null"}]})]
    ['string', ' | ', 'null']
    >>> type_parts({"type": "array", "items": {"$ref": "#/components/schemas/Row"}})[-1]
    {'text': 'Row', 'ref': 'Row'}
    """
    if not schema:
        return [{"text": "any", "ref": None}]
    if "$ref" in schema:
        name = str(schema["$ref"]).removeprefix(REF_PREFIX)
        return [{"text": name, "ref": name}]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            parts: list[dict[str, str | None]] = []
            for i, option in enumerate(schema[key]):
                if i:
                    parts.append({"text": " | ", "ref": None})
                parts.extend(type_parts(option))
            return parts
    if "enum" in schema:
        return [{"text": " | ".join(repr(v) for v in schema["enum"]), "ref": None}]
    if "const" in schema:
        return [{"text": repr(schema["const"]), "ref": None}]
    kind = schema.get("type")
    if kind == "array":
        return [{"text": "array of ", "ref": None}, *type_parts(schema.get("items"))]
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return [{"text": "object of ", "ref": None}, *type_parts(schema["additionalProperties"])]
    return [{"text": str(kind or "any"), "ref": None}]


def _fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", []))
    return [
        {"name": name, "type": type_parts(prop), "required": name in required, "description": prop.get("description", ""),
         "default": prop.get("default")}
        for name, prop in schema.get("properties", {}).items()
    ]


def _operation(path: str, method: str, op: dict[str, Any]) -> Operation:
    security = [name for entry in op.get("security", []) for name in entry]
    parameters = [
        {"name": p["name"], "in": p["in"], "required": p.get("required", False), "type": type_parts(p.get("schema")),
         "description": p.get("description") or p.get("schema", {}).get("description", "")}
        for p in op.get("parameters", [])
    ]
    body = None
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        body = type_parts(content["application/json"].get("schema"))
    responses = []
    for status, response in op.get("responses", {}).items():
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        responses.append({"status": status, "description": response.get("description", ""), "type": type_parts(schema) if schema else None})
    anchor = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "")
    return Operation(method.upper(), path, anchor, op.get("summary", ""), op.get("description", ""), list(op.get("tags", [])), security,
                     parameters, body, responses)


def reference(openapi: dict[str, Any]) -> dict[str, Any]:
    """What the reference page lists, from the OpenAPI document ``openapi``: its info, the operations
    grouped by tag (in the document's order), the schemas (by name) and the security schemes."""
    groups: dict[str, list[Operation]] = {}
    for path, item in openapi.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                op = _operation(path, method, item[method])
                groups.setdefault(op.tags[0] if op.tags else "other", []).append(op)
    components = openapi.get("components", {})
    schemas = [SchemaDoc(name, schema.get("description", ""), _fields(schema)) for name, schema in sorted(components.get("schemas", {}).items())]
    return {"info": openapi.get("info", {}), "groups": groups, "schemas": schemas, "security": components.get("securitySchemes", {})}
