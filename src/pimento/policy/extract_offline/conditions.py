"""Condition phrases -> condition views over the catalog (see :mod:`~pimento.policy.extract_offline.ground`).

Each conjunct of a condition ("the agent handles a support case of that consumer") names the
roles it mentions (by their words, pronouns resolving to the sentence's agent) and a table: a
column of a role's own table, a self-reference, or a relationship table whose foreign keys to
the roles' principals become the view's outputs, joined once when a role is one table away.
A relation no table word names ("a parent of that pupil", "sessions they teach") is the unique
shortest foreign-key path between the parties' tables (:func:`fk_paths`), through the tables the
conjunct names or the reference whose column comment spells its verb; a status predicate ("the
enrolment is active") must be a filter of the view, "N days overdue" a due-date test. Where the
path or the predicate is not unique the conjunct grounds nothing (the permit is held). Each view
records how it was grounded (:data:`CONDITION_EVIDENCE`) in its description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pimento.nl.text import STOPWORDS, lemma, stem
from pimento.policy.extract_offline.ground import _table_words, slug
from pimento.policy.extract_offline.lexicon import AFFIRMATIVE_FLAGS, same_word, words
from pimento.policy.extract_offline.schema import Schema, matches_name
from pimento.schema import Table

__all__ = ["CONDITION_EVIDENCE", "Atom", "Var", "fk_paths", "ground_condition", "relation_between"]

#: how a condition view was grounded (recorded in its description as ``evidence: KIND``; a ``+status``,
#: ``+flag`` or ``+due_date`` suffix names the filters its predicate grounded to)
CONDITION_EVIDENCE = {
    "age": "an age test on the subject's birth or age column",
    "own_column": "a flag or value of a role's own table the conjunct names",
    "self_reference": "a reference of a role's table to itself (employees they supervise)",
    "relation_table": "a table the conjunct names, its foreign keys binding the parties",
    "relation_join": "a table the conjunct names joined once to the only table reaching a party",
    "fk_path_named": "the one shortest foreign-key path through the tables the conjunct names",
    "fk_path_comment": "the one shortest foreign-key path whose reference's column comment spells the verb, or "
                       "through the table whose comment names the conjunct's noun",
    "fk_path_only": "the one shortest foreign-key path between the parties' tables (no other word)",
    "direct_reference": "a foreign key between the parties' tables named like a word of the conjunct",
}


# --------------------------------------------------------------------------- conditions


@dataclass
class Atom:
    """A condition view proposed for a conjunct."""

    name: str
    sql: str
    principals: dict[str, str] = field(default_factory=dict)  # var -> table name
    description: str = ""
    #: the conjunct denies it ("the patient has not objected")
    negated: bool = False
    #: how it was grounded (a key of :data:`CONDITION_EVIDENCE`, with filter suffixes)
    evidence: str = ""


@dataclass
class Var:
    """A norm variable a condition may bind: its role phrase words and principal table."""

    name: str  # sender | recipient | subject
    table: Table
    words: tuple[str, ...] = ()


_AGE = re.compile(r"\b(?:under|younger than|below|less than)\s+(?:the age of\s+)?(\d{1,3})\b"
                  r"|\b(?:over|older than|above)\s+(?:the age of\s+)?(\d{1,3})\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n't\b|^no\b", re.IGNORECASE)
#: "every fee of the swimmer is paid": a universal no one view of rows states (one paid fee is not every fee)
_UNIVERSAL = re.compile(r"^(?:each|every|all)\b", re.IGNORECASE)
_TRANSITIVE = re.compile(r"\bindirectly\b|\btransitive|\bat any level\b|\bchain of\b", re.IGNORECASE)
_SAME = re.compile(r"\b(?:same|shared?|common)\b", re.IGNORECASE)
_BOUND = re.compile(r"\bAS\s+(sender|recipient|subject)\b", re.IGNORECASE)
#: "supervises *that* teacher": a demonstrative points back to a party the sentence tied to another one
#: (the student's teacher); a view that binds one party only relates it to *any* such party (broader)
_ANAPHOR = re.compile(r"\b(?:that|this|those|these|such)\s+(?!(?:is|are|was|were|has|have|the|a|an|purposes?)\b)[a-z]{3,}",
                      re.IGNORECASE)
_PRONOUNS = frozenset(("they", "their", "theirs", "them", "its", "you", "your", "yours"))
_VAR_WORDS = {"sender": ("sender", "discloser"), "recipient": ("recipient", "receiver")}
_NOISE = frozenset("""has have had also directly indirectly is are be been does do run runs that this
    those who whom which whose under over one another other verifiable written explicit prior""".split())


def _mentions(part: str, vars_: dict[str, Var], actor: str | None) -> list[tuple[int, str, set[int]]]:
    """[(position, var, word positions used)] of the vars a conjunct mentions, in order."""
    ws = words(part)
    found: dict[str, tuple[float, int, set[int]]] = {}
    for v in vars_.values():
        names = [w for w in v.words if w not in STOPWORDS]
        used = {i for i, w in enumerate(ws) if w in _VAR_WORDS.get(v.name, ())
                or any({lemma(w), stem(w)} & {lemma(n), stem(n)} for n in names)
                or (not names and matches_name(w, v.table.name))}
        if not used:
            used = {i for i, w in enumerate(ws) if matches_name(w, v.table.name) and w not in _NOISE}
            cov = 0.3 if used else 0.0
        elif not names:  # a role known by its table only (the organization's workforce)
            cov = 0.3
        else:
            cov = len({ws[i] for i in used}) / len(names)
        if used:
            found[v.name] = (cov, min(used), used)
    if actor and actor in vars_ and re.search(r"\b(?:they|their|theirs|them|its)\b", part, re.IGNORECASE):
        pos = min(i for i, w in enumerate(ws) if w in ("they", "their", "theirs", "them", "its"))
        if actor not in found:
            found[actor] = (1.0, pos, {pos})
    if "subject" in vars_ and "subject" not in found and re.search(r"\b(?:you|your|yours)\b", part, re.IGNORECASE):
        pos = min(i for i, w in enumerate(ws) if w in ("you", "your", "yours"))  # a notice's reader: the subject
        found["subject"] = (1.0, pos, {pos})
    # one word, one var: the better-covered var keeps it
    names = sorted(found, key=lambda n: (-found[n][0], ("recipient", "subject", "sender").index(n)))
    taken: set[int] = set()
    out = []
    for n in names:
        cov, pos, used = found[n]
        if used <= taken:
            continue
        taken |= used
        out.append((pos, n, used))
    return sorted(out)


def _split_parts(text: str) -> list[str]:
    """The conjuncts of a condition: split at commas and at ``and`` before a new clause (a determiner, a pronoun or
    possessive, ``if``/``while``, or a verb in ``-s``: "has consented")."""
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+(?:(?:only\s+)?(?:if|while|when)\s+)?"
                                         r"(?=(?:the|a|an|that|this|they|it|he|she|their|its|his|her|your|our|each"
                                         r"|every|any|no)\b)|\s+and\s+(?:(?:only\s+)?(?:if|while|when)\s+)"
                                         r"|\s+and\s+(?=\w+s\b)", text) if p.strip()]
    return parts or [text]


def _modifier_only(mention: tuple[int, str, set[int]], ws: list[str], vars_: dict[str, Var], schema: Schema) -> bool:
    """Is a mention only a modifier of another noun ("a *safeguarding* concern" for the safeguarding lead): a
    role of several words matched without its head word, the next word another table's name word by lemma?"""
    _pos, var, used = mention
    names = [w for w in vars_[var].words if w not in STOPWORDS] if var in vars_ else []
    if len(names) < 2 or any(ws[i] in _PRONOUNS for i in used):
        return False
    head = names[-1]
    if any(same_word(ws[i], head) or ws[i] == head for i in used):
        return False
    after = max(used) + 1
    if after >= len(ws) or ws[after] in names or ws[after] in STOPWORDS:
        return False
    own = vars_[var].table
    if after + 1 < len(ws) and (ws[after + 1] in _DETERMINERS or ws[after + 1] in _PRONOUNS):
        return False  # "the attending treats the patient": a verb and its object follow the role
    noun = lemma(ws[after])  # a noun that is another table's own word ("concern": Concern)
    return any(noun == x for t in schema.catalog.tables if t is not own for x in _table_words(t))


