"""A seeded, synthetic retailer (consumer privacy, a CCPA-like policy) for the CI benchmarks.

:func:`create_retail` writes a DuckDB file and a ``pimento.toml`` beside it. Order items and
payments reach their customer only through ``Orders.customer_id`` (no direct foreign key to
``Customer``), the case the policy language's subject paths exist for. The policy is
:func:`retail_policy_path` (``example:retail_ccpa``); its natural-language text is
:func:`retail_policy_text_path`. Nothing in it is real.

Schema (primary keys first):

* ``Customer(customer_id, name, email, zip3, birth_year, opted_out_of_sale)``
* ``Employee(employee_id, role)``, role in support, marketing, analyst, billing;
  ``Partner(partner_id, kind)``, kind in billing_agent, ad_network, data_broker
* ``Product(product_id, name, category)`` (public catalog; category ``pharmacy`` is
  sensitive: buying it reveals health information)
* ``Orders(order_id, customer_id, order_date, channel)``
* ``OrderItem(order_id, line_no, product_id, qty, price)`` -> ``Orders``, ``Product``
* ``Payment(payment_id, order_id, method, amount, card_last4)`` -> ``Orders``
* ``SupportCase(case_id, customer_id, agent_id)``
* ``Consent(customer_id, purpose, granted)``: the customer's consent per purpose
"""

from __future__ import annotations

import os
import random
from datetime import date, timedelta
from typing import Any

from pimento.demo._generate import GeneratedDatabase, check_size, fresh_target, text_of_policy, toml_names, write_tables

__all__ = ["RETAIL_TABLES", "RetailInfo", "create_retail", "retail_policy_path", "retail_policy_text_path"]

RETAIL_TABLES = ("Customer", "Employee", "Partner", "Product", "Orders", "OrderItem", "Payment", "SupportCase",
                 "Consent")
_PUBLIC = ("Product",)

_DDL = [
    "CREATE TABLE Customer (customer_id INTEGER PRIMARY KEY, name VARCHAR, email VARCHAR, zip3 VARCHAR, "
    "birth_year INTEGER, opted_out_of_sale BOOLEAN)",
    "CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, role VARCHAR)",
    "CREATE TABLE Partner (partner_id INTEGER PRIMARY KEY, kind VARCHAR)",
    "CREATE TABLE Product (product_id INTEGER PRIMARY KEY, name VARCHAR, category VARCHAR)",
    "CREATE TABLE Orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id), "
    "order_date DATE, channel VARCHAR)",
    "CREATE TABLE OrderItem (order_id INTEGER REFERENCES Orders(order_id), line_no INTEGER, "
    "product_id INTEGER REFERENCES Product(product_id), qty INTEGER, price DECIMAL(10, 2), PRIMARY KEY (order_id, line_no))",
    "CREATE TABLE Payment (payment_id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES Orders(order_id), "
    "method VARCHAR, amount DECIMAL(10, 2), card_last4 VARCHAR)",
    "CREATE TABLE SupportCase (case_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES Customer(customer_id), "
    "agent_id INTEGER REFERENCES Employee(employee_id))",
    "CREATE TABLE Consent (customer_id INTEGER REFERENCES Customer(customer_id), purpose VARCHAR, granted BOOLEAN, "
    "PRIMARY KEY (customer_id, purpose))",
]

_PRODUCTS = [
    ("running shoes", "apparel"), ("rain jacket", "apparel"), ("wool socks", "apparel"), ("t-shirt", "apparel"),
    ("coffee beans", "grocery"), ("olive oil", "grocery"), ("pasta", "grocery"), ("green tea", "grocery"),
    ("headphones", "electronics"), ("phone charger", "electronics"), ("e-reader", "electronics"),
    ("pregnancy test", "pharmacy"), ("insulin pen needles", "pharmacy"), ("allergy tablets", "pharmacy"),
    ("blood pressure monitor", "pharmacy"), ("board game", "toys"), ("puzzle", "toys"),
]
_FIRST = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jia", "Kai", "Lena", "Milo", "Nora"]
_LAST = ["Ng", "Silva", "Okafor", "Berg", "Rossi", "Kim", "Novak", "Haddad", "Lund", "Price"]
#: purposes a customer may consent to (the policy's purpose names)
CONSENT_PURPOSES = ("marketing", "profiling", "ads", "analytics")


