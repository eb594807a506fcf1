"""Issue 28, item 4, in a real headless Chromium: the SQL form beside the question form (free preview, then
the release on confirmation), the budget meter saying which cap binds, the history's mode column, and the
API reference at /docs (no script, rendered from /openapi.json)."""

from __future__ import annotations

from test_pages import click, epsilon_left, fill, shoot, sign_in, text, wait_for_path

COUNT = "SELECT COUNT(*) FROM Patient"


def test_the_sql_form_previews_then_spends_and_the_meter_says_which_cap_binds(browser, server, shots):
    from selenium.webdriver.common.by import By

    url, key, _db = server
    sign_in(browser, url, key, "/ask")
    assert "your own cap binds" in text(browser, "#budget-binds")
    left_before = epsilon_left(browser)
    fill(browser, "#sql", COUNT)
    fill(browser, "#sql-epsilon", "0.5")
    fill(browser, "#sql-delta", "")
    click(browser, "#sql-preview")
    wait_for_path(browser, "/sql/preview")
    shoot(browser, shots, "9-sql-preview")
    assert "Nothing has been spent" in browser.page_source and text(browser, "#preview-sql").startswith("SELECT COUNT")
    assert "±" in text(browser, "#estimate") and "answer" in text(browser, "#synthetic-answer")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#planner tr")) >= 6
    assert epsilon_left(browser) == left_before  # nothing spent
    click(browser, "#sql-confirm")
    wait_for_path(browser, "/sql/confirm")
    shoot(browser, shots, "10-sql-answer")
    assert int(text(browser, "#value")) >= 0 and "95% interval" in text(browser, "#interval")
    assert abs(epsilon_left(browser) - (left_before - 0.5)) < 1e-9
    click(browser, "#nav-history")
    wait_for_path(browser, "/history")
    assert "dp" in [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#history td.mode")]


def test_the_api_reference_page(browser, server, shots):
    from selenium.webdriver.common.by import By

    url, _key, _db = server
    browser.get(url + "/redoc")
    wait_for_path(browser, "/docs")
    shoot(browser, shots, "11-api-docs")
    assert "Pimento API" in text(browser, "#api-title")
    assert not browser.find_elements(By.TAG_NAME, "script")
    assert "AnalystKey" in text(browser, "#post--v1-sql-preview")
    click(browser, "#openapi-link")
    wait_for_path(browser, "/openapi.json")
