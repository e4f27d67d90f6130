# Two commands do all the set-up on a fresh machine:
#   make reproduce [PROFILE=smoke|quick|full] [PAPERS="tour fedspray"] [JOBS=2 | WORKERS=2] [FRESH=1]
#   make test
#   make notebooks   (rebuild notebooks/*/*.ipynb from their jupytext .py sources)
# Both create (or reuse) the virtual environment in $(VENV).

PROFILE ?= quick
PAPERS ?=
JOBS ?= 1
WORKERS ?= 1
# FRESH=1 recomputes every run into outputs/<profile>-fresh-<time>/ instead of reusing the stored ones.
FRESH ?=
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.fgl-installed
export FGL_THREADS ?= 2
# An offline mirror in PyG raw layout beside the checkout is used when present.
export FGL_DATA_MIRROR ?= $(abspath $(wildcard ../shared/data))

.PHONY: venv reproduce test notebooks benchmark benchmark-fedstar benchmark-node benchmark-opfgl benchmark-opfgl-memory

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU wheel comes from local disk where a machine provides it.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	# flower: tests/test_flower.py and notebooks/tour/flower start a real SuperLink and SuperNodes.
	$(BIN)/python -m pip install --quiet -e ".[test,flower]"
	touch $(STAMP)

reproduce: $(STAMP)
	$(BIN)/fgl reproduce $(PAPERS) --profile $(PROFILE) --jobs $(JOBS) --workers $(WORKERS) $(if $(filter 1 yes true,$(FRESH)),--fresh)

# Every notebook executes once under smoke: nbval re-runs the committed outputs/smoke notebooks (checked cells),
# then tests/test_notebooks.py compares the results.csv those runs wrote with the committed one to 1e-6.
test: $(STAMP)
	$(BIN)/python -m pytest tests outputs/smoke --nbval-lax -p no:cacheprovider

# The .py (jupytext percent format, paired by jupytext.toml) is the reviewed source of each .ipynb. --to ipynb
# --update builds from the .py whatever the timestamps (--sync would let a newer, stale .ipynb win after a checkout).
notebooks: $(STAMP)
	$(BIN)/jupytext --to ipynb --update notebooks/*/*.py

benchmark: $(STAMP)
	$(BIN)/python benchmarks/simulation_overhead.py

# FedStar's graph trainer: straight port vs plain vs fast path, per client and projected Table 1 (about 9 min).
benchmark-fedstar: $(STAMP)
	FGL_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python benchmarks/fedstar_speed.py --threads 1 --workers 2

# Node tasks: FedSpray's Table 2 runs, plain vs fast path (sparse features and CSR message passing), 20 rounds (about 10 min).
benchmark-node: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/node_speed.py --threads 1

# O-pFGL on Cora, Louvain+, 10 clients: seconds of each phase (condensation, Stage 1, Stage 2) for seeds 0-2.
benchmark-opfgl: $(STAMP)
	FGL_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python benchmarks/opfgl_speed.py --seeds 0 1 2

# O-pFGL on Coauthor CS, Louvain+, 10 clients: peak resident memory and seconds of each phase (Physics: --dataset Physics).
benchmark-opfgl-memory: $(STAMP)
	FGL_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python benchmarks/opfgl_memory.py --dataset CS
