"""Grounding the phrases of a :class:`~pimento.policy.extract_offline.shapes.Frame` in the catalog.

* **Roles**: a phrase names a principal table (``researcher`` -> Researcher, ``consumer`` ->
  Customer by synonym) or a categorical value of one of its columns (``school nurse`` ->
  Staff where ``role = 'nurse'``); the value or name covering the larger share of both the
  phrase's and the value's words wins. The organization itself (``a business``, ``a covered
  entity``) sends through its workforce (the Employee/Staff-like table).
* **Data**: a phrase names tables (every column: ``payment information`` -> Payment), columns
  (``diagnoses`` -> Visit.diagnosis, Discharge.finaldiagnosis) or a regulatory category of the
  lexicon (``demographics`` -> birth/sex/zip columns of the subject). ``personal information``
  or ``student information`` is every column about the subject (tables reaching it by foreign
  keys, relationship tables left out). Public data (``is not personal information``) is looked
  for among the tables that do not reach the subject.
* **Conditions** (:mod:`~pimento.policy.extract_offline.conditions`): each conjunct names a
  table (relationship: ``handles a support case`` ->
  SupportCase) or a column of a role's own table (``has opted out`` -> Customer.opted_out_of_sale);
  its foreign keys to the principals of the roles it mentions become the output columns
  (sender, recipient, subject), with one join when a needed principal is one table away
  (``on the patient's care team`` -> CareTeamMember JOIN TeamAssignment), affirmative flags
  (``granted``, ``approved``) and matched categorical values as filters, ``purpose`` when the
  table has such a column, and a recursive closure for ``directly or indirectly``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pimento.nl.text import STOPWORDS, lemma, name_words, stem
from pimento.policy.extract_offline.lexicon import (
    ANYONE,
    DATA_CATEGORIES,
    DATA_HEADS,
    ORGANIZATIONS,
    PERSONAL,
    WORKFORCE,
    same_word,
    words,
)
from pimento.policy.extract_offline.schema import Schema, content_words, matches_name
from pimento.schema import Table

__all__ = ["ANY_ROLE", "BROAD", "EVIDENCE", "STRONG", "RoleG", "comment_spells", "ground_data", "ground_data_evidence", "ground_data_how", "ground_role", "is_anyone",
           "is_organization", "lookup_keys", "purpose_name", "role_for_purpose", "slug", "workforce"]


def slug(text: str, default: str = "x", limit: int = 40) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit].strip("_")
    if not s:
        return default
    return s if s[0].isalpha() else f"x_{s}"


@dataclass(frozen=True)
class RoleG:
    """A grounded role: the principal table and an optional ``column = 'value'`` filter."""

    table: Table
    column: str | None = None
    value: str | None = None
    words: tuple[str, ...] = ()

    #: more values of ``column`` ("recruiters or insurers")
    more: tuple[str, ...] = ()

    @property
    def where(self) -> str | None:
        if self.column is None:
            return None
        if self.more:
            return f"{self.column} IN ({', '.join(repr(v) for v in (self.value, *self.more))})"
        return f"{self.column} = '{self.value}'"


ANY_ROLE = RoleG.__new__(RoleG)  # sentinel: "anyone"


def _role_words(phrase: str, keep_organizations: bool = False) -> list[str]:
    """The words of a role phrase that name it: no stop words, no possessor ("the student's parent" -> parent), no
    organization word ("company", "firm") unless it is all the phrase says or ``keep_organizations``."""
    phrase = re.sub(r"^.*'s\s+", "", phrase)  # "the student's parent" -> parent
    ws = [w for w in words(phrase) if w not in STOPWORDS and w not in ("another", "other", "same")]
    kept = [w for w in ws if w not in ORGANIZATIONS]
    return ws if keep_organizations else kept or ws


def _names_column(column: str) -> bool:
    """A column of names (``name``, ``full_name``, ``company_name``): its values are proper names, not roles."""
    return "name" in name_words(column)


def _cover(phrase: list[str], target: list[str]) -> tuple[float, float]:
    """(share of phrase words matched by target words, share of target words matched)."""
    if not phrase or not target:
        return 0.0, 0.0
    hit_p = sum(1 for p in phrase if any(_role_word(p, t) for t in target))
    hit_t = sum(1 for t in target if any(_role_word(p, t) for p in phrase))
    return hit_p / len(phrase), hit_t / len(target)


_DERIVATION = re.compile(r"(?:ment|ation|ion|ing|er|or|ist)$")


def _role_word(a: str, b: str) -> bool:
    """Do a role phrase's word and a name's word mean the same: lemma, stem or synonym, or one root under an
    agent or activity suffix (``recruiter`` ~ ``recruitment``, ``investigator`` ~ ``investigation``; a root of
    five letters or more)."""
    if same_word(a, b) or same_word(b, a):
        return True
    ra, rb = _DERIVATION.sub("", lemma(a.lower())), _DERIVATION.sub("", lemma(b.lower()))
    return len(ra) >= 5 and ra == rb


def is_anyone(phrase: str | None) -> bool:
    if not phrase:
        return False
    ws = words(phrase)
    return bool(ws) and ("_".join(ws) in ANYONE or ws[0] in ANYONE or ws == ["any", "person"])


def is_organization(phrase: str | None) -> bool:
    ws = words(phrase or "")
    return bool(ws) and ws[-1] in ORGANIZATIONS


def ground_role(phrase: str | None, schema: Schema) -> RoleG | None:
    """The principal (and filter) a role phrase names, or None. A list ("recruiters or insurers")
    is one role when its members are values of one column, or the whole table when they are
    all of one table; members of different tables ground to None."""
    if not phrase:
        return None
    members = [m for m in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", phrase) if m.strip()]
    if len(members) > 1:
        maybe = [_ground_one(m, schema) for m in members]
        found = [f for f in maybe if f is not None]
        if len(found) != len(maybe) or len({f.table.name for f in found}) != 1:
            return None
        first = found[0]
        if all(f.column is not None and f.column == first.column for f in found):
            more = tuple(dict.fromkeys(str(f.value) for f in found[1:] if f.value != first.value))
            return RoleG(first.table, first.column, first.value, tuple(w for f in found for w in f.words), more)
        return RoleG(first.table, words=tuple(w for f in found for w in f.words))
    return _ground_one(phrase, schema)


def _ground_one(phrase: str, schema: Schema) -> RoleG | None:
    ws = _role_words(phrase)
    if not ws:
        return None
    whole = _role_words(phrase, keep_organizations=True)
    best: tuple[float, RoleG] | None = None
    for table in schema.principals:
        tw = list(name_words(table.name))
        cp, ct = _cover(ws, tw)
        if cp > 0 and (ct == 1.0 or cp * ct >= 0.5):
            # the table's own name beats a value named as fully; a synonym of it does not
            # ("employer" is Partner.kind = 'employer', not the Staff table by synonym)
            g = _modified(RoleG(table, words=tuple(ws)), ws, tw, schema)
            # a modifier that is one of its values covers the rest ("payroll provider": Supplier where service =
            # 'payroll'); a table that names only a modifier, not the head noun, is weaker than a value as
            # full ("claims handler": a handler, Staff where department = 'claims', not the Claim table)
            covered = 1.0 if g.value is not None else cp
            head = g.value is not None or any(_role_word(ws[-1], t) for t in tw)
            score = covered * ct + (0.01 if _literal(ws, tw) else -0.01) - (0.0 if head else 0.02)
            score += 0.005 if _exact(ws, tw) else 0.0  # "renter" is Renter, not Rental (one stem, "rent")
            if best is None or score > best[0]:
                best = (score, g)
        for col, vals in schema.categorical(table):
            if _names_column(col):  # proper names ("PeakForm Central", "Dee Park"), not kinds of people
                continue
            for v in vals:
                vw = _value_words(v)
                # a value may spell the organization word the table match leaves out ("parking company" is
                # 'parking_company', not a table of companies)
                (cp, ct), exact = max((_cover(ws, vw), _exact(ws, vw)), (_cover(whole, vw), _exact(whole, vw)))
                if cp > 0 and (ct == 1.0 or cp * ct >= 0.5):  # the value named in full, or half of both
                    score = cp * ct + (0.005 if exact else 0.0)  # by lemma beats by stem only ("park" ~ "parking")
                    if best is None or score > best[0]:
                        best = (score, RoleG(table, col, v, tuple(ws)))
    return best[1] if best else None


def _exact(phrase: list[str], target: list[str]) -> bool:
    """Does every word of the phrase equal a word of the target by lemma (not only by stem)?"""
    return all(any(lemma(p) == lemma(t) for t in target) for p in phrase)


def _literal(phrase: list[str], target: list[str]) -> bool:
    """Does a word of the phrase equal (lemma or stem, not synonym) a word of the target?"""
    return any(lemma(p) == lemma(t) or stem(p) == stem(t) for p in phrase for t in target)


def _modified(g: RoleG, ws: list[str], table_words: list[str], schema: Schema) -> RoleG:
    """A table named with a modifier that is one of its categorical values ("external researcher" ->
    Researcher where ``affiliation = 'external'``): the role is that value's rows, not the whole table."""
    rest = [w for w in ws if not any(same_word(w, t) or same_word(t, w) for t in table_words)]
    if not rest:
        return g
    named = [(col, v) for col, vals in schema.categorical(g.table) for v in vals
             if _cover(rest, _value_words(v)) == (1.0, 1.0)]
    if len(named) == 1:  # one value only: two ("network": in_network? out_of_network?) leave the table
        return RoleG(g.table, named[0][0], named[0][1], g.words)
    return g


