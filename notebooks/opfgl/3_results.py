# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # O-pFGL, Tables 1, 3, 5, 6, 8, 9, 10, 11, 15, 16: one-shot personalised FGL against its baselines
#
# O-pFGL (Yan et al., arXiv 2411.11304) trains a personalised GNN on every
# client with **one** upload and **one** download: each client sends class
# statistics of its propagated features (through secure aggregation), the
# server condenses them into a tiny pseudo-graph (one node per class on the
# Planetoid graphs), and each client trains a generalised model on the
# pseudo-graph (Stage 1, Eq. 14) and fine-tunes it on its own graph with
# node-adaptive distillation (Stage 2, Eqs. 15-17).
#
# The paper's claims checked here:
#
# * O-pFGL beats every baseline in accuracy and macro-F1 on each dataset
#   (Tables 1, 5, 6, 8 on Cora, CiteSeer, PubMed; 15, 16 on Amazon and Coauthor);
# * one-shot O-pFGL is competitive with baselines given 100 rounds (Tables 9, 10);
# * with a different architecture on every client (Tables 3, 11), O-pFGL beats
#   every baseline that can run there.
#
# Every cell: paper vs ours (mean ± population std over the paper's three
# seeds 0, 1, 2 on one partition and split), delta, status
# (`match` when |Δ| ≤ max(1.5, 2·√(std²_paper + std²_ours))).

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/opfgl
tables = ["1", "6"]  # paper tables: 1, 6 (10 clients), 5, 8 (20 clients), 3, 11 (heterogeneous models), 15, 16 (Amazon/Coauthor), 17, 18 (SAGE/GAT/SGC), 9, 10 (100 rounds)
datasets = ["Cora"]  # datasets (paper: Cora, CiteSeer, PubMed, ogbn-arxiv, ogbn-products; Computers, Photo, CS, Physics)
methods = ["local", "fedavg_ft", "fedpub", "fedgta", "fedtad", "fedspray", "fedlog", "dense", "coboost", "opfgl", "fedavg"]  # rows; unregistered ones show as not implemented
seeds = [0, 1, 2]  # repetitions (paper: 0, 1, 2)
condense_iterations = 0  # O-pFGL's condensation iterations; 0 keeps each command's own (3000)
max_epochs = 1000  # cap of O-pFGL's Stages 1-2 and every fine-tuning (paper: 3000, with early stopping)
epochs_grid = [5, 50]  # local epochs tried by the one-round baselines (paper: tuned in 1..100)
local_rounds = 100  # Standalone: epochs, the best on validation reported
multi_rounds = 30  # rounds of the multi-round baselines of Tables 9/10 (paper: 100)
distill_epochs = 20  # DENSE's and Co-Boost's server distillation rounds; 0 keeps their own (200)
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.papers.opfgl import tables as ot
from fglcore.results import ResultStore

plan = ot.results_plan(tables, datasets, methods, seeds, condense_iterations, max_epochs, epochs_grid, local_rounds,
                       multi_rounds, distill_epochs)  # every run below, validated before any runs