#: what :func:`create_retail` returns (path, config_path, rows per table)
RetailInfo = GeneratedDatabase


def retail_policy_path() -> str:
    """The structured CCPA-like policy of the retailer (YAML)."""
    from pimento.policy import example_policy_path

    return example_policy_path("retail_ccpa")


def retail_policy_text_path() -> str:
    """The retailer's policy in natural language (one sentence per norm)."""
    return text_of_policy(retail_policy_path())


def create_retail(path: str | os.PathLike[str], *, seed: int = 0, size: int = 500, overwrite: bool = False) -> RetailInfo:
    """Write the retailer database (``size`` customers; everything else scales with it) to ``path``.

    Same ``(seed, size)``, same database. Raises UserError on a bad size or an existing file
    (without ``overwrite``).
    """
    check_size(size, 5, "the retailer", "customers")
    target = fresh_target(path, overwrite=overwrite)
    rng = random.Random(seed)
    n_emp = max(8, size // 25)
    employees = [(i, ("support", "support", "marketing", "analyst", "billing")[i % 5]) for i in range(1, n_emp + 1)]
    partners = [(i, ("billing_agent", "ad_network", "data_broker")[i % 3]) for i in range(1, max(3, size // 100) + 4)]
    products = [(i, name, cat) for i, (name, cat) in enumerate(_PRODUCTS, start=1)]
    customers = []
    for c in range(1, size + 1):
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        customers.append((c, name, f"{name.split()[0].lower()}{c}@example.org", f"{rng.randint(100, 999)}",
                          rng.randint(1940, 2006), rng.random() < 0.25))
    orders, items, payments = [], [], []
    start = date(2023, 1, 1)
    oid = 0
    pid = 0
    for c in range(1, size + 1):
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            oid += 1
            orders.append((oid, c, start + timedelta(days=rng.randint(0, 500)), rng.choice(("web", "store", "app"))))
            total = 0.0
            for line in range(1, rng.randint(1, 3) + 1):
                prod = rng.choice(products)
                qty = rng.randint(1, 3)
                price = round(rng.uniform(2, 120), 2)
                total += qty * price
                items.append((oid, line, prod[0], qty, price))
            pid += 1
            method = rng.choice(("card", "card", "gift", "paypal"))
            payments.append((pid, oid, method, round(total, 2),
                             f"{rng.randint(0, 9999):04d}" if method == "card" else None))
    supports = [e for e, r in employees if r == "support"]
    cases = [(i, rng.randint(1, size), rng.choice(supports)) for i in range(1, size // 3 + 2)]
    consents = sorted({(c, p, rng.random() < 0.7) for c in range(1, size + 1) for p in CONSENT_PURPOSES
                       if rng.random() < 0.35}, key=lambda x: (x[0], x[1]))
    seen: set[tuple[int, str]] = set()
    first_per_purpose = []  # one consent row per (customer, purpose): the first in sorted order
    for x in consents:
        if (x[0], x[1]) not in seen:
            seen.add((x[0], x[1]))
            first_per_purpose.append(x)
    consents = first_per_purpose
    data: dict[str, list[tuple[Any, ...]]] = {
        "Customer": customers, "Employee": employees, "Partner": partners, "Product": products, "Orders": orders,
        "OrderItem": items, "Payment": payments, "SupportCase": cases, "Consent": consents,
    }
    write_tables(target, _DDL, RETAIL_TABLES, data)
    config = target.parent / "pimento.toml"
    private = toml_names(RETAIL_TABLES, leave_out=_PUBLIC)
    config.write_text(
        "# Written by pimento.demo.retail.create_retail: a synthetic retailer (docs/contextual-integrity.md).\n"
        f'[database]\npath = "{target.name}"\n\n[privacy]\nprivate = [{private}]\npublic = ["Product"]\n'
        'root = "Customer"\n\n[[constraints.functional_dependencies]]\nlhs = "Product.product_id"\n'
        'rhs = "Product.category"\n',
        encoding="utf-8",
    )
    return RetailInfo(target, config, {t: len(data[t]) for t in RETAIL_TABLES})