def _value_words(value: str) -> list[str]:
    """The words of a categorical value less its stop words (``out_of_network`` -> out, network)."""
    vw = [w for w in re.split(r"[^a-z0-9]+", value.lower()) if w]
    return [w for w in vw if w not in STOPWORDS] or vw


def workforce(schema: Schema) -> Table | None:
    """The organization's own people: the table named by the first word of :data:`WORKFORCE` that
    names one (Staff before Member: a plan's members are its data subjects, not its workforce)."""
    for w in WORKFORCE:
        for table in schema.principals:
            if any(same_word(w, n) for n in name_words(table.name)):
                return table
    return None


def role_for_purpose(schema: Schema, table: Table, purpose: str | None) -> RoleG:
    """The workforce members whose role value matches the purpose (marketing -> role 'marketing')."""
    ws = content_words(purpose or "")
    for col, vals in schema.categorical(table):
        for v in vals:
            vw = [w for w in re.split(r"[^a-z0-9]+", v.lower()) if w]
            if ws and _cover(ws, vw)[1] == 1.0:
                return RoleG(table, col, v, tuple(vw))
    return RoleG(table)


# --------------------------------------------------------------------------- data


def _table_words(table: Table) -> list[str]:
    return list(name_words(table.name))


def _cols_matching(tables: list[Table], ws: list[str], *, full: bool) -> list[tuple[str, str]]:
    scored = []
    for t in tables:
        for c in t.columns:
            hit = sum(1 for w in ws if matches_name(w, c.name))
            if hit:
                scored.append((hit / len(ws), t.name, c.name))
    if not scored:
        return []
    top = max(s for s, _, _ in scored)
    if full and top < 1.0 or top < 0.5:
        return []
    return [(t, c) for s, t, c in scored if s == top]