#: a conjunct that opens with a thing ("a safeguarding concern about the pupil is open"): the sentence's agent is
#: not its grammatical subject, so it binds the agent only where it names it
_DETERMINERS = frozenset("a an the any some each every no".split())


def _thing_first(ws: list[str], mentions: list[tuple[int, str, set[int]]]) -> bool:
    """Does the conjunct open with a determiner and a noun that is no party ("an invoice of the pupil ...")?"""
    return bool(ws) and ws[0] in _DETERMINERS and not (mentions and mentions[0][0] <= 1)


def ground_condition(text: str, schema: Schema, vars_: dict[str, Var], *, actor: str | None,
                     year: int, missed: list[str] | None = None, agent: str | None = None,
                     purposes: tuple[str, ...] | None = ()) -> list[list[Atom]]:
    """Condition views for a condition phrase: one group per conjunct that grounds (a conjunct
    starting with "or" joins the previous group: the views of a group are alternatives). A
    conjunct with content words that grounds nothing is appended to ``missed``. ``purposes``: the
    norm's own purpose values (a consent to one of them binds the context's purpose; None: every
    consent binds it, as in a prohibition's exception)."""
    atoms: list[Atom] = []
    age = _AGE.search(text)
    subj = vars_.get("subject")
    if age and subj is not None:
        n = int(age.group(1) or age.group(2))
        under = age.group(1) is not None
        for c in subj.table.columns:
            if matches_name("birth", c.name) and c.type in ("integer", "real"):
                op = ">" if under else "<"
                atoms.append(Atom(f"{'under' if under else 'over'}_{n}",
                                  f"SELECT {schema.key(subj.table)} AS subject FROM {subj.table.name} "
                                  f"WHERE {c.name} {op} {year - n}", description=_described(text, "age"),
                                  evidence="age"))
                break
            if matches_name("age", c.name) and c.type in ("integer", "real"):
                atoms.append(Atom(f"{'under' if under else 'over'}_{n}",
                                  f"SELECT {schema.key(subj.table)} AS subject FROM {subj.table.name} "
                                  f"WHERE {c.name} {'<' if under else '>'} {n}",
                                  description=_described(text, "age"), evidence="age"))
                break
        text = _AGE.sub(" ", text)
    current = actor
    groups: list[list[Atom]] = [[a] for a in atoms]
    for part in _split_parts(text):
        alternative = bool(re.match(r"^or\b", part, re.IGNORECASE))
        part = re.sub(r"^(?:or|and)\s+", "", part, flags=re.IGNORECASE)
        ws = words(part)
        mentions = [m for m in _mentions(part, vars_, agent or current) if not _modifier_only(m, ws, vars_, schema)]
        if mentions and mentions[0][0] <= 1 + (ws[:1] in (["the"], ["a"], ["that"])):
            current = mentions[0][1]
        used = set().union(*(m[2] for m in mentions)) if mentions else set()
        content = [w for i, w in enumerate(ws) if i not in used and w not in STOPWORDS and w not in _NOISE
                   and len(w) > 1]
        mentioned = [m[1] for m in mentions]
        explicit = tuple(mentioned)
        thing = _thing_first(ws, mentions)
        if current and current not in mentioned and current in vars_ and not thing:
            mentioned.insert(0, current)
        if actor and actor not in mentioned and actor in vars_ and not thing:  # the role a relative clause modifies
            mentioned.append(actor)
        pointed = tuple(n for _p, n, used_ in mentions if all(ws[i] in _PRONOUNS for i in used_))
        if _UNIVERSAL.match(part):
            if missed is not None:
                missed.append(part)  # held: a view of one row would be broader than "every"
            continue
        atom = _ground_part(part, content, ws, schema, vars_, mentioned, current, explicit, purposes, pointed)
        if atom is None and (not content or len(set(explicit)) >= 2):
            # "the tutor is the student's tutor" (only the parties are named), "they manage your account" (no table
            # binds both): a reference between the parties' tables named like a word of the conjunct
            atom = _direct_reference(part, ws, schema, vars_, explicit)
        parties = _parties(ws, explicit, actor, agent)
        if atom is None and missed is not None and len({vars_[m].table.name for m in parties if m in vars_}) == 2:
            # "a parent of that pupil", "sessions they teach": a relation of two parties no table word names
            atom = _relation_path(part, content, schema, vars_, [m for m in parties if m in vars_],
                                  modifier=len(set(explicit)) == 1 and actor != agent)
            if atom is None:
                missed.append(part)  # a relation the schema does not pin down to one path: held, never guessed
                continue
        if atom is None and len(set(explicit)) >= 2 and missed is not None:
            missed.append(part)  # a relation of two parties that grounds nothing: held, never dropped
            continue
        if atom is not None and (_SAME.search(part) or _ANAPHOR.search(part)) and len(set(_BOUND.findall(atom.sql))) < 2:
            atom = None  # "a member of the same team", "supervises that teacher": two parties; a view of one is broader
        if atom is not None:
            atom.negated = bool(_NEGATION.search(part))
            if alternative and groups:
                groups[-1].append(atom)
            else:
                groups.append([atom])
        elif content and missed is not None and not (age and not _AGE.sub(" ", part).strip()):
            missed.append(part)
    return groups


