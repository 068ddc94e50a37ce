# goldtrace: `make demo` runs the main job on a bundled example; `make test` sets up
# and runs every test. Both work on a fresh machine with Go, Python 3 and gcc.

PYTHON ?= python3
GO ?= go
PIP := $(PYTHON) -m pip
FUZZTIME ?= 20s
# Packages whose code runs goroutines: their tests also run under the race
# detector, limited to the tests that exercise the concurrent code.
RACE_PKGS := ./engine/eval/ ./engine/golden/ ./kernel/customcall/
RACE_ARGS := -run 'Gemm|Parallel|Collective|Rendezvous|Device|Replica|Scalar|FusionBlocked|ConvBlocked|ReduceWindowBlocked'
# The simulator runs program instances and loop iterations concurrently, and
# kernel custom-calls are entered from XLA's and the evaluator's threads.
KERNEL_RACE_PKGS := ./kernel/sim/ ./kernel/customcall/

.PHONY: all deps install demo test gotest pytest bench fuzz proto clean

all: install

# Python packages the build and the tests need; Go modules come from go.sum.
# torch + torch-xla are for the torch-xla bridge's tests (docs/design.md, decision 18):
# PyPI's torch is the CUDA build, ~7 GB with its nvidia wheels, 2-5 min on a fresh machine.
# ml_dtypes stays below 0.7: 0.7 rounds float64 -> bfloat16 once (it went through
# float32 before) and f32 subnormals -> float8_e8m0fnu down, where XLA:CPU (jax 0.10.2),
# whose conversions the goldens follow, still gives the older results; the dtype tests
# hold engine/dtype to ml_dtypes, so they need a reference that agrees with XLA.
deps:
	$(PIP) install -q --disable-pip-version-check "setuptools>=64" wheel "cffi>=1.16" numpy "ml_dtypes>=0.5,<0.7" pytest hypothesis jax \
	  "dask[distributed]" tqdm fsspec
	$(PIP) install -q --disable-pip-version-check torch==2.9.0 torch-xla==2.9.0
	$(GO) mod download

install: deps
	$(PIP) install -q --disable-pip-version-check --no-build-isolation -e .

demo: install
	$(PYTHON) examples/demo.py
	$(PYTHON) examples/kernel_demo.py

# The tests build their references with the interpreter make was given, and
# a missing reference (no jax, numpy or ml_dtypes) fails them instead of
# skipping them.
REF_ENV := GOLDTRACE_PYTHON="$(PYTHON)" GOLDTRACE_REQUIRE_REFERENCE=1
# Packages whose code differs under GOEXPERIMENT=simd (what the Python package
# ships when the toolchain allows): every one of their tests reruns there.
SIMD_PKGS := ./engine/eval/ ./engine/golden/ ./kernel/sim/

# The portable build runs every test, the SIMD build every test of SIMD_PKGS.
gotest:
	$(GO) vet ./...
	GOEXPERIMENT=simd $(GO) vet $(SIMD_PKGS)
	$(REF_ENV) $(GO) test -timeout 25m -count=1 ./...
	$(REF_ENV) GOEXPERIMENT=simd $(GO) test -timeout 25m -count=1 $(SIMD_PKGS)
	$(REF_ENV) $(GO) test -timeout 25m -count=1 -race $(RACE_ARGS) $(RACE_PKGS)
	$(REF_ENV) $(GO) test -timeout 25m -count=1 -race $(KERNEL_RACE_PKGS)
	$(REF_ENV) $(GO) test -timeout 25m -count=1 -race -run 'ValidateMarshal|CheckAhead|FinishThenEncode' ./kernel/ir/ ./capi/

pytest:
	$(REF_ENV) $(PYTHON) -m pytest -q tests

test: install gotest pytest

bench: install
	$(PYTHON) bench/run.py
	$(PYTHON) bench/kernels.py
	$(PYTHON) bench/batch.py

# Short fuzzing of every parser and decoder; FUZZTIME=10m for the long run.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== fuzz $$pkg $$fz ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$fz$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg; \
	  done; \
	done

-include mk/proto.mk

clean:
	rm -rf build dist python/goldtrace/*.so python/goldtrace/_native.c *.egg-info python/*.egg-info
