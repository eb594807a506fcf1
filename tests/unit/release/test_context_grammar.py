"""Issue 23, finding 8: one grammar for contexts (pimento.release.request.Context.parse / context_value).
Values are verbatim: surrounding blanks and control characters are refused, never stripped; text and
dict forms accept exactly the same values."""

from __future__ import annotations

import random

import pytest

from pimento.errors import ModeError
from pimento.release.request import Context, context_value

parse_context = Context.parse


def test_values_are_verbatim_and_names_are_forgiving():
    spec = parse_context("sender=employee:1, Recipient=researcher:2,purpose=research,")
    assert spec.to_dict() == {"sender": "employee:1", "recipient": "researcher:2", "purpose": "research"}


@pytest.mark.parametrize("text", [
    "sender=employee:1,recipient=employee:2,purpose=marketing\t",   # finding 8
    "sender=employee:1,recipient=employee:2,purpose=marketing ",
    "sender= employee:1,recipient=employee:2,purpose=marketing",
    "sender=employee:1 ,recipient=employee:2,purpose=marketing",
    "sender=employee:1,recipient=employee:2\n,purpose=marketing",
    "sender=employee:1,recipient=employee:2,purpose=mark\x00eting",
    "sender=employee:1,recipient=employee:2,purpose=mark\u200beting",  # a format character
    "sender=employee:1,recipient=employee:2,purpose=a=b",
    "sender=employee:1,sender=employee:3,recipient=employee:2,purpose=p",
])
def test_refused_not_stripped(text):
    with pytest.raises(ModeError) as caught:
        parse_context(text)
    assert "marketing" not in caught.value.message  # the value is not echoed


def test_text_and_dict_forms_agree():
    rng = random.Random(23)
    alphabet = ["a", "b", ":", "1", " ", "\t", "\n", "\x00", "=", ",", "é", "\u00a0", "_"]
    for _ in range(2000):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        as_dict = {"sender": "employee:1", "recipient": "employee:2", "purpose": value}
        try:
            expected = parse_context(as_dict).purpose
        except ModeError:
            expected = None
        if expected is not None:  # an accepted value reads back the same from the text form, verbatim
            assert parse_context(f"sender=employee:1,recipient=employee:2,purpose={value}").purpose == value == expected
            assert value == value.strip() and "," not in value and "=" not in value


def test_context_value_is_the_rule():
    assert context_value("purpose", "treatment") == "treatment"
    for bad in ("", " treatment", "treatment\r", None, 3, "a,b"):
        with pytest.raises(ModeError):
            context_value("purpose", bad)