def _direct_reference(part: str, ws: list[str], schema: Schema, vars_: dict[str, Var],
                      explicit: tuple[str, ...]) -> Atom | None:
    """A conjunct that names only two parties, one the other's by a foreign key named like a word of it ("the
    tutor is the student's tutor": Student.tutor_id references Staff) -> that reference; else None."""
    named = [m for m in dict.fromkeys(explicit) if m in vars_]
    plain = [w for w in ws if w not in STOPWORDS]
    for a in named:
        for b in named:
            ta, tb = vars_[a].table, vars_[b].table
            if a == b or ta is tb:
                continue
            cols = [c for c in schema.fk_columns(ta, tb) if any(matches_name(w, c) for w in plain)]
            if len(cols) == 1:
                sql = f"SELECT {schema.key(ta)} AS {a}, {cols[0]} AS {b} FROM {ta.name}"
                return Atom(slug("_".join(lemma(w) for w in plain[:4]), "condition"), sql,
                            {v: vars_[v].table.name for v in (a, b) if v != "subject"},
                            _described(part, "direct_reference"), evidence="direct_reference")
    return None


_RELATIVE = frozenset("who whom which that whose".split())


def _parties(ws: list[str], explicit: tuple[str, ...], actor: str | None, agent: str | None) -> list[str]:
    """The parties a conjunct relates: the ones it names or points at, and the role it modifies when it is a
    relative clause or a role's modifier (``actor`` other than the sentence's ``agent``: "a parent of *that pupil*",
    "pupils *they teach*"); a condition clause ("the pupil's enrolment is active") binds the agent only by name."""
    out = list(dict.fromkeys(explicit))
    if actor and actor not in out and (actor != agent or (ws and ws[0] in _RELATIVE)):
        out.append(actor)
    return out


#: "... is open": a conjunct that ends in a predicate word, which the view must test
_PREDICATE = re.compile(r"\b(?:is|are|was|were|remains?|stays?)\s+(?:still\s+|currently\s+|now\s+)?"
                        r"(?!not\b|no\b|a\b|an\b|the\b)([a-z]+)\s*[.;]?\s*$", re.IGNORECASE)
#: "more than 60 days overdue", "overdue by more than 30 days", "past due"
_OVERDUE = re.compile(r"\b(?:(?:more than|over|at least)\s+(\d{1,4})\s+days?\s+(?:overdue|past due|late)"
                      r"|(?:overdue|past due|late)\s+(?:by\s+)?(?:more than|over|at least)\s+(\d{1,4})\s+days?"
                      r"|overdue|past due)\b", re.IGNORECASE)
_UNPAID = frozenset(("paid", "settled"))


_LEAD = frozenset("in on at to for with by of which who whom whose where that".split())
_CLAUSE = frozenset("which who whom whose where that if while when once unless".split())
_BREAK = frozenset("of about for in on with from to by under".split())


def _predicate(part: str, vars_: dict[str, Var]) -> str | None:
    """The predicate word a conjunct ends in when its grammatical subject is a thing ("the concern is open":
    ``open``; "the pupil's enrolment is active": ``active``), or None; a party's own predicate ("in which the patient
    is enrolled": the relation itself) is not one."""
    m = _PREDICATE.search(part)
    if not m or _OVERDUE.search(part):
        return None
    ws = words(part[:m.start()])
    cut = max((i for i, w in enumerate(ws) if w in _CLAUSE), default=-1)
    ws = ws[cut + 1:]  # the clause the predicate ends: "a study ... in which *the patient* is enrolled"
    while ws and ws[0] in _LEAD:
        ws = ws[1:]
    if ws and ws[0] in _DETERMINERS:
        ws = ws[1:]
    head = next((i for i, w in enumerate(ws) if w in _BREAK), len(ws))
    noun = ws[head - 1] if head else ""
    if not noun or noun in _PRONOUNS or any(
            same_word(noun, w) for v in vars_.values() for w in v.words if w not in STOPWORDS) or any(
            matches_name(noun, v.table.name) for v in vars_.values()):
        return None
    return m.group(1).lower()


def _consumed(word: str, tables: list[Table], filters: list[str]) -> bool:
    """Does the view test ``word`` (a filter's column or value spells it, or a table of the view is named by it:
    "enrolled" names Enrolment)?"""
    tokens = [t for f in filters for t in re.findall(r"[a-z0-9]+", f.lower())]
    return (any(same_word(word, t) or same_word(t, word) or matches_name(word, t) for t in tokens)
            or any(_named(t, [word]) for t in tables))


