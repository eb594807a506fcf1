"""Settings read from ``pimento.toml``.

Each section is a pydantic model that forbids unknown keys, so a typo is an error
that names the key and suggests the right one, never a silently ignored setting.

Example ``pimento.toml`` (all sections optional)::

    [database]
    path = "hospital.duckdb"          # or url = "postgresql://user@host/db"

    [privacy]
    private = ["Patient", "Visit"]   # default: every relation is private
    root = "Patient"                  # privacy unit of the synthetic database

    [[constraints.foreign_keys]]
    from = "Prescription.employee_id"
    to = "Employee.employee_id"

    [[constraints.unique]]
    columns = "Employee.email"

    [[constraints.functional_dependencies]]
    lhs = "DxCategory.diagnosis"
    rhs = "DxCategory.hivstatus"

    [synth]
    public_values = ["Prescription.medication"]   # value sets that are public (code lists)
    link_context = ["Employee.specialty"]         # public context of link targets
    caps = { Visit = 8 }                           # declared fan-out caps
"""

from __future__ import annotations

import difflib
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from pimento._compat import tomllib
from pimento.errors import ConfigError, PrivacyParameterError, UserError
from pimento.numbers import parse_number, parse_size, shown

__all__ = [
    "ConstraintsSettings",
    "DatabaseSettings",
    "DeclaredForeignKey",
    "DeclaredFunctionalDependency",
    "DeclaredUnique",
    "LedgerSettings",
    "LLMSettings",
    "PrivacySettings",
    "ReleaseSettings",
    "Settings",
    "SynthSettings",
    "declared_bounds",
    "declared_domain",
    "load_settings",
    "find_settings_file",
]

CONFIG_FILE_NAME = "pimento.toml"

#: Default memory limit of a connection to the data (sized for a 2-core, 24 GB machine).
DEFAULT_MEMORY_LIMIT = "4GB"
#: Default share of the database's epsilon cap that each analyst may spend (``[ledger] analyst_share``)
#: when the custodian sets no ``analyst_epsilon_cap``: one analyst cannot spend everyone's budget.
DEFAULT_ANALYST_SHARE = "0.25"
#: Default bound on the length of SQL text accepted from a caller.
MAX_SQL_CHARS = 100_000


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _number_error(message: str) -> ValueError:
    """A setting's value error: :func:`_explain` writes its text after the file and the key."""
    return ValueError(message)


