# fsmeter: the two commands a newcomer needs are `make demo` and `make test` (`make help` lists the rest).
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
# to build IOR and mdtest at bench time; nodejs runs pyright (`make lint-types`), which pip installs.
APT_PKGS := e2fsprogs xfsprogs btrfs-progs util-linux fio postmark dbench bonnie++ fsmark chromium bzip2 xz-utils \
    openmpi-bin libopenmpi-dev python3-dev autoconf automake pkg-config iproute2 glusterfs-server glusterfs-client nodejs strace
# Guest kernels (the `kernel` campaign factor, docs/guests.md): QEMU, the busybox virtme-ng's init
# uses, the mkfs tools of the filesystems the host kernel may lack, and one Debian kernel to boot
# (the guest test boots it; GUEST_KERNEL= leaves it out).
GUEST_KERNEL ?= linux-image-6.1.0-50-amd64
GUEST_PKGS := qemu-system-x86 busybox-static jfsutils reiserfsprogs nilfs-tools f2fs-tools kmod

.PHONY: all help sysdeps pydeps build demo check test test-rust test-python lint lint-python lint-types lint-clippy lint-rustfmt fmt-rust \
    docs bench clean toolcheck

all: build ## the default: build

# One line per target: the text after `##` on its rule line.
help: ## this list
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

sysdeps: ## the Debian tools (as root): mkfs tools, the peers, Open MPI, chromium, QEMU for guests
	@bash scripts/install-sysdeps.sh $(APT_PKGS)
	@# Optional: a host where they cannot be installed still builds and tests (the guest test skips).
	@bash scripts/install-sysdeps.sh $(GUEST_PKGS) || echo "fsmeter: guest packages not installed ($(GUEST_PKGS)): the guest tests will skip" >&2
	@if [ -n "$(GUEST_KERNEL)" ] && ! ls /boot/vmlinuz-* >/dev/null 2>&1; then bash scripts/install-sysdeps.sh $(GUEST_KERNEL) || \
	    echo "fsmeter: no kernel for guests ($(GUEST_KERNEL) not installed): the guest tests will skip" >&2; fi

