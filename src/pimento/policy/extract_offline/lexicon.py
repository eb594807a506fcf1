"""Generic vocabulary of privacy regulations, for the offline policy extractor.

Nothing here names a table or column of any particular database: these are the words that
privacy laws use (HIPAA, FERPA, COPPA, CCPA, GDPR, GLBA, ...) and what they usually mean in a
relational schema, as *words* that the grounding step then looks for in the catalog's names
and categorical values. Words are compared as lemmas and stems (:mod:`pimento.nl.text`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pimento.nl.text import lemma, stem, synonyms

__all__ = [
    "AFFIRMATIVE_FLAGS",
    "ANYONE",
    "DATA_CATEGORIES",
    "DATA_HEADS",
    "DISCLOSE_VERBS",
    "DITRANSITIVE_VERBS",
    "FLOW_VERBS",
    "IMPERATIVE_VERBS",
    "INFINITIVE_PURPOSE_VERBS",
    "LIST_DENY",
    "LIST_PERMIT",
    "NOTIFY_VERBS",
    "ORGANIZATIONS",
    "PERSONAL",
    "RECEIVE_VERBS",
    "USE_VERBS",
    "WORKFORCE",
    "keys",
    "same_word",
    "words",
]

#: Verbs whose grammatical subject sends the data ("X may disclose D to Y").
DISCLOSE_VERBS = frozenset(
    """disclose share sell provide send transfer transmit release give report furnish
    disseminate make forward rent lease exchange publish post""".split()
)
#: Verbs whose grammatical subject receives the data ("Y may receive D from X").
RECEIVE_VERBS = frozenset(
    """receive collect access inspect review know obtain view see read request get examine
    copy acquire retrieve gather open""".split()
)
#: Verbs whose object is the person told ("may consult another physician", "inform a parent about D").
NOTIFY_VERBS = frozenset("consult inform notify tell contact advise brief alert".split())
#: Verbs whose grammatical subject is the information itself ("D may flow to Y").
FLOW_VERBS = frozenset("flow pass move travel".split())
#: Verbs of internal use ("the business may use D for P").
USE_VERBS = frozenset("use process analyze analyse store retain maintain handle combine".split())

#: Verbs that open an imperative rule of a handbook ("Give the police ...", "Never pass D to Y", "Do not keep D ...")
#: -> the verb the modal shapes read (``pass``/``show``/``hand`` move the data to someone: disclose; ``keep``:
#: retain). Verbs of the classes above open an imperative too, as themselves.
IMPERATIVE_VERBS: dict[str, str] = {"pass": "disclose", "show": "disclose", "hand": "disclose", "give": "give",
                                    "keep": "retain", "store": "store", "retain": "retain", "copy": "copy",
                                    "print": "disclose", "email": "send", "mail": "send", "forward": "forward"}
#: Imperative verbs that take the recipient first ("Give the police D", "Show a technician D").
DITRANSITIVE_VERBS = frozenset("give show send pass hand tell email mail forward provide sell".split())
#: Verbs whose infinitive after the data states a purpose ("... card details to collect membership fees", "... to
#: verify the renter's identity"); words that are as often nouns after "to" ("support staff", "help desk", "market")
#: are left out, so "disclosed to support staff" keeps its recipient.
INFINITIVE_PURPOSE_VERBS = frozenset(
    """verify check confirm authenticate identify collect settle investigate prevent detect deliver contact arrange
    book schedule assess comply respond resolve recover prepare improve promote fulfil fulfill enforce administer
    evaluate monitor protect pursue enable perform calculate refund defend establish send process bill notify
    provide obtain complete secure manage""".split()
)
#: The access column of a "who may see what" list line ("Trainers - workout plans - view and edit."): words of a
#: permit, and phrases of a prohibition.
LIST_PERMIT = frozenset(
    "view edit read see access update amend change write modify download print use receive full only yes".split()
)
LIST_DENY = re.compile(r"^(?:no(?:ne|t)?(?:\s+access)?|no\s+(?:view|viewing|access\s+at\s+all)|never|prohibited|forbidden|"
                       r"denied|not\s+(?:permitted|allowed|authori[sz]ed)|x)$", re.IGNORECASE)

#: Heads of a subject phrase that name the regulated organization itself, not a principal.
ORGANIZATIONS = frozenset(
    """business company school hospital entity institution agency organization organisation firm bank
    employer retailer clinic university college practice district we insurer plan controller
    enterprise corporation lender""".split()
)
#: The organization's own people: a sender that is the organization is its workforce.
WORKFORCE = ("employee", "staff", "worker", "personnel", "workforce", "official", "member")

#: Words for "everybody": a role slot with one of them is ``any``.
ANYONE = frozenset("anyone anybody everyone everybody any_person public world".split())

#: Head nouns of data phrases that carry no meaning of their own ("health *records*").
DATA_HEADS = frozenset(
    """information info data record records detail details file files history histories type types
    table reference list content contents catalog catalogue
    code codes""".split()
)
#: Modifiers meaning "about a person", with no further restriction.
PERSONAL = frozenset(
    """personal personally identifiable private sensitive protected individual individually
    nonpublic confidential""".split()
)

#: Flags that mark a relationship row as in force (a consent *granted*, a study *approved*).
AFFIRMATIVE_FLAGS = frozenset(
    "granted approved active valid accepted signed current enabled given confirmed verified consented".split()
)

#: Regulatory data categories -> words to look for in the schema. ``cols`` are column words,
#: ``tables`` table words (every column of such a table), ``key``: include the subject's key.
DATA_CATEGORIES: dict[str, dict[str, Any]] = {
    "identifier": {"cols": ("name", "email", "mail", "phone", "address", "ssn", "username", "login"), "key": True},
    "identify": {"cols": ("name", "email", "mail", "phone", "address", "ssn", "username", "login"), "key": True},
    "contact": {"cols": ("email", "mail", "phone", "address", "fax")},
    "demographic": {"cols": ("birth", "age", "sex", "gender", "zip", "zip3", "postal", "postcode", "race",
                             "ethnicity", "marital", "nationality")},
    "directory": {"cols": ("name", "grade", "level", "address", "phone", "email", "major", "degree", "photo"),
                  "key": True},
    "birth": {"cols": ("birth", "dob", "birthday", "birthdate")},
    "age": {"cols": ("birth", "dob", "age", "birthday", "birthdate")},
    "purchase": {"tables": ("order", "purchase", "transaction", "sale", "item", "cart")},
    "commercial": {"tables": ("order", "purchase", "transaction", "sale", "item", "cart")},
    "payment": {"tables": ("payment", "invoice", "billing", "charge"), "cols": ("card", "iban")},
    "financial": {"tables": ("payment", "account", "invoice", "loan", "transaction", "balance"),
                  "cols": ("card", "iban", "salary", "income", "balance")},
    "card": {"cols": ("card", "pan")},
    "account": {"tables": ("account",), "cols": ("account", "iban")},
    "education": {"tables": ("grade", "enrollment", "enrolment", "attendance", "transcript", "score", "exam",
                             "assessment", "assignment")},
    "academic": {"tables": ("grade", "enrollment", "enrolment", "attendance", "transcript", "score", "exam")},
    "clinical": {"tables": ("visit", "encounter", "admission", "discharge", "procedure", "lab", "observation")},
    "medical": {"tables": ("visit", "encounter", "admission", "discharge", "procedure", "lab", "observation",
                           "diagnosis", "medication", "prescription")},
    "medication": {"tables": ("medication", "prescription", "drug"), "cols": ("medication", "drug")},
    "prescription": {"tables": ("medication", "prescription", "drug"), "cols": ("medication", "drug")},
    "drug": {"tables": ("medication", "prescription", "drug"), "cols": ("medication", "drug")},
    "note": {"cols": ("note", "notes", "comment", "narrative", "remark")},
    "employment": {"tables": ("employment", "position", "job", "contract", "salary"),
                   "cols": ("salary", "title", "hire", "position")},
    "performance": {"tables": ("review", "appraisal", "evaluation", "rating"), "cols": ("rating", "score")},
    "location": {"cols": ("address", "zip", "zip3", "postal", "city", "latitude", "longitude", "location")},
    "biometric": {"cols": ("fingerprint", "face", "biometric", "retina")},
    "genetic": {"tables": ("genetic", "genome", "gene"), "cols": ("genetic", "genotype")},
}

#: Extra synonym groups (general English, added to :func:`pimento.nl.text.synonyms`).
_GROUPS: tuple[tuple[str, ...], ...] = (
    ("customer", "consumer", "client", "shopper", "buyer"),
    ("employee", "staff", "worker", "personnel", "workforce", "official"),
    ("partner", "vendor", "supplier", "affiliate", "operator", "processor", "third_party",
     "service_provider", "provider"),
    ("advertising", "ad", "ads", "advert", "advertisement", "advertiser", "advertise"),
    ("parent", "guardian"),
    ("child", "minor", "kid"),
    ("researcher", "investigator", "scientist"),
    ("doctor", "physician", "clinician"),
    ("counselor", "counsellor", "counseling", "counselling"),
    ("consent", "consented", "agree", "agreed", "authorization", "authorize", "authorized"),
    ("analytics", "analyst", "analysis", "analytic", "analyze", "analyse"),
    ("marketing", "marketer", "market"),
    ("billing", "bill", "payment", "pay"),
    ("supervise", "supervisor", "supervision", "oversee", "manage", "manager"),
    ("treat", "treating", "treatment"),
    ("enroll", "enrolled", "enrollment", "enrol", "participant", "participate"),
    ("contract", "contracted", "agreement"),
    ("opt", "opted", "optout"),
    ("account", "holder"),
    ("loan", "credit", "borrower", "borrow"),
)


@lru_cache(maxsize=1)
def _extra_index() -> dict[str, frozenset[str]]:
    index: dict[str, set[str]] = {}
    for group in _GROUPS:
        keyset = set()
        for w in group:
            for part in w.split("_"):
                keyset |= {lemma(part), stem(part)}
        keyset |= {lemma(w), stem(w)}
        for key in keyset:
            index.setdefault(key, set()).update(keyset)
    return {k: frozenset(v) for k, v in index.items()}


@lru_cache(maxsize=65536)
def keys(word: str) -> frozenset[str]:
    """Every key a word matches on: lemma, stem, the synonyms of :mod:`pimento.nl.text` and ours."""
    w = word.lower()
    base = {lemma(w), stem(w)}
    out = set(base) | set(synonyms(w))
    extra = _extra_index()
    for b in base:
        out |= extra.get(b, frozenset())
    return frozenset(out)


def same_word(a: str, b: str) -> bool:
    """Do two words mean the same (lemma, stem or synonym)?"""
    return bool(keys(a) & {lemma(b.lower()), stem(b.lower())})


_WORD = re.compile(r"[a-z][a-z0-9]*")


def words(text: str) -> list[str]:
    """Lower-case words of a phrase (hyphens split: "ed-tech" -> ed, tech)."""
    return _WORD.findall(text.lower().replace("'s ", " "))
