# The two commands of the quick start: `make serve` (the main job; PORT=... to move it) and
# `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STATE  ?= $(CURDIR)
PORT   ?= 7700

.PHONY: test serve lint typecheck unit bench docs screenshots clean

# uv installs the same packages from PyPI as pip in less than half the time on a fresh machine
# (decision 0022): the venv gets uv first, then everything else through it. uv reads the
# system's certificates, as pip does; where uv cannot install, pip does it instead.
INSTALL := UV_SYSTEM_CERTS=1 $(VENV)/bin/uv pip install --quiet --python $(PY)
# The tests' install is not compiled to bytecode: compiling its 5,700 files took 9 s of a fresh
# `make test`, and the suite and mypy cache the bytecode of what they import as they import it
# (decision 0022). What the server runs is compiled once it is installed (below).
PIP_INSTALL := $(PY) -m pip install --quiet
PURELIB = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')

# The venv is made without pip (its ensurepip took 5 of the 7 s this step took on a fresh
# machine): the system's pip puts uv in it, then uv puts pip in (0.3 s), so .venv/bin/pip is
# there as usual. Where the system's pip cannot install into another environment (pip older
# than 22.3, or none), the venv is made again the usual way, with its own pip.
$(PY):
	$(PYTHON) -m venv --without-pip $(VENV)
	( $(PYTHON) -m pip --python $(PY) install --quiet --disable-pip-version-check 'uv>=0.5' && \
	  UV_SYSTEM_CERTS=1 $(VENV)/bin/uv pip install --quiet --python $(PY) pip ) || \
	( $(PYTHON) -m venv --clear $(VENV) && \
	  $(PIP_INSTALL) --disable-pip-version-check 'uv>=0.5' ) || echo "no uv: installing with pip"

# Reinstall whenever the project's dependencies change.
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(INSTALL) -e '.[test]' || $(PIP_INSTALL) -e '.[test]'
	touch $@

$(VENV)/.installed-serve: pyproject.toml | $(PY)
	$(INSTALL) -e '.[embed,docs,serve,postgres,import]' || \
		$(PIP_INSTALL) -e '.[embed,docs,serve,postgres,import]'
	# Compiled here, whichever install put each package in (after `make test` uv installs
	# nothing, and compiles nothing): where PYTHONDONTWRITEBYTECODE is set, nothing would ever
	# cache the server's bytecode, and each start would compile it again (2.9 s of CPU against
	# 1.3). A file that does not compile (a package's template) is left as it is.
	$(PY) -m compileall -q -j 0 "$(PURELIB)" >/dev/null || true
	# The default embedder's table, unpacked from the package (or distilled from another model
	# release) into the cache once, ahead of the server.
	$(PY) -m recuerdo.index.static
	touch $@

serve: $(VENV)/.installed-serve
	$(VENV)/bin/recuerdo --state-dir "$(STATE)" --memory demo serve --port "$(PORT)"

# mypy runs beside the tests, in the time the suite leaves a core idle (servers starting, the
# browser, PostgreSQL's own processes): on a clean clone it has no cache and takes some 20 s of
# CPU. Either failing fails `make test`; make waits for both and reports each.
test: lint
	@$(MAKE) --no-print-directory -j2 typecheck unit

lint: $(VENV)/.installed-test
	$(PY) -m ruff check src tests benchmarks tools
	$(PY) -m ruff format --check src tests benchmarks tools

typecheck: $(VENV)/.installed-test
	PYTHONDONTWRITEBYTECODE= $(PY) -m mypy

# pytest exits 5 when it collects nothing: make treats that as the failure it is.
# The suite runs on every core (JOBS=1 runs it in one process; a worker more than there are
# cores was measured and not kept, decision 0022). A file's tests stay on one worker, so its
# module-scoped servers start once and its typed-reply checks see all its replies; files are
# handed out in the order tests/conftest.py gives them (the slowest first).
# The slowest tests are listed at the end, to keep the suite's time in view.
JOBS ?= auto
# The suite starts over 200 Python processes: with PYTHONDONTWRITEBYTECODE set (as on these
# machines) each would compile recuerdo's modules and the tests again, so bytecode is kept here.
# Its temporary files go to memory (/dev/shm) when it has room: each test's stores commit
# durably, and on a disk those syncs are 2-8 ms each (decision 0022). The folder goes after.
TEST_TMP_ROOT ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && \
	[ "$$(df -Pk /dev/shm | awk 'NR==2 {print $$4}')" -gt 4194304 ] && echo /dev/shm || echo /tmp)
unit: $(VENV)/.installed-test
	@tmp=$$(mktemp -d "$(TEST_TMP_ROOT)/recuerdo-tests.XXXXXX") && chmod 755 "$$tmp" && \
	trap 'rm -rf "$$tmp"' EXIT && trap 'exit 130' INT TERM && \
	echo "test files in $$tmp" && \
	TMPDIR="$$tmp" PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(JOBS) --dist loadfile \
		--no-loadscope-reorder --durations=15 --basetemp="$$tmp/pytest"

# The quick benchmarks; the LoCoMo and 1M-chunk runs are started by hand (see README).
bench: $(VENV)/.installed-test
	$(PY) benchmarks/entries.py
	$(PY) benchmarks/notes.py --sizes 10000
	$(PY) benchmarks/search_latency.py --sizes 10000

docs: $(VENV)/.installed-test
	$(PY) -m recuerdo.doors.reference

# Pictures of the memory lens's main pages (docs/screenshots/), taken with Debian's chromium.
screenshots: $(VENV)/.installed-test
	$(PY) tools/screenshots.py docs/screenshots

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