# Every Python dependency comes from pyproject.toml: the build backend from [build-system]
# requires, the rest from the package's dependencies and its extras (test, docs, and mpi where
# it can be built). mpi4py compiles against the Debian Open MPI (MPICC=mpicc, from source);
# without mpicc (no root) it is left out: `fsmeter run` works as before, the MPI tests skip
# saying why. The editable install also builds the extension (and its helper programs).
# The MPI compiler wrapper mpi4py is built with (make MPICC=/path/to/mpicc for another MPI).
MPICC ?= mpicc
$(VENV)/.deps-stamp: pyproject.toml Makefile
	@# The extension is Rust: say so in one line before pip's long build error would.
	@cargo --version >/dev/null 2>&1 || { echo "fsmeter: no working Rust toolchain ('cargo --version' fails): install a current stable Rust with rustup ('rustup default stable'), then run make again" >&2; exit 1; }
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $$($(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])')
	@# mpi4py is built in pip's isolated build environment (it needs setuptools and wheel, which
	@# a fresh venv lacks).
	@if command -v $(MPICC) >/dev/null; then \
	    MPICC=$(MPICC) $(PIP) install -q --no-binary mpi4py \
	        $$($(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mpi"])'); \
	else echo "fsmeter: $(MPICC) not found, not installing mpi4py (run 'make sysdeps' as root)" >&2; fi
	@# The package's dependencies and its test and docs extras, read from pyproject.toml, in pip's
	@# isolated build environments (some are built from source: fio-plot); then the package itself
	@# without isolation and without dependencies, so that maturin comes from the venv.
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	    print(*p["dependencies"], *p["optional-dependencies"]["test"], *p["optional-dependencies"]["docs"], \
	    *p["optional-dependencies"]["guest"], sep="\n")' \
	    > $(VENV)/requirements.txt
	$(PIP) install -q -r $(VENV)/requirements.txt
	$(PIP) install -q --no-build-isolation --no-deps -e .
	@touch $@

pydeps: $(VENV)/.deps-stamp ## the venv in .venv with every Python dependency of pyproject.toml

# Editable install: maturin builds crates/pyext (release) and drops fsmeter/_engine*.so into
# python/fsmeter; its build script builds the helper programs (fsmeter-mix-task,
# fsmeter-blocklog, fsmeter-diskmodel) into python/fsmeter/_bin. cargo makes rebuilds incremental.
build: sysdeps pydeps ## sysdeps, pydeps, and the engine extension with its helper programs
	@cargo --version >/dev/null 2>&1 || { echo "make: no working Rust toolchain (\`cargo --version\` fails): install a current stable Rust with rustup (\`rustup default stable\`; Debian's packaged cargo is too old for the engine), then run make again" >&2; exit 2; }
	$(PIP) install -q --no-build-isolation --no-deps -e .

demo: build ## a first comparison of the filesystems here (fsmeter compare)
	$(FSMETER) compare

test: build test-rust test-python ## every test, Rust and Python, root ones included (25-40 minutes)

# The quick gate before a commit: the build, every lint, and the tests that take seconds and need
# no root (statistics, the repository, the CLI's usage errors, the parsers' fuzz tests). `make test`
# runs everything.
CHECK_TESTS := tests/stats tests/repo tests/cli/test_usage_errors.py tests/fuzz
check: build lint ## the quick gate before a commit: build, lint, the fast tests without root (minutes)
	$(PY) -m pytest -q -m "not slow and not root" $(CHECK_TESTS)

test-rust: ## the engine's and the disk model's tests (cargo test)
	cargo test --release -p fsmeter-engine -p fsmeter-diskmodel

test-python: ## every Python test (pytest)
	$(PY) -m pytest -q -ra --durations=20

# The checks before a commit, one target each so that a failure says which: ruff's lint and its
# formatter (rules in pyproject.toml, version pinned in its test extra), pyright, clippy on every crate and target with every
# warning an error (a lint allowed in the code says why beside it), and rustfmt (rustfmt.toml).
lint: lint-python lint-types lint-clippy lint-rustfmt ## lint-python, lint-types, lint-clippy and lint-rustfmt

lint-python: pydeps ## ruff's lint and format check on python, tests, scripts and bench
	$(VENV)/bin/ruff check python tests scripts bench
	$(VENV)/bin/ruff format --check python tests scripts bench

# pyright (pinned in the test extra) on the modules [tool.pyright] in pyproject.toml names.
lint-types: pydeps ## pyright on stats/, store/, study/ and phases.py (pyproject's [tool.pyright])
	$(VENV)/bin/pyright

# The extension's build script would also build the helper programs in release: they are
# workspace crates, linted here anyway (FSMETER_NO_HELPERS=1).
lint-clippy: ## clippy on every crate and target, warnings as errors
	@cargo clippy --version >/dev/null 2>&1 || { echo "make: cargo clippy is missing: rustup component add clippy" >&2; exit 2; }
	FSMETER_NO_HELPERS=1 cargo clippy --workspace --all-targets --locked -- -D warnings

lint-rustfmt: ## rustfmt's check on every crate
	@cargo fmt --version >/dev/null 2>&1 || { echo "make: cargo fmt is missing: rustup component add rustfmt" >&2; exit 2; }
	cargo fmt --all --check

# Formats every Rust file the rustfmt check looks at.
fmt-rust: ## formats every Rust file (cargo fmt)
	cargo fmt --all

bench: build ## fsmeter against the original tools, on a quiet machine (bench/run.py)
	$(PY) bench/run.py

# The documentation site (MkDocs, from docs/) into site/; --strict fails on a broken link or
# anchor. The CLI reference pages are generated from the CLI at every build (scripts/docs_cli.py).
docs: build ## the documentation site into site/ (mkdocs --strict)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean: ## removes the build, the venv and the site
	rm -rf target $(VENV) site python/fsmeter/_engine*.so python/fsmeter/_bin

# Proves the build tools come from the venv: prints where maturin, pytest and
# fsmeter resolve under make's PATH and fails unless each is inside $(VENV).
toolcheck: ## shows that maturin, pytest and fsmeter come from the venv
	@for t in maturin pytest fsmeter; do \
	    p=$$(command -v $$t || true); \
	    case "$$p" in "$(abspath $(VENV))"/bin/*) echo "$$t: $$p";; \
	    *) echo "toolcheck: $$t resolves to '$$p', not the venv's $(abspath $(VENV))/bin" >&2; exit 1;; esac; \
	done