def _overdue(part: str, tables: list[Table], alias: dict[str, str], filters: list[str]) -> list[str] | None:
    """The filters of "more than N days overdue" on the view's tables: the one date column named or commented like
    ``due`` older than N days, and its unpaid test (a boolean ``paid``/``settled`` column) where there is one;
    [] when the conjunct says nothing of it or a plain "overdue" is already a filter (``account_overdue``), None
    when it says it and no single due-date column exists."""
    m = _OVERDUE.search(part)
    if m is None:
        return []
    days = int(m.group(1) or m.group(2) or 0)
    if not days and any(_consumed(w, [], filters) for w in words(m.group(0))):
        return []
    due = [(t, c) for t in tables for c in t.columns if c.type in ("date", "timestamp")
           and (matches_name("due", c.name) or "due" in words(c.comment or ""))]
    if len(due) != 1:
        return None
    t, c = due[0]
    out = [f"{_al(alias, t)}{c.name} < CURRENT_DATE" + (f" - INTERVAL '{days}' DAY" if days else "")]
    paid = [u for u in t.columns if u.type == "boolean" and u.name.lower().removeprefix("is_") in _UNPAID]
    if len(paid) == 1:
        out.insert(0, f"NOT {_al(alias, t)}{paid[0].name}")
    return out


def _comment_names(t: Table, content: list[str]) -> bool:
    """Does the table's comment name it by a noun of the conjunct (``appointment`` for Appt, commented "Appointment
    book")? Only the comment's first content word, its head noun in such a title, counts."""
    ws = [w for w in words(t.comment or "") if w not in STOPWORDS]
    return bool(ws) and any(lemma(w) == lemma(ws[0]) for w in content)


def _verb_columns(schema: Schema, party: Table, content: list[str]) -> set[tuple[str, str]]:
    """(table, column) of the references to ``party`` whose column comment spells a content word of the conjunct
    (``teach`` in "The tutor who teaches the class"): the schema's own word for the relation."""
    out = set()
    for t in schema.catalog.tables:
        for c in schema.fk_columns(t, party):
            col = t.column(c)
            if col.comment and any(same_word(w, x) or stem(w) == stem(x) for w in content
                                   for x in words(col.comment) if x not in STOPWORDS):
                out.add((t.name, col.name))
    return out


_Step = tuple[Table, Table, str, str]  # (from table, to table, from column, to column)


def _simple_paths(schema: Schema, a: Table, b: Table, avoid: set[str], hops: int = 3) -> list[list[_Step]]:
    """Every path of foreign keys (either way, single columns) from table ``a`` to table ``b`` through at most
    ``hops`` tables in between, none of them in ``avoid`` (lower-case names) or repeated, shortest first."""
    steps: dict[str, list[_Step]] = {}
    for fk in schema.catalog.foreign_keys:
        t, u = schema.catalog.table(fk.table), schema.catalog.table(fk.ref_table)
        if len(fk.columns) != 1 or t is u:
            continue
        steps.setdefault(t.name, []).append((t, u, fk.columns[0], fk.ref_columns[0]))
        steps.setdefault(u.name, []).append((u, t, fk.ref_columns[0], fk.columns[0]))
    out: list[list[_Step]] = []
    paths: list[list[_Step]] = [[]]
    for _depth in range(hops + 1):
        grown: list[list[_Step]] = []
        for path in paths:
            here = path[-1][1] if path else a
            seen = {a.name} | {st[1].name for st in path}
            for step in steps.get(here.name, []):
                u = step[1]
                if u is b:
                    out.append([*path, step])
                elif u.name not in seen and u.name.lower() not in avoid:
                    grown.append([*path, step])
        paths = grown
    return out


def fk_paths(schema: Schema, a: Table, b: Table, avoid: set[str], hops: int = 3) -> list[list[_Step]]:
    """The shortest paths of foreign keys between tables ``a`` and ``b`` (:func:`_simple_paths`); several of one
    length mean the schema alone does not say which relation is meant."""
    paths = _simple_paths(schema, a, b, avoid, hops)
    return [p for p in paths if len(p) == len(paths[0])] if paths else []


def _relation_path(part: str, content: list[str], schema: Schema, vars_: dict[str, Var],
                   parties: list[str], *, modifier: bool = False) -> Atom | None:
    """The view of a relation of two parties no table word binds ("a parent of that pupil": Guardianship; "sessions
    they teach": the one path whose reference's comment spells ``teach``): the one shortest foreign-key path between
    their tables that passes through every table the conjunct names and, where a reference's column comment spells
    its verb, starts or ends on such a reference; a conjunct with words that name nothing in the schema, a predicate
    ("is active"), or several such paths grounds nothing (None: the permit is held). With no word at all, only a
    role's modifier that names the other party (``modifier``: "a parent *of that pupil*") grounds, and only to one
    relationship table between the two (Guardianship); "the caseworker is the registrant's caseworker" names a
    relation no such table is."""
    if _predicate(part, vars_) or _OVERDUE.search(part) or _AGE.search(part):
        return None
    (va, vb) = parties[:2]
    ta, tb = vars_[va].table, vars_[vb].table
    avoid = {v.table.name.lower() for v in vars_.values()}
    named = {t.name for t in schema.catalog.tables if t.name.lower() not in avoid and _named(t, content)}
    by_comment = not named
    if by_comment:  # "an appointment with you": Appt, commented "Appointment book" (the schema's own word for it)
        named = {t.name for t in schema.catalog.tables if t.name.lower() not in avoid and _comment_names(t, content)}
    verbs = _verb_columns(schema, ta, content) | _verb_columns(schema, tb, content)
    if content and not named and not verbs:
        return None  # a verb the schema does not spell: no path is the text's
    if not content and not modifier:
        return None
    found = []
    for path in _simple_paths(schema, ta, tb, avoid):
        inner = {s[1].name for s in path[:-1]}
        ends = {(path[0][1].name, path[0][3]), (path[-1][0].name, path[-1][2])}
        if named <= inner and (not verbs or ends & verbs):
            found.append(path)
    if not found:
        return None
    shortest = min(len(p) for p in found)
    best = [p for p in found if len(p) == shortest]
    if len(best) != 1:
        return None  # several equally short paths: which one the text means is a guess
    kind = ("fk_path_comment" if by_comment else "fk_path_named") if named else "fk_path_comment" if verbs \
        else "fk_path_only"
    if kind == "fk_path_only" and (len(best[0]) != 2 or not schema.is_relationship(best[0][0][1], schema.principals)):
        return None  # no word says which relation: only a table that does nothing but relate the two is one
    sql, principals = _path_view(schema, best[0], va, vb, vars_)
    name = slug("_".join(lemma(w) for w in content[:4]) or "_".join(
        [slug(s[1].name) for s in best[0][:-1]] or [slug(ta.name), slug(tb.name)]), "relation")
    return Atom(name, sql, principals, _described(part, kind), evidence=kind)


