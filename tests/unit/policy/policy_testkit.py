"""Helpers for the policy tests: a random tiny database + grounding, in SQL and in Python."""

from __future__ import annotations

import random
from typing import Any

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.policy.model import policy_from_dict
from pimento.policy.reference import RefCondition, RefLocation, ReferencePolicy, RefRole

DDL = {
    "Agent": 'CREATE TABLE "Agent" (aid INTEGER PRIMARY KEY, kind TEXT)',
    "Person": 'CREATE TABLE "Person" (pid INTEGER PRIMARY KEY, grp TEXT)',
    "Code": 'CREATE TABLE "Code" (code TEXT PRIMARY KEY, flag TEXT)',
    "Rec": 'CREATE TABLE "Rec" (rid INTEGER PRIMARY KEY, pid INTEGER REFERENCES "Person"(pid), val TEXT, '
    'code TEXT REFERENCES "Code"(code))',
    "Edge": 'CREATE TABLE "Edge" (src INTEGER REFERENCES "Agent"(aid), dst INTEGER REFERENCES "Agent"(aid), '
    "PRIMARY KEY (src, dst))",
    "Link": 'CREATE TABLE "Link" (aid INTEGER REFERENCES "Agent"(aid), pid INTEGER REFERENCES "Person"(pid), '
    "PRIMARY KEY (aid, pid))",
    # reaches its subject only through Rec (subject: via rid -> Rec.pid)
    "Note": 'CREATE TABLE "Note" (nid INTEGER PRIMARY KEY, rid INTEGER REFERENCES "Rec"(rid), txt TEXT)',
    # a multi-column key path: via (aid, pid) -> Link.pid; and multi-column FK implication
    "Tag": 'CREATE TABLE "Tag" (tid INTEGER PRIMARY KEY, aid INTEGER, pid INTEGER, tag TEXT, '
    'FOREIGN KEY (aid, pid) REFERENCES "Link"(aid, pid))',
    # per-purpose consent of a person: a condition view with a purpose column
    "Consent": 'CREATE TABLE "Consent" (pid INTEGER REFERENCES "Person"(pid), purpose TEXT, PRIMARY KEY (pid, purpose))',
}
#: The same tables without constraints (the reference's authorized database has NULL keys).
PLAIN_DDL = {
    "Agent": 'CREATE TABLE "Agent" (aid INTEGER, kind TEXT)',
    "Person": 'CREATE TABLE "Person" (pid INTEGER, grp TEXT)',
    "Code": 'CREATE TABLE "Code" (code TEXT, flag TEXT)',
    "Rec": 'CREATE TABLE "Rec" (rid INTEGER, pid INTEGER, val TEXT, code TEXT)',
    "Edge": 'CREATE TABLE "Edge" (src INTEGER, dst INTEGER)',
    "Link": 'CREATE TABLE "Link" (aid INTEGER, pid INTEGER)',
    "Note": 'CREATE TABLE "Note" (nid INTEGER, rid INTEGER, txt TEXT)',
    "Tag": 'CREATE TABLE "Tag" (tid INTEGER, aid INTEGER, pid INTEGER, tag TEXT)',
    "Consent": 'CREATE TABLE "Consent" (pid INTEGER, purpose TEXT)',
}
COLUMNS = {
    "Agent": ["aid", "kind"],
    "Person": ["pid", "grp"],
    "Code": ["code", "flag"],
    "Rec": ["rid", "pid", "val", "code"],
    "Edge": ["src", "dst"],
    "Link": ["aid", "pid"],
    "Note": ["nid", "rid", "txt"],
    "Tag": ["tid", "aid", "pid", "tag"],
    "Consent": ["pid", "purpose"],
}
KEYS = {"Agent": ("aid",), "Person": ("pid",), "Code": ("code",), "Rec": ("rid",), "Edge": ("src", "dst"),
        "Link": ("aid", "pid"), "Note": ("nid",), "Tag": ("tid",), "Consent": ("pid", "purpose")}
ORDER = ["Agent", "Person", "Code", "Rec", "Edge", "Link", "Note", "Tag", "Consent"]
#: declared purposes of a context (p1 includes p3: norms about p1 apply to p3)
CONTEXT_PURPOSES = ["p1", "p1-alias", "p2", "p3"]

