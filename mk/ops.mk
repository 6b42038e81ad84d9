# The dashboard's browser test (tests/ops/test_dashboard_browser.py) drives Debian's chromium
# headless through chromium-driver (Selenium; no browser downloads). CI runs as root.
.PHONY: ops-chromium
ops-chromium:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		{ apt-get update -q && apt-get install -y -q chromium chromium-driver; }

SETUP_TARGETS += ops-chromium
