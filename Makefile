# fsmeter: the two commands a newcomer needs are `make demo` and `make test`.
# Both install what is missing (Debian tools as root, a Python venv, the Rust
# extension) before doing their job, so they work on a fresh clone.

VENV    ?= .venv
# The venv's bin/ goes first on PATH for every recipe: maturin's build backend
# (pip install --no-build-isolation) runs a `maturin` executable found on PATH,
# and only the one inside the venv may be used (a fresh machine has no other).
export PATH := $(abspath $(VENV))/bin:$(PATH)
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
FSMETER := $(VENV)/bin/fsmeter
# Debian packages: filesystem tools fsmeter formats with, and the original
# benchmarks it is cross-checked and benchmarked against, and chromium (headless)
# to check the HTML report renders; Open MPI (runtime and mpicc, which mpi4py compiles
# against, with the Python headers) for `mpirun -n N fsmeter run` and the MPI tests; autoconf/automake/pkg-config
# to build IOR and mdtest at bench time.
APT_PKGS := e2fsprogs xfsprogs btrfs-progs util-linux fio postmark dbench bonnie++ fsmark chromium bzip2 xz-utils \
    openmpi-bin libopenmpi-dev python3-dev autoconf automake pkg-config

.PHONY: all deps sysdeps pydeps build demo test test-rust test-python bench lint clean toolcheck

all: build

sysdeps:
	@bash scripts/install-sysdeps.sh $(APT_PKGS)

# Makefile too: a Python dependency added here (mpi4py) reaches venvs made before it.
$(VENV)/.deps-stamp: pyproject.toml Makefile
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "pytest>=7" "hypothesis>=6"
	$(PIP) install -q "fio-plot==1.1.21" "six>=1.16"
	$(PIP) install -q "pydantic>=2.5" "typer>=0.12" "rich>=13" "numpy>=1.24" "scipy>=1.10" \
	    "statsmodels>=0.14" "pandas>=2.0" "jinja2>=3.1" "plotly>=5.18"
	@# mpi4py compiles against the Debian Open MPI (mpicc); without it (no root) it is left out
	@# and `fsmeter run` works as before, the MPI tests skip saying why.
	@if command -v mpicc >/dev/null; then MPICC=mpicc $(PIP) install -q --no-binary mpi4py "mpi4py>=3.1"; \
	else echo "fsmeter: mpicc not found, not installing mpi4py (run 'make sysdeps' as root)" >&2; fi
	@touch $@

pydeps: $(VENV)/.deps-stamp

# Editable install: maturin builds crates/pyext (release) and drops
# fsmeter/_engine*.so into python/fsmeter; cargo makes rebuilds incremental.
build: sysdeps pydeps
	@cargo --version >/dev/null 2>&1 || { echo "make: no working Rust toolchain (\`cargo --version\` fails): install a current stable Rust with rustup (\`rustup default stable\`; Debian's packaged cargo is too old for the engine), then run make again" >&2; exit 2; }
	$(PIP) install -q --no-build-isolation --no-deps -e .
	cargo build --release -q -p fsmeter-engine --bin fsmeter-mix-task
	install -D -m 755 target/release/fsmeter-mix-task python/fsmeter/_bin/fsmeter-mix-task
	cargo build --release -q -p fsmeter-blocklog
	install -D -m 755 target/release/fsmeter-blocklog python/fsmeter/_bin/fsmeter-blocklog

demo: build
	$(FSMETER) compare

test: build test-rust test-python

test-rust:
	cargo test --release -p fsmeter-engine

test-python:
	$(PY) -m pytest -q -ra --durations=20

bench: build
	$(PY) bench/run.py

clean:
	rm -rf target $(VENV) python/fsmeter/_engine*.so

# Proves the build tools come from the venv: prints where maturin, pytest and
# fsmeter resolve under make's PATH and fails unless each is inside $(VENV).
toolcheck:
	@for t in maturin pytest fsmeter; do \
	    p=$$(command -v $$t || true); \
	    case "$$p" in "$(abspath $(VENV))"/bin/*) echo "$$t: $$p";; \
	    *) echo "toolcheck: $$t resolves to '$$p', not the venv's $(abspath $(VENV))/bin" >&2; exit 1;; esac; \
	done
