"""Comparison words before and after a literal: which operator ("more than" ``>``) and negation ("not")."""

from __future__ import annotations

from pimento.nl.text import Token


_GT = ("more than", "greater than", "larger than", "bigger than", "higher than", "over", "above", "after",
       "exceeding", "exceeds", "older than", "heavier than", "taller than", "longer than", "later than", "beyond",
       "newer than", "more", "greater", "higher", "larger", "bigger", "older", "heavier", "taller", "longer")  # fmt: skip
_LT = ("less than", "fewer than", "smaller than", "lower than", "below", "under", "before", "younger than",
       "lighter than", "shorter than", "earlier than", "cheaper than", "prior to", "less", "fewer", "younger",
       "smaller", "lower", "lighter", "shorter", "earlier", "cheaper")  # fmt: skip
_GE = ("at least", "no less than", "not less than", "or more", "or above", "or greater", "or older", "or later",
       "or after", "or higher", "or over", "or larger", "or bigger", "or longer", "or heavier", "or taller", "or newer",
       "or more recent")  # fmt: skip
_LE = ("at most", "no more than", "not more than", "or less", "or fewer", "or below", "or younger", "or earlier", "up to",
       "or before", "or lower", "or under", "or smaller", "or shorter", "or cheaper", "or lighter")  # fmt: skip
#: words before a literal that ask for a substring match ("a location that contains NY")
_LIKE_CUES = ("contain", "contains", "containing", "include", "includes", "including", "like", "substring", "word",
              "letter", "phrase")  # fmt: skip
_NEG = ("not", "n't", "other than", "except", "excluding", "besides", "never", "without", "neither", "nor")


def _phrase_before(tokens: list[Token], i: int, width: int = 3) -> str:
    words = [t.lower for t in tokens[max(0, i - width) : i] if t.kind in ("word", "punct")]
    return " ".join(w for w in words if w not in (",",))


def _phrase_after(tokens: list[Token], i: int, width: int = 2) -> str:
    return " ".join(t.lower for t in tokens[i + 1 : i + 1 + width] if t.kind == "word")


def _operator(tokens: list[Token], i: int) -> str:
    after = _phrase_after(tokens, i)
    if i + 3 < len(tokens) and tokens[i + 3].kind in ("number", "quoted"):
        after = ""  # "after 2013 or before 2008": "or before" starts the next comparison
    for phrase in _GE:
        if after.startswith(phrase):
            return ">="
    for phrase in _LE:
        if after.startswith(phrase):
            return "<="
    wide = " ".join(w for w in _phrase_before(tokens, i, 7).split() if any(ch.isalnum() for ch in w))
    if wide.endswith("or equal to") or wide.endswith("or equal"):
        # "larger than or equal to 180": the comparative sits beyond the usual window
        head = wide.rsplit(" or equal", 1)[0].split()[-3:]
        if any(w in ("greater", "larger", "more", "higher", "bigger", "above", "over", "later", "older") for w in head):
            return ">="
        if any(w in ("less", "smaller", "fewer", "lower", "below", "under", "earlier", "younger") for w in head):
            return "<="
    # a comparative before another literal belongs to that one ("above 3000 in year 2001")
    lo, cut = max(0, i - 4), False
    for k in range(i - 1, lo - 1, -1):
        if tokens[k].kind in ("number", "quoted"):
            lo, cut = k + 1, True
            break
    before = _phrase_before(tokens, i, i - lo)
    # the phrase ending nearest the number wins, the longer one on a tie ("in or after" is >=,
    # not the "after" inside it)
    best, best_pos = "=", (-1, 0)
    for ops, op in ((_GE, ">="), (_LE, "<="), (_GT, ">"), (_LT, "<")):
        for phrase in ops:
            pos = (" " + before + " ").rfind(" " + phrase + " ")
            if pos == 0 and cut and phrase.startswith("or "):
                continue  # "2013 or before 2008": the other number's postfix, not this one's
            if pos >= 0 and (pos + len(phrase), len(phrase)) > best_pos:
                best, best_pos = op, (pos + len(phrase), len(phrase))
    if best_pos[0] >= 0:
        return best
    # a generic comparative "...er than N"
    if i >= 2 and tokens[i - 1].lower == "than" and tokens[i - 2].lower.endswith("er"):
        return ">"
    return "="


def _negated(tokens: list[Token], i: int) -> bool:
    before = " " + _phrase_before(tokens, i, 3) + " "
    return any(f" {n} " in before for n in _NEG) or "n't" in before
