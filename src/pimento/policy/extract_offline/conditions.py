"""Condition phrases -> condition views over the catalog (see :mod:`~pimento.policy.extract_offline.ground`).

Each conjunct of a condition ("the agent handles a support case of that consumer") names the
roles it mentions (by their words, pronouns resolving to the sentence's agent) and a table: a
column of a role's own table, a self-reference, or a relationship table whose foreign keys to
the roles' principals become the view's outputs, joined once when a role is one table away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pimento.nl.text import STOPWORDS, lemma, stem
from pimento.policy.extract_offline.ground import _table_words, slug
from pimento.policy.extract_offline.lexicon import AFFIRMATIVE_FLAGS, same_word, words
from pimento.policy.extract_offline.schema import Schema, matches_name
from pimento.schema import Table

__all__ = ["Atom", "Var", "ground_condition", "relation_between"]


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


@dataclass
class Var:
    """A norm variable a condition may bind: its role phrase words and principal table."""

    name: str  # sender | recipient | subject
    table: Table
    words: tuple[str, ...] = ()


_AGE = re.compile(r"\b(?:under|younger than|below|less than)\s+(?:the age of\s+)?(\d{1,3})\b"
                  r"|\b(?:over|older than|above)\s+(?:the age of\s+)?(\d{1,3})\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n't\b", re.IGNORECASE)
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
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+(?=(?:the|a|an|that|this|they|it|he|she)\b)"
                                         r"|\s+and\s+(?=\w+s\b)", text) if p.strip()]
    return parts or [text]


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
                                  f"WHERE {c.name} {op} {year - n}", description=text))
                break
            if matches_name("age", c.name) and c.type in ("integer", "real"):
                atoms.append(Atom(f"{'under' if under else 'over'}_{n}",
                                  f"SELECT {schema.key(subj.table)} AS subject FROM {subj.table.name} "
                                  f"WHERE {c.name} {'<' if under else '>'} {n}", description=text))
                break
        text = _AGE.sub(" ", text)
    current = actor
    groups: list[list[Atom]] = [[a] for a in atoms]
    for part in _split_parts(text):
        alternative = bool(re.match(r"^or\b", part, re.IGNORECASE))
        part = re.sub(r"^(?:or|and)\s+", "", part, flags=re.IGNORECASE)
        mentions = _mentions(part, vars_, agent or current)
        ws = words(part)
        if mentions and mentions[0][0] <= 1 + (ws[:1] in (["the"], ["a"], ["that"])):
            current = mentions[0][1]
        used = set().union(*(m[2] for m in mentions)) if mentions else set()
        content = [w for i, w in enumerate(ws) if i not in used and w not in STOPWORDS and w not in _NOISE
                   and len(w) > 1]
        mentioned = [m[1] for m in mentions]
        explicit = tuple(mentioned)
        if current and current not in mentioned and current in vars_:
            mentioned.insert(0, current)
        if actor and actor not in mentioned and actor in vars_:  # the role a relative clause modifies
            mentioned.append(actor)
        pointed = tuple(n for _p, n, used_ in mentions if all(ws[i] in _PRONOUNS for i in used_))
        atom = _ground_part(part, content, ws, schema, vars_, mentioned, current, explicit, purposes, pointed)
        if atom is None and (not content or len(set(explicit)) >= 2):
            # "the tutor is the student's tutor" (only the parties are named), "they manage your account" (no table
            # binds both): a reference between the parties' tables named like a word of the conjunct
            atom = _direct_reference(part, ws, schema, vars_, explicit)
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
                            {v: vars_[v].table.name for v in (a, b) if v != "subject"}, part)
    return None


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
            return Atom(name, sql, {v: best.name for v in (a_var, o_var) if v != "subject"}, part)
        filters = [c.name for c in best.columns if c.type == "boolean" and any(matches_name(w, c.name)
                                                                              for w in content)]
        filters += _values(best, content, schema, "")
        if not filters:
            return None
        sql = f"SELECT {key} AS {var} FROM {best.name} WHERE {' AND '.join(filters)}"
        return Atom(name, sql, {var: best.name} if var != "subject" else {}, part)
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
        for _, _, u in scored[1:] + [(0, 0, t) for t in schema.catalog.tables]:
            if u is best or u.name.lower() in principal_names:
                continue
            if not all(schema.fk_columns(u, vars_[m].table) for m in missing):
                continue
            on = _join_on(schema, best, u)
            if on:
                join, tables = (u, on), [best, u]
                break
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
    return Atom(name, sql, principals, part)


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
    _, _, u, on, ref = min(found, key=lambda f: (f[0], f[1]))
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
    """A table with foreign keys to both ``a`` and ``b`` (Guardian: parent -> student)."""
    for t in schema.catalog.tables:
        ca, cb = schema.fk_columns(t, a), schema.fk_columns(t, b)
        if t is not a and t is not b and ca and cb:
            return t, ca[0], cb[0]
    return None