def _exact_setting(value: object) -> tuple[str, Fraction]:
    """A number setting as its text and its exact value: a TOML integer or float (a float through its
    shortest text, so ``0.1`` is ``1/10``) or a string like ``"10"``, ``"1e-5"`` or ``"1/3"``, read by
    the one number grammar of Pimento (:func:`pimento.numbers.parse_number`).

    Raises:
        ValueError: anything else (booleans, NaN, infinities, words, too many digits);
            :func:`settings_from_dict` turns it into a ConfigError naming the file and the key.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _number_error(f'must be a number like 10, 0.5, "1e-5" or "1/3", got {shown(value)}')
    try:
        exact = parse_number(value, name="_")
    except PrivacyParameterError as exc:
        raise _number_error(exc.message.removeprefix("_ ")) from None
    return str(value).strip(), exact


def _number_in(value: object, *, low: Fraction, high: Fraction | None, open_low: bool, what: str) -> str:
    """The text of a number setting whose value lies in the range ``what`` describes."""
    text, exact = _exact_setting(value)
    if exact < low or (open_low and exact == low) or (high is not None and exact >= high):
        raise _number_error(f"must be {what}, got {text}")
    return text


class DatabaseSettings(_Section):
    """Where the private database lives."""

    path: str | None = Field(None, description="DuckDB or SQLite file, relative to pimento.toml")
    url: str | None = Field(None, description="postgresql:// DSN (instead of path)")
    engine: str | None = Field(None, description="force an engine: duckdb, sqlite, postgres")
    timeout_s: float | None = Field(60.0, description="per-statement timeout in seconds")
    memory_limit: str = Field(
        DEFAULT_MEMORY_LIMIT, description="memory one connection to the data may use (DuckDB; SQLite heap limit)"
    )
    threads: int | None = Field(None, ge=1, description="DuckDB worker threads; default: one per core")
    max_sql_chars: int = Field(MAX_SQL_CHARS, ge=1, description="longest SQL text accepted from a caller, in characters")

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _memory_limit(cls, value: object) -> str:
        """A size (:func:`pimento.numbers.parse_size`), checked when pimento.toml is read so the error names it."""
        try:
            parse_size(value, name="_")
        except UserError as exc:
            raise ValueError(f"{exc.message.removeprefix('_ ')} ({exc.hint})") from None
        return str(value)


#: ``[privacy] unit`` of the row-level guarantee (the default): neighbours add or remove one tuple.
TUPLE_UNIT = "tuple"


class PrivacySettings(_Section):
    """Which relations are private (DP neighbours change one tuple of one of them), and the privacy unit.

    A relation is public only if ``public`` lists it: one the custodian did not list is private.
    ``unit`` names the relation of one person (``"Patient"``) or keeps the row-level ``"tuple"``.
    """

    private: list[str] | None = Field(
        None, description="relations declared private; every relation not in public is private anyway"
    )
    public: list[str] = Field(
        default_factory=list, description="the only public relations (no personal data); all others are private"
    )
    root: str | None = Field(None, description="root private relation (privacy unit) for synthesis")
    unit: str = Field(
        TUPLE_UNIT,
        description='privacy unit of noisy releases: "tuple" (neighbours add or remove one row) or the name of a '
        "private relation with a key that every private relation reaches by foreign keys (neighbours add or remove "
        "one of its rows with every row that references it; docs/privacy-unit.md)",
    )
    max_contribution: int = Field(
        1024,
        ge=1,
        le=1 << 40,
        description="under a person unit: a public bound of the join results one person contributes to a count "
        "(R2T's GS; only utility depends on it: a loose bound costs about its log2 in noise)",
    )
    one_person_per_row: bool = Field(
        True,
        description="under a person unit: every private row references at most one person (all its foreign-key "
        "chains to the unit that are not NULL name the same one; to check on the data when the deployment is set up); "
        "false: a row may belong to several persons (R2T's linear program)",
    )

    @field_validator("unit", mode="before")
    @classmethod
    def _unit(cls, value: object) -> str:
        """A non-empty name; whether the relation exists and qualifies needs the catalog (sensitivity/person.py)."""
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f'must be "tuple" or the name of the private relation of one person, got {shown(value)}')
        text = value.strip()
        return TUPLE_UNIT if text.lower() == TUPLE_UNIT else text

    @property
    def person_unit(self) -> str | None:
        """The relation of one person when ``unit`` names one, None under the tuple unit."""
        return None if self.unit == TUPLE_UNIT else self.unit


class DeclaredForeignKey(_Section):
    from_: str = Field(alias="from", description="Table.column or Table.(c1, c2)")
    to: str = Field(description="Table.column or Table.(c1, c2)")


class DeclaredUnique(_Section):
    columns: str = Field(description="Table.column or Table.(c1, c2)")


class DeclaredFunctionalDependency(_Section):
    lhs: str = Field(description="Table.column or Table.(c1, c2)")
    rhs: str = Field(description="Table.column or Table.(c1, c2), same table")


class ConstraintsSettings(_Section):
    """Constraints the database does not declare itself."""

    foreign_keys: list[DeclaredForeignKey] = Field(default_factory=list)
    unique: list[DeclaredUnique] = Field(default_factory=list)
    functional_dependencies: list[DeclaredFunctionalDependency] = Field(default_factory=list)
    validate_on_load: bool = Field(True, description="check declared constraints against the data")


class LedgerSettings(_Section):
    """The privacy-budget ledger."""

    path: str | None = Field(None, description="SQLite ledger file; default: <database>.ledger.sqlite")
    url: str | None = Field(
        None,
        description="postgresql://... ledger shared by several processes or machines (replaces path); "
        "may name ${ENV} variables for credentials",
    )
    epsilon_cap: str = Field("10", description="total epsilon per database: a number (10, 2.5) or its exact text (\"10\", \"1/3\")")
    delta_cap: str = Field("1e-5", description="total delta per database, in [0, 1): a number (1e-5) or its exact text (\"1e-5\")")
    analyst_epsilon_cap: str | None = Field(
        None, description="epsilon per analyst, a number or its text; default: analyst_share of the database cap"
    )
    analyst_share: str = Field(
        DEFAULT_ANALYST_SHARE,
        description="when analyst_epsilon_cap is not set, each analyst's epsilon cap is this share of epsilon_cap, in (0, 1]",
    )
    analysts: list[str] = Field(default_factory=list, description="known analysts; empty: any name")
    answer_cache: bool = Field(True, description="identical request returns the same answer at no cost")

    @field_validator("epsilon_cap", "analyst_epsilon_cap", mode="before")
    @classmethod
    def _epsilon(cls, value: object) -> str | None:
        return None if value is None else _number_in(value, low=Fraction(0), high=None, open_low=False, what=">= 0")

    @field_validator("delta_cap", mode="before")
    @classmethod
    def _delta(cls, value: object) -> str:
        return _number_in(value, low=Fraction(0), high=Fraction(1), open_low=False, what="in [0, 1)")

    @field_validator("analyst_share", mode="before")
    @classmethod
    def _analyst_share(cls, value: object) -> str:
        text, exact = _exact_setting(value)
        if not 0 < exact <= 1:
            raise _number_error(f"must be in (0, 1] (a share of epsilon_cap), got {text}")
        return text


class LLMSettings(_Section):
    """An OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, hosted API)."""

    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8080/v1; env PIMENTO_LLM_URL")
    model: str | None = Field(None, description="model name; env PIMENTO_LLM_MODEL")
    api_key_env: str = Field("PIMENTO_LLM_KEY", description="environment variable holding the key")
    timeout_s: float = 60.0
    max_retries: int = 2
    temperature: float = 0.7
    samples: int = 5


class SynthSettings(_Section):
    """The DP synthetic database (``pimento synth``; see src/pimento/synth/PRIVACY.md)."""

    public_values: list[str] = Field(
        default_factory=list,
        description="Table.column whose set of values is public (a code list): read without budget",
    )
    link_context: list[str] = Field(
        default_factory=list,
        description="Table.column of referenced private tables treated as public link context",
    )
    caps: dict[str, int] = Field(default_factory=dict, description="declared fan-out caps per table (children per parent)")
    path: str | None = Field(
        None,
        description="the synthetic copy `pimento ask`/`search` use when --synthetic is not given (relative to this file)",
    )


class PolicySettings(_Section):
    """``[policy]``: the deployment's contextual-integrity policy (custodian setting; an analyst cannot choose it)."""

    compiled: str | None = Field(
        None,
        description="compiled policy (JSON from `pimento policy compile`) that CI answers enforce (relative to this file)",
    )
    acknowledge_observable_denials: list[str] = Field(
        default_factory=list,
        description='observable denials of the compiled policy the custodian accepts, each "NORM:Relation.attribute" as '
        "`pimento policy compile` reports it; `pimento serve` refuses a policy with any other (docs/policy.md)",
    )
    draft: str | None = Field(
        None,
        description="extracted policy draft (YAML from `pimento policy extract`) whose open questions the custodian's web page "
        "/custodian/policy/review answers; the reviewed policy is written beside it, as NAME.reviewed.yaml for NAME.yaml "
        "(relative to this file; docs/policy-review.md)",
    )


