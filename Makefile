# Two commands for a fresh machine with Python 3.11+ and pip:
#   make report   # installs jagged into .venv and writes reports/jaggedness_report.html
#   make test     # installs the test dependencies into .venv and runs every test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: report test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test]'
	touch $@ $(VENV)/.installed-run

report: $(VENV)/.installed-run
	$(BIN)/jagged report

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-test
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) reports/*.html reports/*.ipynb
