# bobcat — the two commands a user needs:
#   make evaluate   set up this node, build, and run the evaluation campaign (writes the report)
#   make test       set up this node, build, and run every test (CTest + pytest)
# Both install what is missing on a fresh Debian 12 machine (as root): apt packages, the venv.
PREFIX      ?= /usr/local
BUILD       ?= build
STAGE       := $(abspath $(BUILD))/stage
VENV        := .venv
PY          := $(VENV)/bin/python
JOBS        ?= $(shell nproc)
EVALUATE_ARGS ?=
export BOBCAT_HOME := $(STAGE)

.PHONY: all deps peers build test test-c test-python test-external evaluate install clean check-leftovers bench-smartmap bench-mpi bench-scaling bench-coll bench-sandbox

all: build

deps:
	@bash scripts/setup.sh
	@if [ "$(PEERS)" = 1 ]; then bash scripts/peers.sh install; fi

# Today's MPIs beside Debian's (issue 29, docs/mpis.md): Open MPI 5, MPICH 5 and Intel MPI from their
# wheels into .peers/ (never replacing the system MPIs); the build then makes a layer for each.
# `make test` and `make evaluate` install them; `make deps PEERS=1` or `bobcat doctor --install-peers`
# on request; BOBCAT_NO_PEERS=1 skips them, BOBCAT_PEERS="openmpi5 mpich5" picks some.
peers: deps
	@bash scripts/peers.sh install

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_PREFIX=$(STAGE) >/dev/null

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)
	cmake --install $(BUILD) --prefix $(STAGE) >/dev/null
	@# Bytecode for the editable package even where PYTHONDONTWRITEBYTECODE is set: yod's start-up.
	$(PY) -m compileall -q python/bobcat >/dev/null

test: peers build
	bash tests/run_all.sh

# External conformance (docs/testing.md): mpi4py's own test suite, bare and under yod, both MPIs;
# reports the tests that fail only under yod. Not part of `make test`: it downloads mpi4py and runs
# ~1,900 tests per configuration (10-40 min on a 2-core node). EXTERNAL_ARGS e.g. --control.
EXTERNAL_ARGS ?=
# External suites nobody on the team wrote (docs/testing.md): mpi4py's unittests and MPICH's test/mpi.
# Both run even when the first finds regressions; the exit status is the worse of the two.
EXTERNAL_SUITES ?= mpi4py mpich
test-external: build
	@rc=0; for s in $(EXTERNAL_SUITES); do \
	  case $$s in \
	    mpi4py) $(PY) -m bobcat.external.pysuites $(EXTERNAL_ARGS);; \
	    mpich) $(PY) -m bobcat.external.mpich $(EXTERNAL_MPICH_ARGS);; \
	    *) echo "test-external: unknown suite $$s (mpi4py, mpich)"; false;; \
	  esac; r=$$?; [ $$r -gt $$rc ] && rc=$$r; \
	done; exit $$rc

evaluate: peers build
	$(VENV)/bin/bobcat evaluate $(EVALUATE_ARGS)

bench-smartmap: build
	$(PY) -m bobcat.bench.smartmap

bench-mpi: build
	$(PY) -m bobcat.bench.mpi $(BENCH_ARGS)

# Issue 27: bobcat vs both MPIs' defaults and no-CMA settings under a Docker-like seccomp filter
# (docs/containers.md); BENCH_SANDBOX_ARGS e.g. --reps 7 --json sandbox.json
bench-sandbox: build
	$(PY) -m bobcat.bench.sandbox $(BENCH_SANDBOX_ARGS)

# Issue 8: ranks per node 2..64 x page kinds; BENCH_SCALING_ARGS e.g. --json scaling.json
bench-scaling: build
	$(PY) -m bobcat.bench.scaling $(BENCH_SCALING_ARGS)
bench-coll: build
	$(PY) -m bobcat.bench.coll

install: build
	bash scripts/install.sh "$(PREFIX)" "$(BUILD)"

clean:
	rm -rf $(BUILD)
