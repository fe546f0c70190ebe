#!/usr/bin/python3
"""Strata Studio in a real browser: headless Chromium driven by Selenium.

Serves a W1 file and the demo file with `storedump serve`, loads every view, runs a
query, pages through records, checks that hostile values stay text, watches a commit
made by another process appear, and that a damaged file shows its damage. Screenshots of
each view go to --screenshots. Run by StudioBrowserTests (swift test); exits non-zero
with the failing check named.

    studio_browser.py --storedump BIN --fixture BIN --w1 FILE --w1-count N --demo FILE
                      --damaged FILE --screenshots DIR
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20  # seconds any one view may take to appear
# A view redrawn while it is read (paging, a commit) replaces its elements: read again.
REDRAWN = (NoSuchElementException, StaleElementReferenceException)


class Server:
    """`storedump serve FILE --port 0`, with the URL it prints."""

    def __init__(self, storedump, path):
        self.process = subprocess.Popen([storedump, "serve", path, "--port", "0"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if " at http://" not in line:
            raise SystemExit("storedump serve did not print its URL: %r %s" % (line, self.process.stderr.read()))
        self.url = line.split(" at ")[1].split(" ")[0].rstrip("/")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Studio:
    def __init__(self, driver, url, screenshots):
        self.driver, self.url, self.screenshots = driver, url, screenshots

    def open(self, route, view):
        """Loads #route and waits until the view named `view` has drawn."""
        self.driver.get(self.url + "/#" + route)
        return self.ready(view)

    def ready(self, view):
        def drawn(d):
            main = d.find_element(By.ID, "main")
            return main.get_attribute("data-view") == view and main.get_attribute("data-ready") == "true"
        WebDriverWait(self.driver, WAIT, ignored_exceptions=REDRAWN).until(drawn, "view %s did not draw" % view)
        error = self.driver.find_element(By.ID, "error")
        return error

    def no_error(self, view):
        error = self.driver.find_element(By.ID, "error")
        check(not error.is_displayed(), "view %s shows an error: %s" % (view, error.text))

    def text(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css).text

    def shot(self, name):
        if self.screenshots:
            self.driver.save_screenshot(os.path.join(self.screenshots, name + ".png"))

    def wait_for(self, condition, message):
        WebDriverWait(self.driver, WAIT, ignored_exceptions=REDRAWN).until(lambda d: condition(), message)


def no_injection(driver):
    try:
        alert = driver.switch_to.alert
        raise AssertionError("a record value ran as script: alert %r" % alert.text)
    except NoAlertPresentException:
        pass
    check(driver.execute_script("return window.studioInjected === undefined"), "a record value ran as script")
    check(len(driver.find_elements(By.CSS_SELECTOR, "main img, main script")) == 0, "a record value became markup")