ROLES = ["any", "any_agent", "kind_a", "kind_b"]
SUBJECT_ROLES = ["any", "person_all", "person_g1"]
DATA = ["d_val", "d_code", "d_pid", "d_grp", "d_flag", "d_edge", "d_note", "d_tag"]
ATOMS = ["link_s", "link_r", "edge", "reach", "reach_subj", "consent"]
QUERIES = [
    "SELECT * FROM Rec",
    "SELECT rid, val, code FROM Rec WHERE val = 'v1'",
    "SELECT r.val, c.flag FROM Rec r JOIN Code c ON r.code = c.code",
    "SELECT code, COUNT(*) AS n, COUNT(val) AS m FROM Rec GROUP BY code",
    "SELECT COUNT(*) FROM Rec",
    "SELECT p.grp, COUNT(r.rid) AS n FROM Person p LEFT JOIN Rec r ON r.pid = p.pid GROUP BY p.grp",
    "SELECT * FROM Code",
    "WITH x AS (SELECT pid, val FROM Rec) SELECT * FROM x WHERE pid IS NOT NULL",
    "SELECT src, dst FROM Edge UNION SELECT aid, pid FROM Link",
    "SELECT val FROM Rec WHERE code IN (SELECT code FROM Code WHERE flag = 'x')",
    "SELECT n.txt, r.val FROM Note n JOIN Rec r ON r.rid = n.rid",
    "SELECT * FROM Note",
    "SELECT tid, aid, pid, tag FROM Tag",
    "SELECT l.aid, t.tag FROM Link l JOIN Tag t ON t.aid = l.aid AND t.pid = l.pid",
]