out = paths.resolve_output_dir(output_dir, profile, "opfgl")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 250)
pd.set_option("display.max_columns", 40)
pd.set_option("display.max_colwidth", None)
print(f"profile {profile}: results go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. What runs here, and what cannot
#
# Every (table, dataset, method) of the paper's tables: `runs`, or why not.
# A baseline runs as soon as its algorithm is registered in `fglcore`
# (`not implemented` rows fill in when it is); ogbn-arxiv and ogbn-products
# have no offline copy here (`data not available`), so their columns show the
# paper's numbers alone. In Tables 3 and 11 every client trains its own
# architecture; a method that cannot keep it reads `heterogeneous models not
# supported` (none of the paper's six rows: see section 2 for how FedTAD,
# DENSE and Co-Boost run there).

# %%
# NBVAL_CHECK_OUTPUT
status = plan["status"]
print(status.pivot_table(index="method", columns="why", values="table", aggfunc="count", fill_value=0,
                         sort=False).to_string())
print(ot.count_runs(plan["configs"]).to_string(index=False))

# %% [markdown]
# ### What the `full` profile costs
#
# **Projection, measured on 2026-11-26: CPU time on this 2-core machine, one thread** (`FGL_THREADS=1`). One representative run per group (seed 0, the first run the notebooks plan for the group) was timed with `time.process_time()` by `benchmarks/full_projection.py`, and the seconds are kept in `benchmarks/projection_opfgl.csv`. Other sessions kept the machine heavily loaded (load 10-24), so the wall clock ran 4-15x the CPU time and wall seconds were not used. A run that another notebook of the paper already stored is copied, so it counts once. The `priced` column says how each group's seconds per run were obtained:
#
# * `measured`: the group's own run. O-pFGL's condensation was timed at 300 of its 3000 iterations and scaled linearly; its Stages 1-2 ran in full, with their early stopping. The 100-round baselines were timed at 5 rounds and scaled linearly.
# * `scaled` or `as gcn`: the same method on the same data, timed at other rounds or with the GCN backbone.
# * `modelled`: dataset size x method cost, fitted on the measured groups (`fglcore.runlog.expected_seconds`). `method not measured` means a mean cost stands in for the method, so treat that number as a rough guess.
#
# `python benchmarks/full_projection.py opfgl project` prints every group. **The whole paper** (four notebooks): 1366 runs, 98.5 CPU hours (one thread), 49.3 h on 2 workers at best; 56 % of the hours priced from measured groups, so read it as an order of magnitude. Its history: 20.2 CPU h before DENSE and Co-Boost were measured; 78.6 h with them measured on Cora only and modelled elsewhere; 83.4 h once they were made cheaper (below) and measured on PubMed; 216.0 h once measured with the `hetero` list, which multiplies them; 95.9 h (2026-11-26, evening) once SGC and APPNP, two of the `hetero` teachers, propagate over the synthetic graphs' sparse operators too, 88.7 h once Co-Boost's hardening pass stopped re-running the teachers' forward on the pooled graphs (below), and 98.5 h once Co-Boost `hetero` was measured on CiteSeer too (15,027 s a run, where the size model had said about 11,300 s).
#
#
# **3_results**: 1083 runs, 93.6 CPU h, 46.8 h on 2 workers at best
#
# | method | runs | CPU h | of which measured groups |
# |---|---:|---:|---:|
# | coboost | 108 | 46.07 | 38.94 |
# | dense | 108 | 25.10 | 8.18 |
# | fedtad | 126 | 6.58 | 2.48 |
# | fedgta | 114 | 3.34 | 0.03 |
# | fedlog | 96 | 3.18 | 0.00 |
# | fedpub | 78 | 2.43 | 0.05 |
# | opfgl | 106 | 2.02 | 0.72 |
# | fedavg_ft | 96 | 1.94 | 0.71 |
# | fedspray | 126 | 1.68 | 0.18 |
# | local | 108 | 1.13 | 0.01 |
# | fedavg | 17 | 0.11 | 0.02 |
#
# | biggest groups (dataset, method, model, rounds) | runs | CPU s/run | CPU h | priced |
# |---|---:|---:|---:|---|
# | CiteSeer, coboost, hetero, 1 | 6 | 15027 | 25.05 | measured |
# | CiteSeer, dense, hetero, 1 | 6 | 7712 | 12.85 | modelled |
# | Cora, coboost, hetero, 1 | 6 | 6852 | 11.42 | measured |
# | Cora, dense, hetero, 1 | 6 | 4114 | 6.86 | measured |
# | PubMed, fedtad, gcn, 100 | 6 | 1424 | 2.37 | measured |
# | Cora, coboost, gcn, 1 | 12 | 483 | 1.61 | measured |
# | CiteSeer, coboost, gcn, 1 | 12 | 401 | 1.34 | modelled |
# | PubMed, coboost, gcn, 1 | 12 | 258 | 0.86 | measured |
#
# **What these numbers leave out or guess:**
#
# * **DENSE and Co-Boost.** Every teacher and the student now propagate over sparse operators built once per synthetic graph (`fglcore.algorithms.ensemble_distillation.synthetic_graph`), bit-identical numbers. Measured, with the local epochs chosen on the teachers (one distillation per run): on Cora DENSE 341 -> 234 s and Co-Boost 673 -> 483 s of CPU a run; on PubMed (full runs) DENSE 163 s and Co-Boost 258 s, where the size model had guessed 1,921 s and 3,796 s. The synthetic graphs have the same size whatever the dataset, so the cost follows the feature width (Cora 1,433, PubMed 500) more than the graph; the `modelled` rows of CiteSeer (3,703 features), CS and Physics are probably too low. The heterogeneous runs are the next item.
# * **The heterogeneous DENSE and Co-Boost runs dominate.** With the `hetero` list every client architecture has its own student, so one run distils nine students. Measured on Cora with the distillation truncated and extrapolated (`--distill`): DENSE 10,451 s a run (20 of 200 rounds; the same truncation overestimated the plain DENSE run by 16 %), Co-Boost 28,546 s (10 of 200 rounds; its hardening pass goes over the whole pool of synthetic graphs every round, so that part grows with the square of the rounds and was scaled x365 from 68 s: the least certain number here). A profile showed PyG's `SGConv` and `APPNP` (three SGC teachers and one APPNP teacher) gathering and scattering the 1,433-wide features edge by edge, forward and backward. They now propagate over the same sparse operators as the GCNs (`fglcore.models.operators.apply_conv`; PyG's numbers bit for bit, `tests/test_fast_graph.py` and `tests/test_hetero_distillation.py`), and, measured again the same way: DENSE 4,114 s a run (synthesis 325 s for 20 rounds), Co-Boost 8,381 s (the pooled part 17.7 s for 10 rounds, scaled x365). Co-Boost's hardening pass (ODS) then kept each pooled graph's teacher forward with its autograd graph, since neither the features nor the teachers change while a graph is pooled: each round runs only the backward pass for the gradient and one forward on the perturbed features (`CoBoostServer.hard_pool`; the gradient equals the one through a forward over the whole pool, `tests/test_coboost.py`). Co-Boost then measured 6,852 s a run on Cora (the pooled part 13.3 s for 10 rounds; 0.76 GB peak memory for the truncated run) and 15,027 s on CiteSeer (3,703 features: synthesis 198 s and the pooled part 30.1 s for 10 rounds; 1.19 GB). DENSE on CiteSeer is `modelled`. A model list is never priced `as` a single backbone or the reverse (`fglcore.runlog.projection`): one `hetero` run distils nine students.
# * **A heterogeneous run outlasts a session, and resumes.** Co-Boost on CiteSeer with `hetero` (about 4.2 CPU hours, 9 students) is longer than this machine is held at a time. Since 2026-11-28 DENSE and Co-Boost save each distilled student in the run's checkpoint, so a run that is interrupted loses at most one student's distillation (about 28 CPU minutes there) and resumes with the numbers of an uninterrupted run (`tests/test_hetero_distillation.py`). Neither run can be made much cheaper with the same numbers. Most of its time goes to the teachers' first-layer products on the generated features, 256 x 3,703 by 3,703 x (the ten first-layer widths, 1,618 in all). Those products ran at about 85 GFLOP/s on one thread, 36 ms for the ten, which is close to the core's peak, and one fused product took the same time.
# * **Not measured at all:** FedLoG and the one-round FedPUB, FedGTA and FedTAD, priced at a mean cost (`method not measured`). O-pFGL on CS, Computers and Physics is `modelled`.
# * **Physics fits now.** O-pFGL's Physics run (34,493 nodes x 8,415 features) used to be killed by the out-of-memory killer at 8.6 GB resident. Almost all of that was one step, the one-hop propagation of the features: it gathered edges x features at once, about 15 GB on the largest Louvain+ client. The step now propagates in chunks, only for the rows the statistics use, and computes the float64 statistics in column blocks. The numbers are bit-identical on Cora, CiteSeer and CS. A whole Physics run now peaks at 3.0 GB (Louvain+) and 3.1 GB (Metis+), of which 2.6-2.7 GB is the loaded dataset (`python benchmarks/opfgl_memory.py --dataset Physics` prints the peak per phase).
# * **The biggest measured items** after the heterogeneous DENSE and Co-Boost runs are FedTAD at 100 rounds on PubMed (1,424 s a run, 22x its Cora run) and the one-round FedAvg + fine-tuning on PubMed (205 s a run, 21x Cora). O-pFGL itself costs about 60-77 s a run on Cora, CiteSeer, PubMed and Photo. Its condensation is cheap (1.2-3.5 s per 300 iterations, so 12-35 s of the run); Stages 1-2 take the rest.
#

# %% [markdown]
# ## 2. The protocol
#
# O-pFGL runs the authors' command for each dataset and partition
# (`run_main.sh`; the 20-client tables reuse the 10-client command, Amazon and
# Coauthor have none and run the code defaults). The baselines follow the
# paper's stated protocol for one-round methods (§5.1, App. A.2): **one**
# upload-download round, local epochs chosen on validation from a grid, then
# local fine-tuning with O-pFGL's early stopping (FedAvg, FedSpray);
# Standalone trains alone with its number of epochs chosen on validation.
#
# Tables 3 and 11 run the same protocol with the model list `hetero`: ten
# clients, each with the architecture the authors' code gives it (their
# `main.py --method hete`; it builds client 0's "SSGC_2_2_64" as SGC with
# K = 2, and `hetero_paper` has the SSGC the paper lists). O-pFGL exchanges
# only statistics and the pseudo-graph, Standalone nothing, and FedSpray only
# its encoder and proxies, so each client keeps its own model throughout.
# FedTAD, DENSE and Co-Boost distil the ensemble of the clients' own models
# into one student per architecture (of that architecture: DENSE and Co-Boost
# from its first client's initialisation, FedTAD from the mean of its clients'
# uploads), which only the clients of that architecture download and
# fine-tune. The paper does not say how it ran them; this is our reading
# (`fglcore.algorithms.ensemble_distillation`, `fglcore.algorithms.fedtad`).
# DENSE, Co-Boost and FedTAD run the one-round protocol with fine-tuning in
# every table (App. A.7). DENSE and Co-Boost choose their local epochs on the
# validation accuracy of the clients' local models, the teachers, and then
# distil once (`epochs_selection="teachers"`); the other one-round baselines
# choose on their fine-tuned models. Choosing DENSE's epochs on the final
# models would run the whole distillation (200 rounds over a growing pool of
# synthetic graphs) once per value of the grid: seven times per run, and 63
# times in a heterogeneous run with its nine architectures. The paper does
# not say on which model it tuned the epochs.

# %%
# NBVAL_CHECK_OUTPUT
from fglcore.algorithms.opfgl import PROTOCOL

print(pd.Series(PROTOCOL).to_string())
if {"3", "11"} & set(tables):
    from fglcore.models import MODELS

    print(f"hetero (Tables 3, 11): {MODELS.get('hetero').describe_clients()}")
for method in ("local", "fedavg_ft", "fedspray"):
    print(f"{method}: {ot.baseline_fields(method, epochs_grid=epochs_grid, max_epochs=max_epochs, local_rounds=local_rounds)}")
print(f"multi-round (Tables 9/10): {ot.baseline_fields('fedavg', epochs_grid=epochs_grid, max_epochs=max_epochs, local_rounds=local_rounds, multi_rounds=multi_rounds)}")
for d in datasets:
    for part in ("louvain_plus", "metis_plus"):
        options, source = ot.opfgl_options(d, part)
        print(f"opfgl {d}/{part}: {source}")

# %% [markdown]
# ## 3. Running the tables
#
# Each finished run is written to `results.csv` at once; an interrupted run
# resumes where it stopped, and a run another table already stored is copied.

# %%
results = {}
for table, configs in plan["configs"].items():
    results[table] = experiment.sweep(configs, out / "results.csv", progress=progress, desc=f"Table {table}")

# %% [markdown]
# ## 4. Paper vs ours
#
# One table per paper table and metric. `ours` reads `not implemented` or
# `data not available` where a cell cannot run here. Tables 9 and 10 put
# one-shot O-pFGL (the same runs as Tables 1 and 6) beside baselines given
# many rounds; a profile with fewer than the paper's 100 rounds shows its
# multi-round rows in the figure below, not in the comparison.

# %%
# NBVAL_CHECK_OUTPUT
comparisons = {}
for table in plan["configs"]:
    frame = ot.comparison(results[table], table, status)
    comparisons[table] = frame
    spec = ot.TABLES[table]
    for metric in ("accuracy", "macro_f1"):
        print(f"\nTable {table} ({spec['partition']}, {spec['num_clients']} clients): {metric}")
        print(ot.paper_vs_ours(frame, metric).to_string())

# %% [markdown]
# ## 5. The paper's claims
#
# As `params/opfgl/paper.yaml` states them, one line per claim, judged on the
# cells that ran (a claim with losers that did not run reads "without data"
# for them).

# %%
# NBVAL_CHECK_OUTPUT
all_results = pd.concat(list(results.values()), ignore_index=True) if results else pd.DataFrame()
display(compare.claims_table(compare.check_claims(all_results, "opfgl", tables=list(plan["configs"]))))

# %% [markdown]
# ## 6. The one-round FedSpray gap
#
# Run as one round with E = 100 local epochs and no fine-tuning (how
# FedSpray's notebook first ran O-pFGL's rows), our FedSpray scored 20-26
# points below O-pFGL's FedSpray numbers (Cora, Louvain+: 37.96 vs 63.14):
# after one round its GNN has distilled only from the *untrained* global
# encoder. The rows above run the protocol the paper states instead: E chosen
# on validation, then the personalised GNN fine-tuned with early stopping.
# One run per method on the first dataset, seed 0: validation and test
# accuracy of each E before (`global_*`: the model right after the round) and
# after fine-tuning, the search the reported number comes from. Fine-tuning
# is what moves FedSpray: compare the two accuracy columns.

# %%
search_configs = [c for c in plan["configs"].get(tables[0], [])
                  if c.algorithm in ("fedspray", "fedavg_ft") and c.seed == seeds[0] and c.dataset == datasets[0]]
for config in search_configs:
    _, run = experiment.run_full(config)
    frame = pd.DataFrame(run.extras["epochs_search"]).set_index("local_epochs")
    print(f"{config.algorithm} on {config.dataset}, Table {config.table}, seed {config.seed} (accuracy, %):")
    print((100 * frame).round(2).to_string())

# %% [markdown]
# ## 7. Figure: accuracy per method

# %%
frame = all_results[all_results["metric"] == "accuracy"].copy()
if not frame.empty:
    frame["method"] = frame["method"].map(lambda m: ot.METHOD_NAMES.get(m, m))
    frame["cell"] = "T" + frame["table"] + " " + frame["dataset"]
    fig = plotting.method_bars(frame, x="method", hue="cell", ylabel="accuracy (%)", title="O-pFGL tables: accuracy")
    plotting.save_figure(fig, out / "3_accuracy.png")
    display(fig)

# %% [markdown]
# ## 8. Report
#
# `comparison.csv` and `claims.csv` gather every table of the paper from all
# rows of this folder's `results.csv` (the other O-pFGL notebooks add
# theirs); the counts below cover this notebook's tables, `4_ablations` prints
# the whole report.

# %%
# NBVAL_CHECK_OUTPUT
all_rows = ResultStore(out / "results.csv").read()
report, report_claims = compare.write_report(out, all_rows, "opfgl")
this_notebook = report[report["table"].isin(list(plan["configs"]))]  # the other notebooks' tables depend on what ran before
print(this_notebook.groupby(["table", "status"]).size().unstack(fill_value=0).to_string())

# %% [markdown]
# What the runs in `results.csv` cost: runs computed and copied, compute hours
# summed over runs, wall hours with at least one run computing.

# %%
print(ResultStore(out / "results.csv").cost().to_string())