def _literal_word(w: str, x: str) -> bool:
    """The same word by lemma or stem (no synonym, no substring)."""
    return lemma(w) == lemma(x) or stem(w) == stem(x)


def _literal_name(content: list[str], table: Table) -> bool:
    """Do the content words name ``table`` word for word (each word of either matched by one of the other)? Every
    word of the table's name counts, stop words included: ``ProofOfDelivery`` is not named word for word by the
    content words of ``proof of delivery`` (POLICY12 dropped the table's stop words, for ``check-in`` ->
    ``CheckIn``; on a sealed text that made a term the text defines more narrowly a whole table enforced in a permit,
    so it was undone: such a phrase is ``table_partial``, a question)."""
    tw = _table_words(table)
    return bool(content) and all(any(_literal_word(w, x) for x in tw) for w in content) and all(
        any(_literal_word(w, x) for w in content) for x in tw)


def _table_then_columns(content: list[str], pool: list[Table]) -> list[tuple[str, str]]:
    """The columns of one table named word for word by some of the phrase's words, named by the others
    (``interview notes`` -> Interview.notes, ``application decision`` -> Application.decision); empty unless
    exactly one table reads so and every other word names one of its columns."""
    hits = []
    for t in pool:
        tw = _table_words(t)
        lead = [w for w in content if any(_literal_word(w, x) for x in tw)]
        rest = [w for w in content if w not in lead]
        if not lead or not rest or not all(any(_literal_word(w, x) for w in lead) for x in tw):
            continue
        cols = [(t.name, c.name) for c in t.columns if any(matches_name(w, c.name) for w in rest)]
        if {c.lower() for _t, c in cols} <= {k.lower() for k in t.primary_key}:
            continue  # its key names its rows ("questionnaire responses": the table, :func:`_rows_named`)
        if all(any(matches_name(w, c) for _t, c in cols) for w in rest):
            hits.append(cols)
    return hits[0] if len(hits) == 1 else []


