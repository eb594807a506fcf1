"""Every page of the web app in a real headless Chromium: what each must show, read from the DOM and
from its screenshot (the header bar, the budget meter), for the analyst's flow and the custodian's."""

from __future__ import annotations

import re

import pytest

from browser_support import CUSTODIAN_TOKEN, read_png, share_of_color
from pimento.demo.hospital import DEMO_QUESTION

HEADER = (0x7A, 0x1F, 0x1F)  # header bar colour in pimento.css
METER = (0x2E, 0x7D, 0x32)  # budget meter fill


def shoot(driver, shots, name: str) -> list[bytes]:
    """Save a screenshot of the page; check it is this app's page (its header bar is drawn); its rows."""
    png = driver.get_screenshot_as_png()
    (shots / f"{name}.png").write_bytes(png)
    width, height, rows = read_png(png, max_rows=120)
    assert width >= 800 and height >= 600, (width, height)
    assert share_of_color(rows, HEADER, y0=2, y1=30) > 0.6, f"{name}: the header bar is not in the screenshot"
    return rows


def text(driver, css: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css).text


def fill(driver, css: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    element = driver.find_element(By.CSS_SELECTOR, css)
    element.clear()
    element.send_keys(value)


def click(driver, css: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, css).click()


def epsilon_left(driver) -> float:
    return float(re.search(r"epsilon left: ([0-9.]+) of", text(driver, "#budget-left")).group(1))


def wait_for_path(driver, path: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.current_url.split("?")[0].endswith(path))


def wait_for_text(driver, css: str, needle: str) -> None:
    """Wait until the element ``css`` of the (re)loaded page holds ``needle`` (a click's page may still be loading)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: needle in d.find_element(By.CSS_SELECTOR, css).text
    )


def sign_in(driver, url: str, secret: str, landing: str) -> None:
    """Sign in afresh (cookies cleared) with ``secret`` (an analyst key or the custodian token) and wait for ``landing``."""
    driver.delete_all_cookies()
    driver.get(url + "/login")
    fill(driver, "#key", secret)
    click(driver, "#sign-in")
    wait_for_path(driver, landing)


def test_the_analysts_flow(browser, server, shots):
    from selenium.webdriver.common.by import By

    url, key, _db = server
    browser.get(url + "/")
    assert browser.current_url.endswith("/login")
    shoot(browser, shots, "1-login")
    assert browser.find_element(By.ID, "key").get_attribute("type") == "password"
    cookies = {c["name"]: c for c in browser.get_cookies()}
    assert cookies["pimento_login"]["httpOnly"] and cookies["pimento_login"]["sameSite"] == "Strict"

    fill(browser, "#key", key)
    click(browser, "#sign-in")
    wait_for_path(browser, "/ask")
    session = {c["name"]: c for c in browser.get_cookies()}["pimento_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and key not in session["value"]
    rows = shoot(browser, shots, "2-ask")
    assert "ann" in text(browser, "#who") and "employee:17" in text(browser, "#who")
    left_before = epsilon_left(browser)
    assert 0 < left_before <= 2.5 and text(browser, "#budget-left").endswith("of 2.5")  # a quarter of the database's 10 (issue 28)
    assert share_of_color(rows, METER, y0=30, y1=120) > 0.01, "the full budget meter is not drawn"
    schema = text(browser, "#catalog-tables")  # the public schema beside the question form
    assert "Patient" in schema and "private" in schema and "pat_id" in text(browser, "#catalog-Patient")

    fill(browser, "#question", DEMO_QUESTION)
    fill(browser, "#epsilon", "1")
    fill(browser, "#delta", "1e-6")
    click(browser, "#preview")
    wait_for_path(browser, "/ask/preview")
    shoot(browser, shots, "3-preview")
    chosen = text(browser, "#chosen-sql")
    assert chosen.startswith("SELECT COUNT") and "Nothing has been spent" in browser.page_source
    assert "±" in text(browser, "#estimate") and "-DP" in text(browser, "#guarantee-preview")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#alternatives tr")) >= 3  # heading + at least two readings
    assert len(browser.find_elements(By.CSS_SELECTOR, "#planner tr")) >= 6  # what each epsilon buys
    assert epsilon_left(browser) == left_before  # still nothing spent
    if browser.find_elements(By.ID, "noise-warning"):  # predicted mostly noise (docs/accuracy.md): the spend needs the box
        click(browser, "#confirm")  # the required box stops the form in the browser itself
        assert browser.current_url.endswith("/ask/preview") and epsilon_left(browser) == left_before
        click(browser, "#accept-noise")

    click(browser, "#confirm")
    wait_for_path(browser, "/ask/confirm")
    shoot(browser, shots, "4-answer")
    value = int(text(browser, "#value"))
    lo, hi = (int(x) for x in re.findall(r"-?\d+", text(browser, "#interval").replace("95%", ""))[:2])
    assert value >= 0 and 0 <= lo <= value <= hi  # clamped at zero, value inside its interval
    assert text(browser, "#answer-sql") == chosen  # the answer is for the query previewed
    assert not browser.find_elements(By.ID, "changed")
    assert "end to end" in text(browser, "#guarantee")
    assert abs(epsilon_left(browser) - (left_before - 1)) < 1e-9, text(browser, "#budget-left")

    click(browser, "#nav-history")
    wait_for_path(browser, "/history")
    shoot(browser, shots, "5-history")
    assert DEMO_QUESTION in text(browser, "#history")

    click(browser, "#logout")
    wait_for_path(browser, "/login")
    browser.get(url + "/ask")
    assert browser.current_url.endswith("/login")  # signed out


def test_the_custodians_pages(browser, server, shots):
    from selenium.webdriver.common.by import By

    url, _key, _db = server
    sign_in(browser, url, CUSTODIAN_TOKEN, "/custodian")
    shoot(browser, shots, "6-custodian")
    assert "ann" in text(browser, "#keys") and "employee:17" in text(browser, "#keys")
    assert "database total" in text(browser, "#caps")
    fill(browser, "#analyst", "bea")
    fill(browser, "#principal", "employee:5")
    click(browser, "#add-key")
    wait_for_text(browser, "#new-key-value", "pmk_")
    shoot(browser, shots, "7-new-key")
    new_key = text(browser, "#new-key-value")
    assert new_key.startswith("pmk_") and "bea" in text(browser, "#keys")
    browser.get(url + "/custodian")
    assert new_key not in browser.page_source  # shown once
    revoke = [e for e in browser.find_elements(By.CSS_SELECTOR, "#keys button") if e.get_attribute("id").startswith("revoke-")]
    revoke[-1].click()
    wait_for_text(browser, "#keys", "revoked")
    click(browser, "#nav-audit")
    wait_for_path(browser, "/custodian/audit")
    shoot(browser, shots, "8-audit")
    assert "released" in text(browser, "#audit") and DEMO_QUESTION in text(browser, "#audit")
    assert "Not for analysts" in browser.page_source


def test_an_analyst_cannot_open_custodian_pages(browser, server):
    from selenium.webdriver.common.by import By

    url, key, _db = server
    sign_in(browser, url, key, "/ask")
    browser.get(url + "/custodian")
    wait_for_path(browser, "/ask")  # sent back to the analyst's own page
    assert not browser.find_elements(By.ID, "keys")