def _holds(schema: Schema, t: Table, col: str, other: Table) -> bool:
    """Is ``col`` of ``t`` its reference to ``other`` (not ``t``'s key that ``other`` references)?"""
    return col.lower() in {c.lower() for c in schema.fk_columns(t, other)} and t is not other


def _path_view(schema: Schema, path: list[_Step], va: str, vb: str,
               vars_: dict[str, Var]) -> tuple[str, dict[str, str]]:
    """The SELECT of a path from ``va``'s table to ``vb``'s: the tables in between joined in order, each party the
    reference to it, or its own table's key when the party's table holds the reference (then joined too)."""
    first, last = path[0], path[-1]
    ta, tb = first[0], last[1]
    a_holds = _holds(schema, ta, first[2], first[1])
    b_holds = _holds(schema, tb, last[3], last[0])
    chain = [s[0] for s in path][1:]
    if a_holds:
        chain.insert(0, ta)
    if b_holds and tb not in chain:
        chain.append(tb)
    alias = {t.name: "abcdefgh"[i] for i, t in enumerate(chain)}
    out_a = f"{alias[ta.name]}.{schema.key(ta)}" if a_holds else f"{alias[first[1].name]}.{first[3]}"
    out_b = f"{alias[tb.name]}.{schema.key(tb)}" if b_holds else f"{alias[last[0].name]}.{last[2]}"
    joins = [st for st in path if st[0].name in alias and st[1].name in alias]
    frm = f"{chain[0].name} AS a" + "".join(
        f" JOIN {st[1].name} AS {alias[st[1].name]} ON {alias[st[1].name]}.{st[3]} = {alias[st[0].name]}.{st[2]}"
        for st in joins)
    principals = {v: vars_[v].table.name for v in (va, vb) if v != "subject"}
    return f"SELECT {out_a} AS {va}, {out_b} AS {vb} FROM {frm}", principals


def _described(part: str, kind: str) -> str:
    return f"{part} (evidence: {kind})"


_DERIVED = tuple(re.compile(p) for p in (r"(?:ship|ments?|ations?|ions?)$", r"(?:ions?)$"))


def _relation_word(word: str, table_word: str) -> bool:
    """``member`` names ``Membership``, ``enrolled`` ``Enrollment``, ``assigned`` ``Assignment``,
    ``allocated`` ``Allocation`` (less ``-ion``: ``allocat``): the word against the table word less a
    noun-forming suffix (both stemmed, at least 4 letters)."""
    for derived in _DERIVED:
        base = derived.sub("", table_word)
        if base != table_word and len(base) >= 4 and (stem(word) == stem(base) or lemma(word) == base
                                                      or stem(lemma(word)) == stem(base)):
            return True
    return False


def _score_table(t: Table, content: list[str], schema: Schema) -> float:
    tw = _table_words(t)
    hits = [x for x in tw if any(same_word(w, x) or same_word(x, w) or _relation_word(w, x) for w in content)]
    s = sum(1.0 for w in content if any(same_word(w, x) or same_word(x, w) or _relation_word(w, x) for x in tw))
    s += 0.1 * len(hits) / max(1, len(tw))  # ties: the table whose name is most fully named
    s += sum(0.5 for w in content for c in t.columns
             if c.name.lower() not in {k.lower() for k in t.primary_key} and matches_name(w, c.name)
             and not any(matches_name(w, p.name) for p in schema.principals if p is not t))
    return s


def _flags(t: Table, content: list[str], alias: str) -> list[str]:
    out = []
    for c in t.columns:
        if c.type != "boolean":
            continue
        if c.name.lower() in AFFIRMATIVE_FLAGS or any(matches_name(w, c.name) for w in content):
            out.append(f"{alias}{c.name}")
    return out


def _values(t: Table, ws: list[str], schema: Schema, alias: str) -> list[str]:
    out = []
    for col, vals in schema.categorical(t):
        for v in vals:
            vw = [w for w in re.split(r"[^a-z0-9]+", v.lower()) if w]
            if col.lower() == "purpose":  # a purpose column is output (the context's purpose), not filtered
                continue
            if vw and all(any(same_word(w, x) for w in ws) for x in vw):
                out.append(f"{alias}{col} = '{v}'")
    return out


def _purpose_named(t: Table, ws: list[str], schema: Schema, alias: str,
                   purposes: tuple[str, ...] | None = ()) -> list[str]:
    """A filter on the table's purpose column when the conjunct names one of its values word for word
    and that value is not one of the norm's own ``purposes`` ("may view the date of birth if the donor
    has consented to research": ``purpose = 'research'``, whatever the context's purpose), else []
    (the purpose is then output: consent to the context's own purpose, as "for marketing ... if the
    customer has consented to marketing" was always read). ``purposes`` None: never filter (a
    prohibition's exception: binding the context's purpose lifts the prohibition in fewer contexts)."""
    if purposes is None:
        return []
    lemmas = {lemma(w) for w in ws}
    for col, vals in schema.categorical(t):
        if col.lower() != "purpose":
            continue
        named = [v for v in vals if (vw := [w for w in re.split(r"[^a-z0-9]+", v.lower()) if w])
                 and all(lemma(x) in lemmas for x in vw)]
        if len(named) == 1 and not any(named[0].lower() == p.lower() for p in purposes):
            return [f"{alias}{col} = '{named[0]}'"]
    return []