def test_w1(studio, args):
    driver = studio.driver
    # Overview
    studio.open("/", "overview")
    studio.no_error("overview")
    check("STRATADB" in studio.text("#overview"), "overview shows the format")
    studio.wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#overview-space svg.bar"), "overview shows live and dead bytes")
    studio.shot("overview")

    # Collections
    studio.open("/collections", "collections")
    users = studio.text("article[data-name='users'] .count")
    check(users == "%d records" % args.w1_count, "collections shows %d users, not %r" % (args.w1_count, users))
    check("email" in studio.text("article[data-name='users']"), "collections lists fields")
    studio.shot("collections")

    # Browse: keyset pages in key order, forward and back
    studio.open("/browse/users", "browse")
    rows = driver.find_elements(By.CSS_SELECTOR, "table.records tbody tr")
    check(len(rows) == 50, "first page has 50 records, not %d" % len(rows))
    check(rows[0].find_element(By.TAG_NAME, "td").text == "1", "first page starts at key 1")
    studio.shot("browse")
    driver.find_element(By.ID, "next").click()
    studio.wait_for(lambda: studio.text("table.records tbody tr td") == "51", "the next page starts at key 51")
    driver.find_element(By.ID, "next").click()
    studio.wait_for(lambda: studio.text("table.records tbody tr td") == "101", "the page after starts at key 101")
    driver.find_element(By.ID, "previous").click()
    studio.wait_for(lambda: studio.text("table.records tbody tr td") == "51", "previous returns to key 51")

    # One record as JSON
    driver.find_element(By.CSS_SELECTOR, "table.records tbody tr td a").click()
    studio.ready("record")
    record = json.loads(studio.text("#record-json"))
    check(record["id"] == 51 and record["email"] == "user51@example.com", "record view shows record 51: %r" % record)
    studio.shot("record")

    # Query: typed in the form, answered with count and plan
    studio.open("/query?collection=users", "query")
    form = driver.find_element(By.ID, "query-form")
    form.find_element(By.NAME, "where").send_keys("age >= 70 AND city = 'Oslo'")
    form.find_element(By.NAME, "sort").send_keys("-age")
    driver.find_element(By.ID, "run-query").click()
    studio.wait_for(lambda: len(driver.find_elements(By.ID, "query-count")) == 1, "the query answers")
    expected = sum(1 for i in range(1, args.w1_count + 1) if 18 + (i * 7 % 60) >= 70 and i % 8 == 0)
    count = studio.text("#query-count")
    check(count.startswith("%d matches" % expected), "query counts %d matches, not %r" % (expected, count))
    check("index" in studio.text("#query-plan"), "the plan names the index it uses")
    ages = [int(r.find_elements(By.TAG_NAME, "td")[4].text) for r in driver.find_elements(By.CSS_SELECTOR, "table.records tbody tr")]
    check(ages == sorted(ages, reverse=True) and ages and min(ages) >= 70, "query results sorted by age, descending: %r" % ages[:10])
    studio.shot("query")
    # A predicate that does not parse names the column
    studio.open("/query?collection=users&where=age%20%3E%3D&run=1", "query")
    check("column" in studio.text("#error-message"), "a bad predicate names its column")

    # Space, tree, verify
    studio.open("/space", "space")
    studio.no_error("space")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#tree-chart rect.live-bytes")) >= 2, "the space chart draws a bar per tree")
    studio.shot("space")
    studio.open("/tree/users", "tree")
    check("%d entries" % args.w1_count in studio.text("#tree-summary"), "tree view counts the entries")
    studio.shot("tree")
    driver.find_element(By.CSS_SELECTOR, "#tree table.grid tbody a[href^='#/page/']").click()
    studio.ready("page")
    check("bytes stored" in studio.text("#page-summary"), "a page of the tree opens with its entries or children")
    studio.shot("page")
    studio.open("/verify?run=full", "verify")
    studio.wait_for(lambda: len(driver.find_elements(By.ID, "verify-result")) == 1, "verify answers")
    check(studio.text("#verify-result") == "clean", "verify finds the file clean")
    studio.shot("verify")

    # Hostile values stay text
    studio.open("/browse/hostile", "browse")
    page = studio.text("table.records")
    check("<script>window.studioInjected" in page, "a <script> value is shown as text")
    check("<img src=x" in page, "an <img> value is shown as text")
    check("characters)" in page, "a 1 MB string is cut in the list")
    no_injection(driver)
    studio.shot("hostile")
    studio.open("/record/hostile/208000000000000005", "record")
    check(len(studio.text("#record-json")) > 1_000_000, "the record view shows the 1 MB string whole")
    studio.open("/record/hostile/208000000000000001", "record")
    no_injection(driver)

    # Live: a commit from another process appears on the open page
    studio.open("/collections", "collections")
    studio.wait_for(lambda: driver.find_element(By.ID, "live").get_attribute("data-state") == "live", "the page follows commits")
    before = int(driver.find_element(By.ID, "live").get_attribute("data-sequence"))
    subprocess.run([args.fixture, "commit", args.w1, str(args.w1_count + 1)], check=True)
    studio.wait_for(lambda: studio.text("article[data-name='users'] .count") == "%d records" % (args.w1_count + 1),
                    "the other process's commit appears without a reload")
    after = int(driver.find_element(By.ID, "live").get_attribute("data-sequence"))
    check(after > before, "the live badge moves to the new commit")