class ReleaseSettings(_Section):
    """``[release]``: how DP answers are released (custodian settings; an analyst cannot change them)."""

    rs_bound_share: str = Field(
        "0.1",
        description="share of each release's epsilon spent on the DP upper bound of RS behind its 95% interval (strictly between 0 and 1)",
    )
    neighbours: Literal["add-remove", "change", "both"] = Field(
        "add-remove",
        description='the neighbourhood every noisy release\'s guarantee holds for: "add-remove" (a tuple inserted or deleted), '
        '"change" (a tuple changed) or "both"; an analyst may only ask for "both" instead (docs/contextual-dp.md)',
    )

    max_groups: int = Field(
        100, ge=1, le=1 << 20,
        description="the most groups one grouped release may show (a declared domain larger than this is refused before the charge)",
    )
    warn_relative_error: str = Field(
        "0.5",
        description="a preview warns (and the web page asks to confirm the spend) when the noise is predicted at more than this "
        "share of the answer, on the synthetic copy (docs/accuracy.md)",
    )

    @field_validator("rs_bound_share", mode="before")
    @classmethod
    def _share(cls, value: object) -> str:
        return _number_in(value, low=Fraction(0), high=Fraction(1), open_low=True, what="strictly between 0 and 1")

    @field_validator("warn_relative_error", mode="before")
    @classmethod
    def _warn(cls, value: object) -> str:
        return _number_in(value, low=Fraction(0), high=None, open_low=True, what="a positive number (0.5: warn at +-50%)")