def _agent_col(cols: list[str]) -> str:
    """Of two columns referencing the same table, the agent one (supervisor_id, not supervisee_id)."""
    for c in cols:
        base = re.sub(r"_?id$", "", c.lower())
        if base.endswith(("or", "er", "ent")) and not base.endswith("ee"):
            return c
    return cols[0]


def _names_subject_record(best: Table, ws: list[str], schema: Schema, vars_: dict[str, Var]) -> bool:
    """Does the conjunct name a record of the data subject that ``best`` references ("the handler is assigned to
    the claim": ClaimAssignment -> Claim -> Policyholder)? Then the relationship is to the subject's record, and
    a view of ``best`` alone (assigned to any claim) would be broader than the text."""
    subject = vars_["subject"].table
    for t in schema.catalog.tables:
        if t is best or t is subject or not schema.fk_columns(t, subject) or not schema.fk_columns(best, t):
            continue
        if any(same_word(w, x) or same_word(x, w) for w in ws if w not in STOPWORDS for x in _table_words(t)):
            return True
    return False


def _ground_part(part: str, content: list[str], ws: list[str], schema: Schema, vars_: dict[str, Var],
                 mentioned: list[str], actor: str | None, explicit: tuple[str, ...] = (),
                 purposes: tuple[str, ...] | None = (), pointed: tuple[str, ...] = ()) -> Atom | None:
    """The view of one conjunct (see :func:`ground_condition`); ``pointed``: the parties it names by a pronoun
    (``they``, ``your``), which the view must bind."""
    if not content:
        return None
    principal_names = {v.table.name.lower() for v in vars_.values()}
    scored = sorted(((_score_table(t, content, schema), i, t) for i, t in enumerate(schema.catalog.tables)),
                    key=lambda x: (-x[0], x[1]))
    if not scored or scored[0][0] < 0.5:
        return None
    best = scored[0][2]
    top = scored[0][0]
    # prefer, among equally good tables, one that links the mentioned roles, else the own table of a
    # role the conjunct names ("the pharmacy's contract is active": Pharmacy.contract_active, not another
    # table's agreement flag)
    tied = [t for s, _, t in scored if s == top]
    links = [t for t in tied if any(schema.fk_columns(t, vars_[m].table) for m in mentioned if vars_[m].table is not t)]
    owners = [t for t in tied if any(vars_[m].table is t for m in explicit)]
    best = (links or owners or [best])[0]
    name = slug("_".join(lemma(w) for w in content[:4]), "condition")
    match_words = ws + [w for m in mentioned[:1] for w in vars_[m].words]
    # an attribute of a role's own table ("has opted out", "under contract")
    if best.name.lower() in principal_names:
        same = [m for m in mentioned if vars_[m].table is best]
        var = same[0] if same else next(v.name for v in vars_.values() if v.table is best)
        key = schema.key(best)
        # a reference to its own table ("employees they supervise": Employee.manager_id)
        refs = [c for c in schema.fk_columns(best, best) if c != key and any(matches_name(w, c) for w in content)]
        if refs and len(same) >= 2:
            a_var = actor if actor in same else same[0]
            o_var = next(m for m in same if m != a_var)
            outputs = [f"{refs[0]} AS {a_var}", f"{key} AS {o_var}"]
            sql = (_closure(outputs, best.name) if _TRANSITIVE.search(part)
                   else f"SELECT {', '.join(outputs)} FROM {best.name}")
            return Atom(name, sql, {v: best.name for v in (a_var, o_var) if v != "subject"},
                        _described(part, "self_reference"), evidence="self_reference")
        filters = [c.name for c in best.columns if c.type == "boolean" and any(matches_name(w, c.name)
                                                                              for w in content)]
        filters += _values(best, content, schema, "")
        due = _overdue(part, [best], {best.name: ""}, filters)
        if due is None or not (filters or due) or not _tests_predicate(part, [best], filters, vars_):
            return None
        filters += due
        sql = f"SELECT {key} AS {var} FROM {best.name} WHERE {' AND '.join(filters)}"
        kind = "own_column" + _filter_kinds(filters, due)
        return Atom(name, sql, {var: best.name} if var != "subject" else {}, _described(part, kind), evidence=kind)
    # a relationship table, joined once more if a mentioned role is not reachable from it
    tables = [best]
    needed = [m for m in mentioned if vars_[m].table.name.lower() != best.name.lower()]
    if "subject" in vars_ and "subject" not in needed and schema.fk_columns(best, vars_["subject"].table):
        needed.append("subject")  # a relationship about the data subject binds it, named or not
    elif "subject" in vars_ and "subject" not in needed and _names_subject_record(best, ws, schema, vars_):
        needed.append("subject")  # "is assigned to the claim": the claim is the subject's, joined below
    unreached = [m for m in needed if not schema.fk_columns(best, vars_[m].table)]
    needed = [m for m in needed if m not in unreached or m in explicit or m == "subject"]
    missing = [m for m in unreached if m in needed]
    join = None
    chain: list[tuple[Table, Table, tuple[str, str]]] = []
    if missing:
        join = _one_join(schema, best, missing, vars_, content, principal_names)
        if join is not None:
            tables = [best, join[0]]
        if join is None and len(missing) == 1:
            chain = _chain(schema, best, vars_[missing[0]].table, content, vars_)
        if join is None and not chain:
            if any(m in explicit and (m == "subject" or m in pointed) for m in missing):
                # the text relates the data subject, or a party it points at ("they manage your account": the
                # recipient), and the view could not bind it: broader than the text
                return None
            needed = [m for m in needed if m not in missing]
    if chain:
        tables = [best, *(u for u, _l, _on in chain)]
    if not needed:
        return None
    select: list[str] = []
    principals: dict[str, str] = {}
    taken: set[tuple[str, str]] = set()
    by_table: dict[str, list[str]] = {}
    for m in needed:
        by_table.setdefault(vars_[m].table.name.lower(), []).append(m)
    pair: dict[str, list[tuple[Table, str]]] = {}
    if join is None and not chain:  # two roles of one table, one reference in the table named: one hop further
        for key_, ms in by_table.items():
            target = vars_[ms[0]].table
            own = schema.fk_columns(best, target)
            if len(ms) > 1 and len(own) == 1 and (hop := _second_hop(schema, best, target, ws)) is not None:
                u, on, ucol = hop
                join, tables = (u, on), [best, u]
                by_table[key_] = sorted(ms, key=lambda m: mentioned.index(m) if m in mentioned else len(mentioned))
                pair[key_] = [(best, own[0]), (u, ucol)]
                break
    alias = {best.name: "a", join[0].name: "b"} if join else {best.name: ""}
    if chain:
        alias = {t.name: "abcdefgh"[i] for i, t in enumerate(tables)}
    for key_, ms in by_table.items():
        target = vars_[ms[0]].table
        cols = [(t, c) for t in tables for c in schema.fk_columns(t, target)]
        if key_ in pair:  # "X is a member of a team led by Y": X in the table named, Y one hop away
            cols, ms = pair[key_], ms[:2]
        elif not cols:
            continue
        else:
            if len(ms) > 1 and len(cols) == 1:  # one column for two vars: the named one, else the actor
                named = [m for m in ms if m in explicit]
                ms = [actor] if actor in (named or ms) else (named or ms)[:1]
            if len(ms) == 1 and len(cols) > 1:
                agent = _agent_col([c for _, c in cols])
                pick = agent if ms[0] == actor else next(c for _, c in cols if c != agent)
                cols = [next((t, c) for t, c in cols if c == pick)]
            if len(ms) > 1 and len(cols) > 1:
                agent = _agent_col([c for _, c in cols])
                order = sorted(ms, key=lambda m: m != actor)
                other = [tc for tc in cols if tc[1] != agent]
                cols = [next(tc for tc in cols if tc[1] == agent)] + other[:1]
                ms = order[:2]
        for m, (t, c) in zip(ms, cols, strict=False):
            if (t.name, c) in taken:
                continue
            taken.add((t.name, c))
            select.append(f"{_al(alias, t)}{c} AS {m}")
            if m != "subject":
                principals[m] = vars_[m].table.name
    if actor and actor not in vars_ and actor != "subject":
        # the actor's role did not ground ("a provider who has a treating relationship"): bind it to
        # the table's reference to an agent other than the subject
        subject_t = vars_["subject"].table.name.lower() if "subject" in vars_ else ""
        for t in tables:
            for fk in schema.catalog.foreign_keys_of(t.name):
                if (len(fk.columns) == 1 and fk.ref_table.lower() != subject_t
                        and any(p.name.lower() == fk.ref_table.lower() for p in schema.principals)
                        and (t.name, fk.columns[0]) not in taken and actor not in principals):
                    select.insert(0, f"{_al(alias, t)}{fk.columns[0]} AS {actor}")
                    principals[actor] = schema.catalog.table(fk.ref_table).name
    if not select:
        return None
    named_purpose: list[str] = []
    for t in tables:
        if any(c.name.lower() == "purpose" for c in t.columns):
            named_purpose = _purpose_named(t, ws, schema, _al(alias, t), purposes)
            if not named_purpose:
                select.append(f"{_al(alias, t)}purpose")
            break
    filters = named_purpose + [f for t in tables for f in _flags(t, content, _al(alias, t))]
    filters += [f for t in tables for f in _values(t, match_words, schema, _al(alias, t))]
    due = _overdue(part, tables, alias, filters)
    if due is None or not _tests_predicate(part, tables, filters, vars_):
        return None  # "is open" with no status value, "overdue" with no due date: a view without it is broader
    filters += due
    if join:
        (u, (lc, rc)) = join
        frm = f"{best.name} AS a JOIN {u.name} AS b ON b.{rc} = a.{lc}"
    elif chain:
        frm = f"{best.name} AS a" + "".join(f" JOIN {u.name} AS {alias[u.name]} ON {alias[u.name]}.{rc} = "
                                           f"{alias[left.name]}.{lc}" for u, left, (lc, rc) in chain)
    else:
        frm = best.name
    sql = f"SELECT {', '.join(select)} FROM {frm}" + (f" WHERE {' AND '.join(filters)}" if filters else "")
    if _TRANSITIVE.search(part) and not join and len(select) == 2 and not filters:
        sql = _closure(select, best.name)
    kind = ("fk_path_named" if chain else "relation_join" if join else "relation_table") + _filter_kinds(filters, due)
    return Atom(name, sql, principals, _described(part, kind), evidence=kind)