def random_rows(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    n_agents, n_persons = rng.randint(1, 5), rng.randint(1, 4)
    agents = [{"aid": i, "kind": rng.choice(["a", "b", None])} for i in range(1, n_agents + 1)]
    persons = [{"pid": 100 + i, "grp": rng.choice(["g1", "g2"])} for i in range(n_persons)]
    codes = [{"code": c, "flag": rng.choice(["x", "y", None])} for c in ("c1", "c2", "c3")[: rng.randint(1, 3)]]
    recs = [
        {
            "rid": i,
            "pid": rng.choice([p["pid"] for p in persons] + [None]),
            "val": rng.choice(["v1", "v2", None]),
            "code": rng.choice([c["code"] for c in codes] + [None]),
        }
        for i in range(1, rng.randint(0, 7) + 1)
    ]
    ids = [a["aid"] for a in agents]
    edges = sorted({(rng.choice(ids), rng.choice(ids)) for _ in range(rng.randint(0, 6))})
    links = sorted({(rng.choice(ids), rng.choice([p["pid"] for p in persons])) for _ in range(rng.randint(0, 6))})
    rids = [r["rid"] for r in recs]
    notes = [{"nid": i, "rid": rng.choice(rids + [None]) if rids else None, "txt": rng.choice(["n1", "n2"])}
             for i in range(1, rng.randint(0, 4) + 1)]
    tags = [{"tid": i, "aid": a, "pid": p, "tag": rng.choice(["t1", "t2"])}
            for i, (a, p) in enumerate(rng.sample(links, min(len(links), rng.randint(0, 3))), start=1)]
    if tags and rng.random() < 0.3:
        tags.append({"tid": len(tags) + 1, "aid": None, "pid": persons[0]["pid"], "tag": "t3"})
    consents = sorted({(rng.choice([p["pid"] for p in persons]), rng.choice(["p1", "p2", "p3"]))
                       for _ in range(rng.randint(0, 4))})
    return {
        "Agent": agents,
        "Person": persons,
        "Code": codes,
        "Rec": recs,
        "Edge": [{"src": s, "dst": d} for s, d in edges],
        "Link": [{"aid": a, "pid": p} for a, p in links],
        "Note": notes,
        "Tag": tags,
        "Consent": [{"pid": p, "purpose": q} for p, q in consents],
    }


def make_engine(rows: dict[str, list[dict[str, Any]]]) -> DuckDBEngine:
    """A fresh in-memory DuckDB with ``rows``; tables ``rows`` lacks are added to it, empty."""
    for rel in ORDER:
        rows.setdefault(rel, [])
    engine = DuckDBEngine(":memory:", read_only=False)
    for rel in ORDER:
        engine.execute(DDL[rel])
        for r in rows[rel]:
            cols = COLUMNS[rel]
            engine.execute(f'INSERT INTO "{rel}" VALUES ({", ".join("?" for _ in cols)})', [r[c] for c in cols])
    return engine


def random_condition(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.random()
    if depth >= 2 or choice < 0.45:
        return rng.choice(ATOMS + ATOMS + ["true", "false", {"purpose": "p1"}, {"recipient_role": "kind_a"},
                                           {"subject_role": "person_g1"}, {"sender_role": "kind_b"}])
    if choice < 0.6:
        return {"not": random_condition(rng, depth + 1)}
    key = "all" if choice < 0.8 else "any"
    return {key: [random_condition(rng, depth + 1) for _ in range(rng.randint(1, 3))]}


def random_norms(rng: random.Random, *, subject_denials: bool = False) -> list[dict[str, Any]]:
    """Random norms. With ``subject_denials``: a broad permit first, then denials that test the
    subject (its role, or a condition on it), so that cells without a resolvable subject (Code,
    Edge, records with a NULL person) meet prohibitions that cannot be evaluated on them."""
    if subject_denials:
        norms: list[dict[str, Any]] = [{"id": "N1", "sign": "permit", "data": list(DATA), "purpose": rng.choice(["any", "p1"])}]
        for i in range(rng.randint(1, 3)):
            n: dict[str, Any] = {"id": f"N{i + 2}", "sign": "deny", "data": rng.sample(DATA, rng.randint(1, 3)),
                                 "subject": rng.choice(SUBJECT_ROLES), "purpose": rng.choice(["any", "any", "p1", "p2", "p3"])}
            if n["subject"] == "any" or rng.random() < 0.5:
                n["condition"] = rng.choice([{"subject_role": "person_g1"}, "link_s", "reach_subj",
                                             {"not": {"subject_role": "person_g1"}}, random_condition(rng)])
            norms.append(n)
        return norms
    norms = []
    permitted: list[str] = []
    for i in range(rng.randint(1, 4)):
        sign = "permit" if (i == 0 or rng.random() < 0.5) else "deny"
        data = rng.sample(DATA, rng.randint(1, 3))
        if sign == "deny" and permitted and rng.random() < 0.7:
            # a prohibition only shows where something is permitted: mostly overlap the permits
            data = sorted(set(rng.sample(permitted, min(len(permitted), rng.randint(1, 2)))) | set(data[:1]))
        if sign == "deny" and rng.random() < 0.35 and "d_flag" not in data:
            data.append("d_flag")  # implied onto Code.code (FD) and Rec.code (FK): exercises implication
        if sign == "permit":
            permitted += [d for d in data if d not in permitted]
        n: dict[str, Any] = {
            "id": f"N{i + 1}",
            "sign": sign,
            "sender": rng.choice(ROLES + ["any"]),
            "recipient": rng.choice(ROLES + ["any"]),
            "subject": rng.choice(SUBJECT_ROLES),
            "data": data,
            "purpose": rng.choice(["any", "any", "p1", "p2", "p3"]),
        }
        # permits hold often enough that prohibitions and implications have something to remove
        if rng.random() < (0.5 if sign == "permit" else 0.8):
            n["condition"] = random_condition(rng)
        if sign == "deny" and rng.random() < 0.3:
            n["when"] = random_condition(rng)
        norms.append(n)
    return norms


REACH_SQL = (
    "WITH RECURSIVE r(sender, recipient) AS (SELECT src, dst FROM Edge UNION "
    "SELECT r.sender, e.dst FROM r JOIN Edge AS e ON e.src = r.recipient) SELECT sender, recipient FROM r"
)
REACH_SUBJ_SQL = (
    "WITH RECURSIVE r(a, b) AS (SELECT aid, aid FROM Agent UNION "
    "SELECT r.a, e.dst FROM r JOIN Edge AS e ON e.src = r.b) "
    "SELECT r.a AS recipient, l.pid AS subject FROM r JOIN Link AS l ON l.aid = r.b"
)


def policy_dict(norms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": 1,
        "name": "random",
        "grounding": {
            "principals": {"agent": {"relation": "Agent", "key": "aid"}, "person": {"relation": "Person", "key": "pid"}},
            "subject_principal": "person",
            "roles": {
                "any_agent": {"principal": "agent"},
                "kind_a": {"principal": "agent", "where": "kind = 'a'"},
                "kind_b": {"principal": "agent", "where": "kind = 'b'"},
                "person_all": {"principal": "person"},
                "person_g1": {"principal": "person", "where": "grp = 'g1'"},
            },
            "data_types": {
                "d_val": {"locations": [{"relation": "Rec", "attribute": "val"}]},
                "d_code": {"locations": [{"relation": "Rec", "attribute": "code"}]},
                "d_pid": {"locations": [{"relation": "Rec", "attribute": "pid"},
                                        {"relation": "Person", "attribute": "pid"}]},
                "d_grp": {"locations": [{"relation": "Person", "attribute": "grp"},
                                        {"relation": "Rec", "attribute": "rid", "where": "val = 'v1'"}]},
                "d_flag": {"locations": [{"relation": "Code", "attribute": "flag", "where": "flag = 'x'"}]},
                "d_edge": {"locations": [{"relation": "Edge", "attribute": "src"}, {"relation": "Edge", "attribute": "dst"},
                                         {"relation": "Link", "attribute": "aid"},
                                         {"relation": "Link", "attribute": "pid", "where": "aid > 1"}]},
                "d_note": {"locations": [{"relation": "Note", "attribute": "txt"},
                                         {"relation": "Note", "attribute": "nid", "where": "txt = 'n1'"}]},
                "d_tag": {"locations": [{"relation": "Tag", "attribute": "tag",
                                         "subject": "via (aid, pid) -> Link.pid"}]},
            },
            "subjects": {"Note": "via rid -> Rec.pid"},
            "purposes": {"p1": {"values": ["p1", "p1-alias"], "includes": ["p3"]}, "p2": {"values": ["p2"]},
                         "p3": {"values": ["p3"]}},
            "conditions": {
                "link_s": {"sql": "SELECT aid AS sender, pid AS subject FROM Link", "principals": {"sender": "agent"}},
                "link_r": {"sql": "SELECT aid AS recipient, pid AS subject FROM Link", "principals": {"recipient": "agent"}},
                "edge": {"sql": "SELECT src AS sender, dst AS recipient FROM Edge",
                         "principals": {"sender": "agent", "recipient": "agent"}},
                "reach": {"sql": REACH_SQL, "principals": {"sender": "agent", "recipient": "agent"}},
                "reach_subj": {"sql": REACH_SUBJ_SQL, "principals": {"recipient": "agent"}},
                "consent": {"sql": "SELECT pid AS subject, purpose FROM Consent"},
            },
            "dependencies": ["Code.code -> Code.flag"],
        },
        "norms": norms,
    }


def _closure(edges: set[tuple[Any, Any]]) -> set[tuple[Any, Any]]:
    closure = set(edges)
    while True:
        new = {(a, d) for (a, b) in closure for (c, d) in edges if b == c} - closure
        if not new:
            return closure
        closure |= new


def reference(norms_policy: Any) -> ReferencePolicy:
    """The same grounding, written in Python (no SQL)."""

    def reach_subj(db: Any) -> list[dict[str, Any]]:
        edges = {(e["src"], e["dst"]) for e in db["Edge"]}
        reach = _closure(edges) | {(a["aid"], a["aid"]) for a in db["Agent"]}
        return [{"recipient": a, "subject": link["pid"]} for (a, b) in reach for link in db["Link"] if link["aid"] == b]

    def note_subject(row: dict[str, Any], db: Any) -> Any:
        found = [r["pid"] for r in db["Rec"] if row["rid"] is not None and r["rid"] == row["rid"]]
        return found[0] if len(found) == 1 else None

    def tag_subject(row: dict[str, Any], db: Any) -> Any:
        found = [r["pid"] for r in db["Link"] if (r["aid"], r["pid"]) == (row["aid"], row["pid"])
                 and None not in (row["aid"], row["pid"])]
        return found[0] if len(found) == 1 else None

    return ReferencePolicy(
        principals={"agent": ("Agent", "aid"), "person": ("Person", "pid")},
        subject_kind="person",
        roles={
            "any_agent": RefRole("agent"),
            "kind_a": RefRole("agent", lambda r: r["kind"] == "a"),
            "kind_b": RefRole("agent", lambda r: r["kind"] == "b"),
            "person_all": RefRole("person"),
            "person_g1": RefRole("person", lambda r: r["grp"] == "g1"),
        },
        conditions={
            "link_s": RefCondition(("sender", "subject"), {"sender": "agent"},
                                   lambda db: [{"sender": r["aid"], "subject": r["pid"]} for r in db["Link"]]),
            "link_r": RefCondition(("recipient", "subject"), {"recipient": "agent"},
                                   lambda db: [{"recipient": r["aid"], "subject": r["pid"]} for r in db["Link"]]),
            "edge": RefCondition(("sender", "recipient"), {"sender": "agent", "recipient": "agent"},
                                 lambda db: [{"sender": r["src"], "recipient": r["dst"]} for r in db["Edge"]]),
            "reach": RefCondition(("sender", "recipient"), {"sender": "agent", "recipient": "agent"},
                                  lambda db: [{"sender": a, "recipient": b}
                                              for a, b in _closure({(r["src"], r["dst"]) for r in db["Edge"]})]),
            "reach_subj": RefCondition(("recipient", "subject"), {"recipient": "agent"}, reach_subj),
            "consent": RefCondition(("subject", "purpose"), {},
                                    lambda db: [{"subject": r["pid"], "purpose": r["purpose"]} for r in db["Consent"]]),
        },
        data_types={
            "d_val": [RefLocation("Rec", "val", subject="pid")],
            "d_code": [RefLocation("Rec", "code", subject="pid")],
            "d_pid": [RefLocation("Rec", "pid", subject="pid"), RefLocation("Person", "pid", subject="pid")],
            "d_grp": [RefLocation("Person", "grp", subject="pid"),
                      RefLocation("Rec", "rid", lambda r: r["val"] == "v1", subject="pid")],
            "d_flag": [RefLocation("Code", "flag", lambda r: r["flag"] == "x")],
            "d_edge": [RefLocation("Edge", "src"), RefLocation("Edge", "dst"), RefLocation("Link", "aid", subject="pid"),
                       RefLocation("Link", "pid", lambda r: r["aid"] > 1, subject="pid")],
            "d_note": [RefLocation("Note", "txt", subject=note_subject),
                       RefLocation("Note", "nid", lambda r: r["txt"] == "n1", subject=note_subject)],
            "d_tag": [RefLocation("Tag", "tag", subject=tag_subject)],
        },
        purposes={"p1": ["p1", "p1-alias"], "p2": ["p2"], "p3": ["p3"]},
        purpose_parents={"p3": ["p1"]},
        subjects={"Note": note_subject},
        norms=list(norms_policy.norms),
        keys=KEYS,
        columns=COLUMNS,
        dependencies=[("Code", "code", "flag")],
        foreign_keys=[("Rec", "pid", "Person", "pid"), ("Rec", "code", "Code", "code"), ("Edge", "src", "Agent", "aid"),
                      ("Edge", "dst", "Agent", "aid"), ("Link", "aid", "Agent", "aid"), ("Link", "pid", "Person", "pid"),
                      ("Note", "rid", "Rec", "rid"), ("Tag", ("aid", "pid"), "Link", ("aid", "pid")),
                      ("Consent", "pid", "Person", "pid")],
    )


def load(norms: list[dict[str, Any]]) -> Any:
    return policy_from_dict(policy_dict(norms))


def sort_rows(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=lambda r: tuple((v is None, str(v)) for v in r))
