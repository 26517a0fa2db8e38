# rlkit_td3: set-up commands. `make demo` trains a short TD3 run; `make test` runs the suite and builds the docs.
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# pytest-xdist workers for `make test` (each test runs at one torch thread): `auto` = one per CPU. --dist loadfile:
# each test file runs on one worker, so the Ray tests of tests/test_compare.py never run beside each other
TEST_WORKERS ?= auto
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint docs docs-browser bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e ".[test,box2d,mujoco,video,progress,tensorboard,ray,export,robotics,tune]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m rlkit_td3.demo --out demo_output

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	$(BIN)/python tests/site_check.py site

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	$(BIN)/python tests/site_check.py site

# the built site in headless Chromium at 1280 and 390 px (needs the system's chromium: apt-get install chromium)
docs-browser: docs
	$(BIN)/pip install --quiet -e ".[browser]"
	$(BIN)/python benchmarks/docs_browser_check.py site

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[benchmark]"
	$(BIN)/python benchmarks/sb3_side_by_side.py

clean:
	rm -rf site demo_output .pytest_cache