def _tests_predicate(part: str, tables: list[Table], filters: list[str], vars_: dict[str, Var]) -> bool:
    """Does the view test the conjunct's predicate word, where it ends in one ("the enrolment is active": a filter
    ``status = 'active'``)? True when it ends in none."""
    word = _predicate(part, vars_)
    return word is None or _consumed(word, tables, filters)


def _filter_kinds(filters: list[str], due: list[str]) -> str:
    """The evidence suffixes of a view's filters: ``+status`` (a categorical value), ``+flag`` (a boolean column),
    ``+due_date`` (the overdue test)."""
    rest = [f for f in filters if f not in due and not re.search(r"\bpurpose\s*=", f)]
    kinds = (["+status"] if any("=" in f for f in rest) else []) + (["+flag"] if any("=" not in f for f in rest)
                                                                   else [])
    return "".join(kinds) + ("+due_date" if due else "")


def _one_join(schema: Schema, best: Table, missing: list[str], vars_: dict[str, Var], content: list[str],
              principal_names: set[str]) -> tuple[Table, tuple[str, str]] | None:
    """The table joined once to ``best`` that references every ``missing`` party's table: the one the conjunct
    names, else the only one, else the only relationship table among them (Enrollment, not Grade: a table that only
    relates its references states a relation, a record table holds data); None when that leaves several (which one
    the text means is a guess)."""
    found = []
    for u in schema.catalog.tables:
        if u is best or u.name.lower() in principal_names:
            continue
        if not all(schema.fk_columns(u, vars_[m].table) for m in missing):
            continue
        on = _join_on(schema, best, u)
        if on:
            found.append((u, on))
    named = [f for f in found if _named(f[0], content)]
    pick = named if named else found
    if len(pick) > 1:
        pick = [f for f in pick if schema.is_relationship(f[0], schema.principals)]
    return pick[0] if len(pick) == 1 else None