def test_demo(studio):
    for route, view in [("/", "overview"), ("/collections", "collections"), ("/browse/Member", "browse"),
                        ("/space", "space"), ("/tree/Member", "tree")]:
        studio.open(route, view)
        studio.no_error(view)
    check(studio.driver.find_elements(By.CSS_SELECTOR, "table.grid"), "the demo's tree view draws")
    studio.open("/browse/Member", "browse")
    check("Ada" in studio.text("table.records"), "the demo's members are listed")
    studio.driver.find_element(By.CSS_SELECTOR, "table.records tbody tr td a").click()
    studio.ready("record")
    check(json.loads(studio.text("#record-json"))["name"] == "Ada", "the demo's first member opens as JSON")
    studio.open("/verify?run=full", "verify")
    studio.wait_for(lambda: len(studio.driver.find_elements(By.ID, "verify-result")) == 1, "verify answers on the demo file")
    check(studio.text("#verify-result").startswith("clean"), "the demo file verifies clean")
    studio.open("/query?collection=Member&where=age%20%3E%3D%2080&run=1", "query")
    check(studio.text("#query-count").startswith("2 matches"), "the demo's query counts 2 members over 80")


def test_damaged(studio, server):
    studio.open("/", "overview")
    error = studio.driver.find_element(By.ID, "error")
    check(error.is_displayed() and "damaged" in error.text, "a damaged file shows its damage: %r" % error.text)
    studio.wait_for(lambda: studio.text("#file").endswith("damaged.strata"), "the damaged file is named")
    studio.shot("damaged")
    studio.open("/verify?run=full", "verify")
    studio.wait_for(lambda: len(studio.driver.find_elements(By.ID, "verify-result")) == 1, "verify answers on a damaged file")
    check("fault" in studio.text("#verify-result"), "verify reports the damage")
    # The server is still up and answers with the damage as JSON.
    try:
        urllib.request.urlopen(server.url + "/api/info")
        raise AssertionError("info on a damaged file answered 200")
    except urllib.error.HTTPError as error:
        body = json.loads(error.read())
        check(error.code == 500 and body["kind"] == "corruption", "info answers the corruption as JSON: %r" % body)
    check(server.process.poll() is None, "the server survives a damaged file")


def main():
    parser = argparse.ArgumentParser()
    for name in ["--storedump", "--fixture", "--w1", "--demo", "--damaged"]:
        parser.add_argument(name, required=True)
    parser.add_argument("--w1-count", type=int, required=True)
    parser.add_argument("--screenshots")
    args = parser.parse_args()
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)

    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    servers = []
    try:
        for path, test in [(args.w1, lambda s, server: test_w1(s, args)), (args.demo, lambda s, server: test_demo(s)),
                           (args.damaged, test_damaged)]:
            server = Server(args.storedump, path)
            servers.append(server)
            screenshots = args.screenshots if path == args.w1 else None
            if path == args.damaged:
                screenshots = args.screenshots
            test(Studio(driver, server.url, screenshots), server)
            server.stop()
            print("ok: %s" % os.path.basename(path))
    except Exception as error:
        print("FAILED: %s" % error, file=sys.stderr)
        if args.screenshots:
            driver.save_screenshot(os.path.join(args.screenshots, "failure.png"))
        print("page text at failure:\n" + driver.find_element(By.TAG_NAME, "body").text[:3000], file=sys.stderr)
        sys.exit(1)
    finally:
        driver.quit()
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