def _spelled(column: str, phrase_words: list[str]) -> bool:
    """Every word of the column's name is a word of the phrase (``card number`` spells ``card_number``)."""
    return all(any(same_word(x, w) or same_word(w, x) for w in phrase_words) for x in name_words(column))


def _narrowest(found: list[tuple[str, str]], phrase_words: list[str], content: list[str]) -> list[tuple[str, str]]:
    """Of columns matched equally by the phrase's content words, those whose names also carry one of its
    other words, when there are some: ``card number`` (``number`` is a stop word) means ``card_number``,
    not also ``card_last4``."""
    other = [w for w in phrase_words if w not in content and len(w) >= 4]
    named = [(t, c) for t, c in found if any(same_word(x, w) for x in name_words(c) for w in other)]
    return named or found


def _subject_own(found: list[tuple[str, str]], subject: Table, phrase_words: list[str]) -> list[tuple[str, str]]:
    """Of columns a phrase names in several tables, the subject's own when it has one (``your name``:
    Candidate.full_name), and another table's only when the phrase spells its whole name: ``account_name`` is
    the account's name, a word (``account``) the phrase does not say."""
    own = [(t, c) for t, c in found if t == subject.name]
    if not own:
        return found
    return own + [(t, c) for t, c in found if t != subject.name and _spelled(c, phrase_words)]


def _rows_named(found: list[tuple[str, str]], content: list[str], pool: list[Table],
                schema: Schema) -> list[tuple[str, str]]:
    """Every column of a table when the phrase names it and its rows ("questionnaire responses":
    the table Questionnaire and its key response_id), else empty: a key column alone is no data."""
    if len(found) != 1:
        return []
    table = next((t for t in pool if t.name == found[0][0]), None)
    if table is None or found[0][1] != schema.key(table):
        return []
    rest = [w for w in content if not matches_name(w, found[0][1])]
    tw = _table_words(table)
    if rest and all(any(same_word(w, x) or same_word(x, w) for x in tw) or matches_name(w, table.name) for w in rest):
        return [(table.name, c.name) for c in table.columns]
    return []


