"""Screenshots of the trace explorer for docs/ (the README shows them).

    lmaudit --warehouse /tmp/demo demo --size tiny
    python scripts/explore_screenshots.py /tmp/demo docs

Serves the warehouse on 127.0.0.1, drives the system Chromium (Debian's chromium + chromium-driver) through
Selenium with an explicit driver path, and saves the runs page, the generations table of the prefix run and
one of its generations with the span that has the most documents selected.
"""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ingest.explore.queries import Explorer
from ingest.explore.server import make_server
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

home = Path(sys.argv[1])
out = Path(sys.argv[2])
ex = Explorer(home)
srv = make_server(ex, 0)
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{srv.server_address[1]}/"
o = webdriver.ChromeOptions()
o.binary_location = '/usr/bin/chromium'
for a in "--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update --no-first-run --window-size=1400,900".split():
    o.add_argument(a)
d = webdriver.Chrome(service=Service(executable_path='/usr/bin/chromedriver'), options=o)
w = WebDriverWait(d, 20)
def go(h):
    d.get(url + h)
    w.until(lambda d: d.find_element(By.ID, 'app').get_attribute('data-ready') == (h or '#/'))
go('#/')
d.save_screenshot(str(out / 'explore_runs.png'))
go('#/gens?run=sandbox-tiny-prefix&sort=longest_span&desc=1')
d.save_screenshot(str(out / 'explore_generations.png'))
go('#/gens?run=sandbox-tiny-prefix&sort=n_spans&desc=1')
href = d.find_element(By.CSS_SELECTOR, '#generations tbody tr a').get_attribute('href')
go('#' + href.split('#', 1)[1])
items = d.find_elements(By.CSS_SELECTOR, '.span-item')
best = max(items, key=lambda e: int(e.find_elements(By.TAG_NAME, 'td')[2].text))
best.click()
w.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#docs .doc'))
time.sleep(0.3)
d.save_screenshot(str(out / 'explore_generation.png'))
print(d.find_element(By.ID, 'docs').text[:300])
d.quit()
srv.shutdown()