def _second_hop(schema: Schema, best: Table, target: Table, ws: list[str]) -> tuple[Table, tuple[str, str], str] | None:
    """A table joined to ``best`` by a foreign key that references ``target`` itself (Team.lead_id for
    Membership -> Employee): the best-named such table (by the conjunct's words ``ws``), or None."""
    found = []
    for i, u in enumerate(schema.catalog.tables):
        if u is best or u is target:
            continue
        refs = schema.fk_columns(u, target)
        on = _join_on(schema, best, u) if refs else None
        if refs and on:
            found.append((-_score_table(u, ws, schema), i, u, on, refs[0]))
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1]))
    if len(found) > 1 and found[0][0] == found[1][0]:
        return None  # two tables as well named: which one the text means is a guess
    _, _, u, on, ref = found[0]
    return u, on, ref


def _named(t: Table, content: list[str]) -> bool:
    """Does a word of the conjunct name the table (``allocated`` names Allocation, ``sample`` Sample)?"""
    return any(same_word(w, x) or same_word(x, w) or _relation_word(w, x) for w in content for x in _table_words(t))


def _links(schema: Schema, t: Table, avoid: set[str]) -> list[tuple[Table, tuple[str, str]]]:
    """Tables one step from ``t`` with the columns (of t, of u) joining them: a foreign key either way, or
    two foreign keys to the same table's key (ProjectMember.project_id = Allocation.project_id, the Project
    itself skipped) when that table is not one of the roles' principals (``avoid``)."""
    out: list[tuple[Table, tuple[str, str]]] = []
    for u in schema.catalog.tables:
        if u is t:
            continue
        on = _join_on(schema, t, u)
        if on is not None and (on[0].lower() in {c.lower() for fk in schema.catalog.foreign_keys_of(t.name)
                                                  for c in fk.columns}
                               or on[1].lower() in {c.lower() for fk in schema.catalog.foreign_keys_of(u.name)
                                                    for c in fk.columns}):
            out.append((u, on))
            continue
        for fk in schema.catalog.foreign_keys_of(t.name):
            if len(fk.columns) != 1 or fk.ref_table.lower() in avoid:
                continue
            for gk in schema.catalog.foreign_keys_of(u.name):
                if (len(gk.columns) == 1 and gk.ref_table.lower() == fk.ref_table.lower()
                        and gk.ref_columns[0].lower() == fk.ref_columns[0].lower()):
                    out.append((u, (fk.columns[0], gk.columns[0])))
                    break
            else:
                continue
            break
    return out


def _chain(schema: Schema, best: Table, target: Table, content: list[str],
           vars_: dict[str, Var]) -> list[tuple[Table, Table, tuple[str, str]]]:
    """The join path, at most three steps, from ``best`` to a table referencing ``target`` ("a member of a
    project to which the donor's sample is allocated": ProjectMember -> Allocation -> Sample -> the donor),
    through tables the conjunct names only; [] when there is none or more than one shortest such path
    (fail closed: the condition is then reported ungrounded)."""
    avoid = {v.table.name.lower() for v in vars_.values()}
    paths: list[list[tuple[Table, Table, tuple[str, str]]]] = [[]]
    for _depth in range(3):
        grown: list[list[tuple[Table, Table, tuple[str, str]]]] = []
        for path in paths:
            here = path[-1][0] if path else best
            seen = {best.name} | {u.name for u, _l, _on in path}
            for u, on in _links(schema, here, avoid):
                if u.name in seen or u.name.lower() in avoid or not _named(u, content):
                    continue
                grown.append([*path, (u, here, on)])
        done = [p for p in grown if schema.fk_columns(p[-1][0], target)]
        if done:
            return done[0] if len(done) == 1 else []
        paths = grown
    return []


def _al(alias: dict[str, str], t: Table) -> str:
    a = alias.get(t.name, "")
    return f"{a}." if a else ""


def _join_on(schema: Schema, t: Table, u: Table) -> tuple[str, str] | None:
    """Columns (of t, of u) joining two tables: a foreign key either way, else a shared non-key name."""
    for fk in schema.catalog.foreign_keys_of(u.name):
        if fk.ref_table.lower() == t.name.lower() and len(fk.columns) == 1:
            return fk.ref_columns[0], fk.columns[0]
    for fk in schema.catalog.foreign_keys_of(t.name):
        if fk.ref_table.lower() == u.name.lower() and len(fk.columns) == 1:
            return fk.columns[0], fk.ref_columns[0]
    fks = {c.lower() for fk in schema.catalog.foreign_keys_of(t.name) for c in fk.columns}
    for c in t.columns:
        if c.name.lower() in fks:
            continue
        if u.has_column(c.name):
            return c.name, u.column(c.name).name
    return None


def _closure(select: list[str], table: str) -> str:
    (c1, v1), (c2, v2) = (s.split(" AS ") for s in select)
    return (f"WITH RECURSIVE closure({v1}, {v2}) AS (SELECT {c1}, {c2} FROM {table} "
            f"UNION SELECT closure.{v1}, t.{c2} FROM closure JOIN {table} AS t ON t.{c1} = closure.{v2}) "
            f"SELECT {v1}, {v2} FROM closure")


def relation_between(schema: Schema, a: Table, b: Table) -> tuple[Table, str, str] | None:
    """The one table with one foreign key to each of ``a`` and ``b`` (Guardian: parent -> student); None where
    there is none, or several tables or columns could relate them (the caller holds the permit: never a guess)."""
    found = [(t, schema.fk_columns(t, a), schema.fk_columns(t, b)) for t in schema.catalog.tables
             if t is not a and t is not b]
    links = [(t, ca, cb) for t, ca, cb in found if ca and cb]
    if len(links) != 1 or len(links[0][1]) != 1 or len(links[0][2]) != 1:
        return None
    t, ca, cb = links[0]
    return t, ca[0], cb[0]