def _references(schema: Schema, table: Table, column: str, targets: set[str]) -> bool:
    """Is ``table.column`` one of the ``targets`` tables' own columns, or a foreign key to one of them?"""
    if table.name in targets:
        return True
    return any(len(fk.columns) == 1 and fk.columns[0].lower() == column.lower() and fk.ref_table in targets
               for fk in schema.catalog.foreign_keys_of(table.name))


def _all_cols(tables: list[Table]) -> list[tuple[str, str]]:
    return [(t.name, c.name) for t in tables for c in t.columns]


def lookup_keys(locs: list[tuple[str, str]], schema: Schema, public: list[Table]) -> list[tuple[str, str]]:
    """The keys by which the subject's rows look up the columns ``locs`` of reference tables.

    A column of a table that does not reach the subject (a code list such as a diagnosis catalog)
    is about a person only through the foreign keys into that table's key: a prohibition of the
    column alone leaves the person's code visible, and the code names the row. For a prohibition
    the key is prohibited with it (one-column keys that some foreign key references), so that
    information implication carries it to the referencing columns. Fail narrow for a prohibition
    means denying more: this may deny every code of the table, never fewer cells than the text.
    """
    tables = {t.name.lower(): t for t in public}
    have = {(r.lower(), a.lower()) for r, a in locs}
    out: list[tuple[str, str]] = []
    for relation, _ in locs:
        table = tables.get(relation.lower())
        if table is None or len(table.primary_key) != 1:
            continue
        key = table.primary_key[0]
        referenced = any(fk.ref_table.lower() == relation.lower() and [c.lower() for c in fk.ref_columns] == [key.lower()]
                         for fk in schema.catalog.foreign_keys)
        if referenced and (relation.lower(), key.lower()) not in have:
            have.add((relation.lower(), key.lower()))
            out.append((table.name, key))
    return out


#: how a data phrase was grounded (:func:`ground_data_how`); the broad ways name no column
BROAD = frozenset({"all_personal", "category_tables"})

#: the evidence kinds of a data grounding (:func:`ground_data_evidence`), and of the other ways a phrase is
#: grounded (``vocabulary``: declared by the custodian; ``definition``: the text's own definition, each item
#: grounded strongly)
EVIDENCE = ("vocabulary", "definition", "definition_weak", "table_literal", "table_rows", "table_columns", "column_spelled",
            "comment_spelled", "table_comment", "table_comment_partial", "comment_spelled+names", "table_comment+names",
            "table_comment_partial+names", "table_columns_partial", "column_anywhere", "category_columns", "table_partial", "column_partial", "table_literal+category",
            "table_partial+category", "column_spelled+category", "column_partial+category", "table_rows+category",
            "category_tables", "all_personal", "none")


#: the evidence kinds on which a permit's data is enforced in the draft: the phrase spells each column's name,
#: names the table word for word (a whole-table grant), names a table and its rows by its key, spells a column's
#: comment or names a table's comment in full (the schema's own words, ``COMMENT ON``), or is declared
#: (``[vocabulary]``) or defined by the text with items grounded so. Any other grounding of a permit's phrase (a
#: table named in part or by a synonym, a column sharing one word or a stem, the lexicon's category columns, a
#: column outside the subject's data, a table comment the phrase names only in part) is a question with the
#: extractor's proposal (``confirm`` recovers it): fail narrow. Chosen from the evidence table of
#: ``benchmarks.cql_evidence`` (docs/benchmarks.md, POLICY10 and POLICY11). A prohibition is enforced on any
#: grounding (broader denies more: fail closed).
STRONG = frozenset({"vocabulary", "definition", "table_literal", "table_rows", "table_columns", "column_spelled",
                    "comment_spelled", "table_comment"})


