"""The custodian's policy review page (issue 27) in a real headless Chromium, over `pimento serve`.

The school draft of tests/policy_review_support.py: the custodian opens Policy review from the header,
edits K2.1 by ticking one column (unticking the proposal's others), drops K3.1 and saves; the page
names the reviewed file, which holds exactly that column. An analyst signed in gets 403.
"""

from __future__ import annotations

import pytest
import yaml

from browser_support import CUSTODIAN_TOKEN
from policy_review_support import REVIEWED, school_with_draft


@pytest.fixture(scope="module")
def school_server(tmp_path_factory):
    """`pimento serve` over the school database with its draft; (url, analyst key, folder)."""
    from benchmarks.service_load import ServerProcess

    from pimento.service.deployment import Deployment

    folder = tmp_path_factory.mktemp("review_browser")
    db = school_with_draft(folder)
    _entry, key = Deployment(db).add_key("ann", "staff:2")
    with ServerProcess(db, env={"PIMENTO_CUSTODIAN_TOKEN": CUSTODIAN_TOKEN}) as process:
        yield process.url, key, folder


def _sign_in(driver, url: str, secret: str, landing: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.delete_all_cookies()
    driver.get(url + "/login")
    driver.find_element(By.CSS_SELECTOR, "#key").send_keys(secret)
    driver.find_element(By.CSS_SELECTOR, "#sign-in").click()
    WebDriverWait(driver, 30).until(lambda d: d.current_url.split("?")[0].endswith(landing))


def test_the_custodian_reviews_the_draft_in_the_browser(browser, school_server, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, _key, folder = school_server
    _sign_in(browser, url, CUSTODIAN_TOKEN, "/custodian")
    browser.find_element(By.ID, "nav-review").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "review-form"))
    browser.save_screenshot(str(shots / "9-policy-review.png"))
    assert "learner's records" in browser.find_element(By.ID, "q-K2.1").text
    assert not browser.find_elements(By.ID, "confirm-K3.1")  # no proposal to confirm
    browser.find_element(By.ID, "edit-K2.1").click()
    for box in browser.find_elements(By.CSS_SELECTOR, 'input[name="columns-K2.1"]'):
        if box.is_selected() != (box.get_attribute("value") == "Mark.score"):
            box.click()  # keep exactly Mark.score (its table's details is open: a proposal column)
    browser.find_element(By.ID, "drop-K3.1").click()
    browser.find_element(By.ID, "save-review").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "saved"))
    browser.save_screenshot(str(shots / "10-policy-reviewed.png"))
    assert REVIEWED in browser.find_element(By.ID, "saved-path").text
    doc = yaml.safe_load((folder / REVIEWED).read_text(encoding="utf-8"))
    k2 = next(n for n in doc["norms"] if n["id"] == "K2")
    cols = {(loc["relation"], loc["attribute"]) for d in k2["data"] for loc in doc["grounding"]["data_types"][d]["locations"]}
    assert cols == {("Mark", "score")} and "K3" not in {n["id"] for n in doc["norms"]}


def test_an_analyst_gets_403_on_the_review_page(browser, school_server):
    from selenium.webdriver.common.by import By

    url, key, _folder = school_server
    _sign_in(browser, url, key, "/ask")
    browser.get(url + "/custodian/policy/review")
    assert "the policy review is the custodian" in browser.page_source and not browser.find_elements(By.ID, "review-form")