def _bound_pair(value: object) -> list[str]:
    """A ``[bounds]`` entry: ``[lower, upper]``, two numbers with lower <= upper, each a finite decimal."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _number_error(f"must be [lower, upper], two numbers like [0, 60], got {shown(value)}")
    (lo_text, lo), (hi_text, hi) = (_exact_setting(v) for v in value)
    for text, exact in ((lo_text, lo), (hi_text, hi)):
        den = exact.denominator
        while den % 2 == 0:
            den //= 2
        while den % 5 == 0:
            den //= 5
        if den != 1:
            raise _number_error(f"must be decimal numbers (the engine clips with them exactly), got {text}")
    if lo > hi:
        raise _number_error(f"must have lower <= upper, got [{lo_text}, {hi_text}]")
    return [lo_text, hi_text]


def _column_key(key: str, section: str) -> str:
    """A ``Table.column`` key of ``[bounds]`` or ``[domains]``."""
    table, dot, column = key.partition(".")
    if not dot or not table.strip() or not column.strip():
        raise ValueError(f"[{section}] key {key!r} must be Table.column")
    return key


def _bounds_table(value: object) -> dict[str, list[str]]:
    """``[bounds]``: ``"Table.column" = [lower, upper]`` for each column a SUM or AVG may read."""
    if not isinstance(value, dict):
        raise ValueError('must be a table of "Table.column" = [lower, upper]')
    out: dict[str, list[str]] = {}
    for key, pair in value.items():
        try:
            out[_column_key(str(key), "bounds")] = _bound_pair(pair)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return out


def _domains_table(value: object) -> dict[str, Any]:
    """``[domains]``: ``"Table.column" = [values]`` or ``"public"`` for each group column whose value set is public."""
    if not isinstance(value, dict):
        raise ValueError('must be a table of "Table.column" = [values] or "public"')
    out: dict[str, Any] = {}
    for key, domain in value.items():
        _column_key(str(key), "domains")
        if domain == "public":
            out[str(key)] = "public"
        elif isinstance(domain, list) and domain and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in domain):
            if len(set(domain)) != len(domain):
                raise ValueError(f"{key}: the list of values repeats a value")
            out[str(key)] = list(domain)
        else:
            raise ValueError(f'{key}: must be a non-empty list of strings or integers (decimals as strings: "2.5", exact), '
                             f'or "public", got {shown(domain)}')
    return out


def _vocabulary_table(value: object) -> dict[str, list[str]]:
    """``[vocabulary]``: ``"phrase" = ["Table.column", ...]``, the columns a data phrase of a policy text means
    (whether they exist is checked against the schema: :func:`pimento.policy.vocabulary.check_vocabulary`)."""
    if not isinstance(value, dict):
        raise ValueError('must be a table of "phrase" = ["Table.column", ...]')
    out: dict[str, list[str]] = {}
    for key, columns in value.items():
        if not str(key).strip():
            raise ValueError("a phrase is empty")
        if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
            raise ValueError(f'{key!r}: must be a non-empty list of "Table.column", got {shown(columns)}')
        for column in columns:
            table, dot, name = column.partition(".")
            if not dot or not table.strip() or not name.strip():
                raise ValueError(f'{key!r}: {column!r} is not "Table.column"')
        out[str(key)] = [c.strip() for c in columns]
    return out


BoundsTable = Annotated[dict[str, list[str]], BeforeValidator(_bounds_table)]
DomainsTable = Annotated[dict[str, Any], BeforeValidator(_domains_table)]
VocabularyTable = Annotated[dict[str, list[str]], BeforeValidator(_vocabulary_table)]


def declared_bounds(settings: Settings, table: str, column: str) -> tuple[Fraction, Fraction] | None:
    """The custodian's ``[bounds]`` of ``table.column`` (names case-insensitive), exact, or None."""
    wanted = f"{table}.{column}".lower()
    for key, (lo, hi) in settings.bounds.items():
        if key.lower() == wanted:
            return parse_number(lo, name="lower"), parse_number(hi, name="upper")
    return None


def declared_domain(settings: Settings, table: str, column: str) -> list[Any] | str | None:
    """The custodian's ``[domains]`` entry of ``table.column`` (names case-insensitive): a list, ``"public"``, or None."""
    wanted = f"{table}.{column}".lower()
    return next((d for key, d in settings.domains.items() if key.lower() == wanted), None)