def _comment_words(text: str) -> list[str]:
    """The words of a phrase or a comment that carry its meaning: no stop word, no word of :data:`PERSONAL`
    (``personal``, ``sensitive``), no single letter; each once."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS and w not in PERSONAL and len(w) > 1))


def comment_spells(phrase: str, comment: str | None) -> tuple[int, bool] | None:
    """Does a comment spell a data phrase, and how closely: ``(extra, in_full)`` or None.

    Words are compared by lemma or stem (:func:`_literal_word`: no synonym, no substring), after
    :func:`_comment_words`. The comment **spells** the phrase when every word of the phrase is a word of the
    comment (``in_full``), or every word of the comment is a word of the phrase, and at least two words are shared
    (or the phrase and the comment are the same one word): ``date of birth`` spells ``Date of birth of the pet``;
    ``contact details`` does not spell ``contact email of the owner`` (one word shared). ``extra`` is the number of
    the comment's words the phrase does not say (fewer: a closer comment). A phrase of head nouns only
    (``records``) spells nothing.

    >>> comment_spells("date of birth", "Date of birth of the pet"), comment_spells("contact details", "contact email")
    ((1, True), None)
    """
    p = _comment_words(phrase)
    c = _comment_words(comment or "")
    if not p or not c or all(w in DATA_HEADS for w in p):
        return None
    hit_p = [w for w in p if any(_literal_word(w, x) for x in c)]
    hit_c = [x for x in c if any(_literal_word(w, x) for w in p)]
    in_full, covers = len(hit_p) == len(p), len(hit_c) == len(c)
    if not (in_full or covers) or not (len(hit_p) >= 2 or (in_full and covers)):
        return None
    return len(c) - len(hit_c), in_full


def _by_comments(phrase: str, pool: list[Table]) -> tuple[list[tuple[str, str]], str, str]:
    """The columns whose comments spell ``phrase`` (:func:`comment_spells`; the closest comments when several do):
    ``comment_spelled``; else every column of the tables whose comments do: ``table_comment`` when each comment names
    the whole phrase, ``table_comment_partial`` (weak) when the phrase names only the comment; else nothing."""
    columns = [(m[0], t.name, c.name) for t in pool for c in t.columns if (m := comment_spells(phrase, c.comment))]
    if columns:
        least = min(e for e, _t, _c in columns)
        return [(t, c) for e, t, c in columns if e == least], "columns", "comment_spelled"
    tables = [(m[0], m[1], t) for t in pool if (m := comment_spells(phrase, t.comment))]
    if not tables:
        return [], "none", "none"
    least = min(e for e, _f, _t in tables)
    named = [(full, t) for e, full, t in tables if e == least]
    kind = "table_comment" if all(full for full, _t in named) else "table_comment_partial"
    return [(t.name, c.name) for _f, t in named for c in t.columns], "table", kind


def ground_data(phrase: str, schema: Schema, *, personal: list[Table], public: list[Table],
                subject: Table | None, is_public: bool) -> list[tuple[str, str]]:
    """Columns (relation, attribute) holding the data a phrase names; empty if nothing fits."""
    return ground_data_how(phrase, schema, personal=personal, public=public, subject=subject,
                           is_public=is_public)[0]


def ground_data_how(phrase: str, schema: Schema, *, personal: list[Table], public: list[Table],
                    subject: Table | None, is_public: bool) -> tuple[list[tuple[str, str]], str]:
    """:func:`ground_data_evidence` without the evidence kind."""
    locs, how, _evidence = ground_data_evidence(phrase, schema, personal=personal, public=public, subject=subject,
                                                is_public=is_public)
    return locs, how


def ground_data_evidence(phrase: str, schema: Schema, *, personal: list[Table], public: list[Table],
                         subject: Table | None, is_public: bool,
                         deny: bool = False) -> tuple[list[tuple[str, str]], str, str]:
    """The columns a phrase names, how they were found and the evidence kind (:func:`_by_names`), or, where the names
    give no :data:`STRONG` evidence, the columns or tables whose **comments** spell the phrase (:func:`_by_comments`:
    ``comment_spelled``, ``table_comment``, ``table_comment_partial``). For a prohibition (``deny``) the comments'
    columns are added to what the names found (fail closed: it denies no less than before), the kind then
    ``<comment kind>+names`` when the names added columns. A catalog without comments grounds as before."""
    found = _by_names(phrase, schema, personal=personal, public=public, subject=subject, is_public=is_public)
    if found[2] in STRONG:
        return found
    locs, how, kind = _by_comments(phrase, public if is_public else personal)
    if not locs:
        return found
    if deny and any(loc not in locs for loc in found[0]):
        return locs + [loc for loc in found[0] if loc not in locs], how, f"{kind}+names"
    return locs, how, kind


def _by_names(phrase: str, schema: Schema, *, personal: list[Table], public: list[Table],
              subject: Table | None, is_public: bool) -> tuple[list[tuple[str, str]], str, str]:
    """The columns a phrase names and how they were found: ``table`` (a table whose name carries
    every content word), ``table_columns`` (columns of a table named word for word, named by the phrase's
    other words: ``interview notes``), ``columns`` (columns named by the phrase's words), ``category_columns``
    (the lexicon's columns of a regulatory category), or one of the :data:`BROAD` ways that name
    no column: ``all_personal`` (every column about the subject: "personal information", "the
    records of students") and ``category_tables`` (whole tables of a category); ``none``. The third element is
    the **evidence kind** (one of :data:`EVIDENCE`): how strongly the phrase's words name what was found."""
    ws = [w for w in words(phrase) if w not in STOPWORDS]
    has_personal = any(w in PERSONAL for w in ws)
    ws = [w for w in ws if w not in PERSONAL]
    content = [w for w in ws if w not in DATA_HEADS] or ([] if has_personal else ws)
    pool = public if is_public else personal
    # tables named word for word ("applications" -> Application): they beat a name that only shares a stem or
    # a substring with the phrase (Applicant: "applic")
    literal = [t for t in pool if _literal_name(content, t)]
    if not is_public:
        if not content or all(w in DATA_HEADS for w in content):  # "the records of patients"
            return _all_cols(personal), "all_personal", "all_personal"
        if subject is not None and all(matches_name(w, subject.name) for w in content) and (
                not literal or subject in literal):
            return _all_cols(personal), "all_personal", "all_personal"
    found: list[tuple[str, str]] = []
    how = "none"
    evidence = "none"
    # 1. tables whose name carries every content word
    for t in literal or pool:
        tw = _table_words(t)
        if all(any(same_word(w, x) or same_word(x, w) for x in tw) or matches_name(w, t.name) for w in content):
            found += [(t.name, c.name) for c in t.columns]
            how = "table"
            evidence = "table_literal" if literal else "table_partial"
    # 1a. a table named only in part ("account number": BankAccount, whose "bank" the phrase does not say) whose
    # column the phrase spells out in full (account_number): that column, not every column of the table
    if how == "table" and not literal:
        spelled = [(t, c) for t, c in found if len(name_words(c)) > 1 and _spelled(c, words(phrase))
                   and all(matches_name(w, c) for w in content)]
        if spelled:
            found, how, evidence = spelled, "columns", "column_spelled"
    # 1b. a table named word for word, then its columns ("interview notes" -> Interview.notes, not the table's
    # keys nor every column named like "interview")
    if not found:
        found = _table_then_columns(content, pool)
        how = "table_columns" if found else how
        if found:  # a column the phrase's words name only in part ("pet's" -> pet_id, "times" -> start_time): weak
            evidence = "table_columns" if all(_spelled(c, words(phrase)) for _t, c in found) else "table_columns_partial"
    # 2. columns
    if not found:
        found += _narrowest(_cols_matching(pool, content, full=False), words(phrase), content)
        how = "columns" if found else how
        rows = _rows_named(found, content, pool, schema)
        if rows:
            found, how, evidence = rows, "table", "table_rows"
        elif found and subject is not None and not is_public:
            found = _subject_own(found, subject, words(phrase))
        if how == "columns":
            evidence = "column_spelled" if all(_spelled(c, words(phrase)) for _t, c in found) else "column_partial"
    # a phrase that spells out its columns' names ("card number" -> card_number) means those: the lexicon's
    # category of one of its words (every "card" column) would add columns the text does not name
    named = how == "columns" and all(_spelled(c, words(phrase)) for _t, c in found)
    # a phrase that names a table ("prescriptions" -> Prescription) means its records, those of the
    # category's other tables (MedicationOrders) and references to them (Txn.account_id for "account
    # information"): not the category's columns scattered in other records (a Claim's drug_code, a
    # PriorAuthorization's drug_name), which the text does not name
    table_named = {t for t, _c in found} if how == "table" else set()
    # a word that is part of the several-word name of a table the phrase names in full ("payment card details"
    # -> PaymentCard) is that name, not its own category (every payment table); "medications" names part of
    # MedicationOrders and keeps its category
    compound = [x for t in pool if t.name in table_named and len(_table_words(t)) > 1 and _literal_name(content, t)
                for x in _table_words(t)]
    # 3. the lexicon's regulatory categories
    before = len(found)
    for w in content if not named and how != "table_columns" else ():
        if any(_literal_word(w, x) for x in compound):
            continue
        for cat, spec in DATA_CATEGORIES.items():
            if not (same_word(w, cat) or stem(w) == stem(cat)):
                continue
            scope = [subject] if spec.get("key") and subject is not None and not is_public else pool
            for t in pool:
                if any(matches_name(x, t.name) for x in spec.get("tables", ())):
                    if (t.name, t.columns[0].name) in found:  # the phrase names this table itself (step 1)
                        continue
                    found += [(t.name, c.name) for c in t.columns]
                    how = "category_tables"  # whole tables the phrase does not name: broad
            for t in scope:
                for c in t.columns:
                    if table_named and not _references(schema, t, c.name, table_named):
                        continue
                    if any(matches_name(x, c.name) for x in spec.get("cols", ())):
                        found.append((t.name, c.name))
                        how = "category_columns" if how == "none" else how
            if spec.get("key") and subject is not None and not is_public:
                found.append((subject.name, schema.key(subject)))
    if len(set(found)) > len(set(found[:before])):  # the category added columns (or tables) the phrase does not spell
        kind = "category_tables" if how == "category_tables" else "category_columns"
        evidence = kind if evidence == "none" else f"{evidence}+category"
    # 4. a column named by every word, anywhere (hivstatus in a reference table)
    if not found and not is_public:
        found += _cols_matching(list(schema.catalog.tables), content, full=True)
        how = "columns" if found else how
        evidence = "column_anywhere" if found else evidence
    if not found and has_personal:
        return _all_cols(personal), "all_personal", "all_personal"
    out: list[tuple[str, str]] = []
    for item in found:
        if item not in out:
            out.append(item)
    return out, how, evidence


# --------------------------------------------------------------------------- purposes


_PURPOSE_NOISE = frozenset(
    """purpose purposes providing provide processing process internal targeted cross context behavioral
    behavioural requested requests on its behalf own the consumer customer patient student""".split()
)


def purpose_name(phrase: str, known: tuple[str, ...] = ()) -> str:
    """A purpose's name: a known purpose value (``Consent.purpose``) it names, else its main word."""
    ws = [w for w in words(phrase) if w not in STOPWORDS]
    for w in ws:
        for k in known:
            if same_word(w, k) or same_word(k, w):
                return slug(k)
    for k in known:  # "educational service" -> edtech_service: half the value's words named
        parts = [p for p in re.split(r"[^a-z0-9]+", k.lower()) if p]
        if len(parts) > 1 and sum(any(same_word(w, p) for w in ws) for p in parts) * 2 >= len(parts):
            return slug(k)
    main = [w for w in ws if w not in _PURPOSE_NOISE] or ws or ["purpose"]
    return slug(main[0] if main[0].endswith("ing") else lemma(main[0]))
