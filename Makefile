# Two commands for a fresh machine with Python 3.11+ and pip:
#   make report   # installs jagged into .venv and writes reports/jaggedness_report.html
#   make test     # installs the test and spark dependencies into .venv, lints (ruff) and runs every test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: report test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# An editable install compiles no bytecode, and PYTHONDONTWRITEBYTECODE (set on some
# machines) stops Python from writing it on import: compile once here, as a regular
# install would, so neither the CLI nor the report kernel recompiles jagged on every run.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	$(BIN)/python -m compileall -q jagged
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test,spark]'
	$(BIN)/python -m compileall -q jagged
	touch $@ $(VENV)/.installed-run

report: $(VENV)/.installed-run
	$(BIN)/jagged report

# pytest-xdist runs the suite on every core; --dist loadfile gives each worker whole test files, so a
# notebook's cells (nbval) run in order in one kernel and a module's fixtures are built once.
test: $(VENV)/.installed-test
	$(BIN)/ruff check jagged tests benchmarks
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=15

bench: $(VENV)/.installed-test
	$(BIN)/python -m compileall -q jagged
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) reports/*.html reports/*.ipynb