class ProvenanceSettings(_Section):
    """``[provenance]``: what a CI answer may carry of the documents an ingested database was read from
    (custodian setting; docs/ingest.md, "Provenance in CI answers")."""

    release: Literal["none", "span", "sentence"] = Field(
        "none",
        description='text traced to an authorized cell of a CI answer: "none", "span" (the characters it was read from) '
        'or "sentence" (its sentence, when every value read from the sentence is authorized in the context)',
    )
    corpus: str | None = Field(None, description="the folder of the ingested documents (relative to this file)")


class Settings(_Section):
    """All of pimento.toml."""

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    constraints: ConstraintsSettings = Field(default_factory=ConstraintsSettings)
    ledger: LedgerSettings = Field(default_factory=LedgerSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    synth: SynthSettings = Field(default_factory=SynthSettings)
    release: ReleaseSettings = Field(default_factory=ReleaseSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    provenance: ProvenanceSettings = Field(default_factory=ProvenanceSettings)
    bounds: BoundsTable = Field(
        default_factory=dict,
        description='[bounds]: "Table.column" = [lower, upper], the clipping interval of a column a SUM or AVG may read (docs/grouped.md)',
    )
    domains: DomainsTable = Field(
        default_factory=dict,
        description='[domains]: "Table.column" = [values] (the complete list) or "public", a group column whose value set is public (docs/grouped.md)',
    )
    vocabulary: VocabularyTable = Field(
        default_factory=dict,
        description='[vocabulary]: "phrase" = ["Table.column", ...], the columns a data phrase of a policy text means '
        "(`pimento policy extract` grounds the phrase to exactly these; docs/policy-review.md)",
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="free-form tables of later features")
    #: Directory of the file the settings came from (paths are relative to it).
    base_dir: str = Field(".", exclude=True)

    def resolve(self, path: str) -> str:
        """A path from the file, made relative to the file's own directory."""
        p = Path(path)
        return str(p if p.is_absolute() else Path(self.base_dir) / p)


def find_settings_file(start: str | Path) -> Path | None:
    """``pimento.toml`` beside a database file (or in a directory), if there is one."""
    start = Path(start)
    folder = start if start.is_dir() else start.parent
    candidate = folder / CONFIG_FILE_NAME
    return candidate if candidate.is_file() else None


def load_settings(path: str | Path | None) -> Settings:
    """Read and validate ``pimento.toml``; ``None`` gives the defaults."""
    if path is None:
        return Settings()
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"settings file not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return settings_from_dict(data, source=str(path), base_dir=str(path.parent))


def settings_from_dict(data: dict[str, Any], *, source: str = "settings", base_dir: str = ".") -> Settings:
    try:
        return Settings.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(_explain(exc, source)) from None


def _explain(exc: ValidationError, source: str) -> str:
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    error = errors[0]
    where = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        parent: type[BaseModel] = Settings
        for part in error["loc"][:-1]:
            field = parent.model_fields.get(str(part)) if isinstance(part, str) else None
            annotation = getattr(field, "annotation", None) if field else None
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                parent = annotation
            else:
                args = getattr(annotation, "__args__", ()) if annotation else ()
                models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
                if models:
                    parent = models[0]
        known = [f.alias or name for name, f in parent.model_fields.items() if name != "base_dir"]
        close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
        return f"{source}: unknown key {where!r}{hint}"
    message = error["msg"]
    if error["type"] == "value_error" and isinstance(error.get("ctx", {}).get("error"), ValueError):
        message = str(error["ctx"]["error"])  # our validators' own words, without pydantic's "Value error, "
    return f"{source}: {_key_name(error['loc'])}: {message}"


def _key_name(loc: tuple[int | str, ...]) -> str:
    """A key as pimento.toml writes it: ``[ledger] epsilon_cap``, ``[constraints] foreign_keys[0].from``."""
    parts = [str(p) for p in loc if not (isinstance(p, str) and "[" in p)]  # drop pydantic's union tags
    if len(parts) < 2 or parts[0] not in Settings.model_fields:
        return ".".join(parts)
    rest = ""
    for part in parts[1:]:
        rest += f"[{part}]" if part.isdigit() else (f".{part}" if rest else part)
    return f"[{parts[0]}] {rest}"
