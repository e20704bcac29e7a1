"""Headless chromium for the notebook UI tests (python3-selenium,
chromium-driver): the browser, and waiting for what a page shows."""
import shutil
import time


def start_browser(user_data_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "chromium and chromium-driver are not installed: ./quickstart check installs them"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    # --no-sandbox: chromium's own sandbox refuses to run as root (CI is root)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000", f"--user-data-dir={user_data_dir}"):
        opts.add_argument(arg)
    b = webdriver.Chrome(service=Service(driver), options=opts)
    b.set_page_load_timeout(60)
    return b


def wait_for(browser, script, timeout, what):
    """The first true value of script (run in the page), polled; fails
    naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what}: not seen in {timeout} s")
