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
# # FedStruct, Table 2: node classification across interconnected clients
#
# FedStruct (Aliakbari, Östman and Graell i Amat, ICLR 2025) trains on
# subgraphs held by clients whose nodes are linked across clients. Each client
# predicts with two branches whose logits are added (Eq. 10):
#
# $$\hat y_v = \mathrm{softmax}\Big(\underbrace{f_{\theta_f}(v)}_{\text{local decoupled GCN on } X_i}
#   + \underbrace{\textstyle\sum_{u} \bar A_{vu}\, g_{\theta_s}(s_u)}_{\text{structure branch}}\Big),
#   \qquad \bar A = \hat A^{L_s},$$
#
# where $\hat A$ is the row-normalised global adjacency with self-loops, its
# powers obtained collaboratively and pruned (Alg. 3), and $s_u$ are node
# structure features: one-hot degree (Deg), Fed⋆'s random-walk features, or
# Hop2Vec (H2V), learned jointly. No node feature or label ever leaves its
# client. Table 2 compares it, under a **random** partition (every node picks
# its client uniformly, so most edges cross clients) into 5, 10 and 20
# clients, with Central, Local and FedSGD GraphSAGE, FedSage+, FedPub and
# FedGCN, which is **not private** (its clients receive aggregated features of
# other clients' nodes). This notebook runs the grid with `fglcore`, sets our
# numbers beside the paper's (mean ± std over runs, delta, status) and checks
# the paper's claims.

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedstruct
datasets = ["Cora", "Chameleon"]  # Table 2 datasets (paper: Cora, CiteSeer, PubMed, Chameleon, Photo, Amazon-ratings)
num_clients = [10]  # numbers of clients (paper: 5, 10, 20)
methods = ["central", "fedsgd", "fedsage_plus", "fedpub", "fedgcn_2hop", "fedstruct_deg", "fedstruct_fedstar", "fedstruct_h2v", "fedstruct_h2v_f", "local"]  # Table 2 rows (ids of fglcore.papers.fedstruct.tables.ROWS)
seeds = [0, 1]  # runs per cell, each a new split, partition and initialisation (paper: 10)
rounds = 0  # training rounds; 0 keeps Table 5's epochs per dataset
cost_datasets = []  # datasets on which each method is timed (e.g. PubMed, Photo)
cost_methods = ["fedsgd", "fedgcn_2hop", "fedstruct_h2v", "fedstruct_h2v_f", "local"]  # rows timed
cost_rounds = 5  # rounds of the shorter timed run (the longer has twice as many)
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.papers.fedstruct import tables as ft
from fglcore.results import ResultStore

plan = ft.results_plan(datasets, num_clients, methods, seeds, rounds, cost_datasets, cost_methods,
                       cost_rounds)  # every run below, validated before any runs
out = paths.resolve_output_dir(output_dir, profile, "fedstruct")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 220)
pd.set_option("display.max_columns", 40)
pd.set_option("display.max_colwidth", None)
print(f"profile {profile}: results go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. Data and rows
#
# The paper's six datasets: Cora, CiteSeer and PubMed (citation graphs,
# homophilous), Chameleon (Wikipedia, heterophilous, edge homophily 0.23),
# Amazon Photo (co-purchase, homophilous) and Amazon-ratings (heterophilous).
# **Amazon-ratings is not in the offline mirror**: its column keeps the paper's
# numbers and shows as missing. A row whose algorithm is not in the registry
# yet is listed as *not implemented*: its paper numbers are shown, not run.
# So is a cell this machine cannot hold, *out of reach*
# (`fedstruct.unpruned_abar_refusal`): an unpruned "-F" row whose $\bar A$
# would take more than half the memory. The table's "-F" rows train with the
# fused simulation, where Alg. 3 runs for the ledger only and holds rows that
# have filled in as dense arrays: PubMed's $\hat A^{20}$ (all 389 M values)
# then needs about 8.9 GB, which a 24 GB machine holds (formed as CSR, as
# before 2026-11-27, it needed about 17 GB and was out of reach).

# %%
# NBVAL_CHECK_OUTPUT
print(ft.dataset_availability(list(dict.fromkeys([*datasets, *ft.PAPER_DATASETS]))).to_string(index=False))
print("running on:", ", ".join(plan["ready"]), "| not available:", ", ".join(plan["missing"]) or "none")
print(ft.rows_table(methods).to_string(index=False))
unreachable = plan["out_of_reach"]
print(unreachable.to_string(index=False) if not unreachable.empty else "every row runs on every dataset here")

# %% [markdown]
# ## 2. The protocol
#
# Every run draws a new 10/10/80 split of all nodes, a new random partition
# and a new initialisation (the seed draws all three); training uses Adam
# with Table 5's learning rate, weight decay and number of epochs (one
# communication round each); the score is the client-size-weighted test
# accuracy at the **last** round. FedSGD rows take one full-batch gradient
# per client and round (weights $n_i/n$), FedAvg rows (FedGCN) one local step.
# Three baselines follow the official code where the paper says nothing:
# the GraphSAGE and MLP rows start with a LayerNorm on the input features;
# FedSage+ trains NeighGen with the official port's settings (federated
# from the first epoch, 40 epochs on Cora and 30 elsewhere, lr 0.002), then
# **FedSGD** on the mended graphs (the official code trains them with both
# FedAvg, "WA", and FedSGD, "GA", and its table script prints the GA row,
# `fedsage+_GA_GNN`: option `federation="fedsgd"`); FedPub runs with the
# official port's own rounds and learning rate per dataset
# (`ft.FEDPUB_SETTINGS`), not Table 5's, its similarity scale (τ = 3), and
# scores each client's personalised model after the last aggregation, as the
# port does.
# Table 5, with the official code's dropout:

# %%
# NBVAL_CHECK_OUTPUT
print(pd.DataFrame({d: ft.table5(d) for d in plan["ready"]}).to_string())
print(pd.Series(ft.PROTOCOL).to_string())
configs = plan["table2"]
print(f"{len(configs)} runs: {len(plan['ready'])} datasets x clients {num_clients} x seeds {seeds}"
      + (f", {rounds} rounds each" if rounds else ", Table 5's epochs"))

# %% [markdown]
# ## 3. Running Table 2
#
# Each finished run is written to `results.csv` at once; an interrupted run
# resumes where it stopped.

# %%
results = experiment.sweep(configs, out / "results.csv", progress=progress, desc="Table 2")

# %% [markdown]
# Our Table 2 (mean ± population std over runs, %), then the paper's:

# %%
# NBVAL_CHECK_OUTPUT
ours = ft.layout(results)
print(ours.to_string())
ours.to_csv(out / "3_table2.csv")

# %%
display(ft.paper_table("2", datasets=[*plan["ready"], *[d for d in plan["missing"] if d in ft.PAPER_DATASETS]]))

# %% [markdown]
# Side by side: paper, ours, delta and status per cell (`match` when
# |delta| ≤ max(1.5, 2·√(std²_paper + std²_ours))). Cells of rows that are not
# implemented here, and of datasets not available, have no run:

# %%
# NBVAL_CHECK_OUTPUT
comparison = compare.compare(results, "fedstruct", table="2")
ran = comparison[comparison["status"] != "missing"]
print(compare.side_by_side(ft.labelled(ran), rows="row", columns="column").to_string())
print(ran.groupby("status").size().to_string())
absent = ft.not_implemented_rows(plan["not_implemented"], plan["ready"])
print(absent.to_string(index=False) if not absent.empty else "every row asked for is implemented")

# %% [markdown]
# **FedGCN's 5- and 20-client cells are 10-client runs in the official code.**
# `src/simulations/simulation.py` loops over 5, 10 and 20 clients and passes
# the number to `create_clients`, which partitions every other baseline's
# graph with it but FedGCN's with `config.subgraph.num_subgraphs`, 10 in every
# config (`fedGCN_partitioning(graph, config.subgraph.num_subgraphs, ...)` in
# `src/simulations/simulation_utils.py`, commit bbc76caf). The paper's FedGCN
# row is therefore flat in the number of clients by construction. We run the
# number of clients the column names; the like-for-like comparison for the
# 5- and 20-client columns is our 10-client run:

# %%
fedgcn = ran[ran["method"] == "fedgcn_2hop"]
ours_at_10 = fedgcn[fedgcn["num_clients"] == 10].set_index("dataset")["ours_mean"]
print(fedgcn.pivot_table(index="dataset", columns="num_clients", values="paper_mean").rsub(ours_at_10, axis=0)
      .round(2).add_prefix("ours at 10 clients - paper at ").to_string() if not ours_at_10.empty
      else "no 10-client FedGCN-2hop run in this profile")

# %% [markdown]
# **Rows again under the official port's other readings** (`ft.READING_CHECKS`;
# the same seeds, splits, partitions and initialisations, stored under tables
# of their own that the report leaves out), each compared with the paper as
# Table 2 compares it:
#
# * *FedPub on Cora with the rounds of a later config.* FedPub's rounds and
#   learning rate come from the port's own `fedpub:` section of each dataset's
#   config (`ft.FEDPUB_SETTINGS`): commit fbd1ad20, whose 50 rounds on Cora are
#   also those of f3183a1, the commit the digest reads. At commit e97e8e86 the
#   same file says 30 rounds, with the same learning rate, similarity scale and
#   proxy graphs (`ft.FEDPUB_ROUNDS`). The paper does not say which made its
#   cells; Table 2 keeps fbd1ad20's 50.
# * *FedGCN-2hop with the port's exchange* (`ft.FEDGCN_FEATURES`). Table 2's
#   row exchanges what the FedGCN paper (Sec. 3.2, Eq. 3) and FedStruct's text
#   describe, aggregated neighbour sums; every stored version of the port
#   instead extends each client's nodes by two hops and trains on that induced
#   subgraph with the external nodes' raw features (`exchange="features"`).
#   Ten clients only, the port's FedGCN partition (above). The port's FedGCN
#   model changed between commits too (FedGCN's own GCN with 16 hidden units
#   and SGD at lr 0.5; a GraphSAGE on PubMed); both readings keep Table 2's
#   GraphSAGE.
# * *FedStruct with the port's self-loops* (`ft.SELF_LOOPS`, on Cora and
#   CiteSeer). The port's local feature propagation (`obtain_a` in
#   `src/utils/utils.py`, used by `GNNClassifier.set_DGCN_FPM`) adds
#   self-loops with PyG's `add_self_loops(edge_index)` and no `num_nodes`, so
#   they stop at the largest local index that ends an intra-client edge.
#   Every node of a client after it (local order: ascending global id) has an
#   empty row of $\hat A_i^{L}$: no feature embedding, a prediction from the
#   structure branch alone. Under a random partition a client keeps about
#   $1/K^2$ of the edges, so that share grows with $K$ (the table after the
#   checks). It is the one difference we found that acts on FedStruct's rows
#   only and grows with the number of clients, as the paper's CiteSeer rows
#   do (Deg 65.35 → 63.54 → 62.34 while its FedSGD GNN row stays at 63.4-64.6;
#   ours without it stay flat). Table 2 keeps Sec. 3's $\hat A_i =
#   \tilde D_i^{-1}(A^{(i)} + I)$, a loop on every node
#   (`feature_self_loops="all"`); the check runs `"official"`.

# %%
checked_readings = {}  # check table -> its comparison
for check in ft.READING_CHECKS:
    check_runs = plan["checks"].get(check.table, [])
    if not check_runs:
        print(f"{check.label}: no check '{check.reading}' in this profile (its row, datasets or clients are not run, "
              "or rounds replaces Table 5's epochs)")
        continue
    checked = experiment.sweep(check_runs, out / "results.csv", progress=progress, desc=f"{check.label} check")
    checked_readings[check.table] = ft.reading_check(pd.concat([results, checked]), check)
    print(checked_readings[check.table].round(2).to_string(index=False))

# %% [markdown]
# Each check in one number per dataset: the mean |delta| of its cells
# (points) under Table 2's reading and under the port's:

# %%
for table, check_frame in checked_readings.items():
    print(f"{table}:")
    print(check_frame.assign(abs_delta=check_frame["delta"].abs())
          .pivot_table(index="dataset", columns="reading", values="abs_delta", aggfunc="mean").round(2).to_string())

# %% [markdown]
# The nodes the port's self-loops leave without a feature embedding, % of all
# nodes, in this profile's random partitions (mean over its seeds; each seed
# draws its own partition):

# %%
# NBVAL_CHECK_OUTPUT
print(ft.feature_rows_dropped(plan["ready"], num_clients, seeds).to_string())

# %% [markdown]
# What the paper's rows lose from the fewest to the most clients, against ours
# under each reading (points; negative: accuracy falls as clients are added):

# %%
if ft.SELF_LOOPS.table in checked_readings:
    print(ft.change_with_clients(checked_readings[ft.SELF_LOOPS.table]).round(2).to_string(index=False))
else:
    print("no self-loop check in this profile")

# %% [markdown]
# **What the self-loop check showed** (`full`, 10 seeds, 2026-11-28). With
# the port's self-loops, the three CiteSeer cells that were above the paper
# (Deg at 10 clients, Fed⋆ at 10 and 20) match, and every CiteSeer FedStruct
# cell comes closer: the mean |delta| of its 12 cells falls from 1.94 to
# 0.88 points. The paper's fall from 5 to 20 clients is reproduced to within
# about 1.5 points on every row, where Table 2's reading falls 0.8-2.6 points
# less than the paper's. On Cora the cells match under both readings (mean
# |delta| 0.66 and 0.78), and the official reading comes closer to the
# paper's fall on every row (Deg −6.7 against the paper's −6.2; Table 2's
# reading −4.5). On CiteSeer it overshoots the fall of Deg and Fed⋆ by 1.0-1.5
# points. The paper's FedStruct rows were therefore most likely
# computed with this propagation. Table 2 keeps Sec. 3's, which loops every
# node; the share of nodes it concerns is 6 % on Cora and CiteSeer at 20
# clients, 1.3 % on PubMed and under 0.6 % on Chameleon and Photo (the table
# above), so the two readings differ little elsewhere. What remains on
# CiteSeer is a shift shared by every row, Central (+0.7) and the GraphSAGE
# baselines included, which this check does not touch.
#
# **What the FedGCN check showed** (`full`, 10 clients, 10 seeds,
# 2026-11-28, before FedGCN's rows took the input LayerNorm of the other
# GraphSAGE baselines, below; both readings are being run again with it). The port's exchange (each client's nodes extended by two hops,
# the external nodes with their raw features) brings Photo from −2.05 to
# −0.17 points, Chameleon from −5.19 to +0.52 and PubMed from −0.67 to
# +0.50; CiteSeer stays where it was (+1.14, +1.27), and Cora falls from
# −1.48 to −4.46, below the paper. Over the five datasets the mean |delta|
# goes from 2.11 to 1.38. Neither exchange matches every dataset, and the
# port's FedGCN model changed between commits as well (FedGCN's own GCN with
# 16 hidden units and SGD at lr 0.5; a GraphSAGE on PubMed in e97e8e86),
# which both readings here leave at Table 2's GraphSAGE. Table 2 keeps the
# exchange the FedGCN paper and FedStruct's text describe; Photo's three
# FedGCN cells below the paper (−1.9 to −2.2) are the ones this check
# explains best.
#
# **FedGCN's GraphSAGE now starts with the input LayerNorm** of every other
# GraphSAGE baseline (`ft.INPUT_NORM_ALGORITHMS`, with the FedAvg rows'
# `norm_layers="local"`; since 2026-11-28). FedGCN trains with FedAvg, one
# local Adam step a round, where the LayerNorm matters most. Without it,
# Table 6's first Cora runs fell far below the paper: 1-hop at 53.8-58.3
# against 81.6-82.9, and 2-hop under Louvain at 64.3 against 81.9. With it,
# the same seed-0 runs gave 81.6 (1-hop, random) and 85.0 (2-hop, Louvain),
# with the LayerNorm averaged (the rows keep it local).
# The stored versions of the port that train FedGCN with its own GCN and SGD
# cannot have made Table 6. Its later FedGCN server is its FedAvg GNN
# client, and that client has the LayerNorm. The runs without it were
# removed from the store (`ResultStore.forget`); the numbers above are from
# git history.
#
# **Cells off the paper that nothing here explains** (checked 2026-11-28 in
# the port, commits 0fff011f to e97e8e86, and with two-seed runs outside this
# notebook). On PubMed every row that trains on features alone sits above the
# paper: Central +1.7, Local +1.6 to +1.9, FedSGD +0.5 to +0.7. On Photo
# Local is above at 10 and 20 clients (+1.9, +3.6) and matches at 5. The
# port loads both datasets with PyG's classes and no feature transform. It
# splits 10/10/80 once over the whole graph and draws the random partition
# with `np.random.choice(K, n)`. It trains Local with a full-batch Adam step
# per client and epoch and scores the last epoch. All of this is ours too.
# The double softmax and the port's GraphSAGE head (LayerNorm, two SAGE
# layers, a linear layer) raise Photo's Local at 20 clients instead of
# lowering it. PubMed's configs (35 or 50 iterations, dropout 0.5 or 0.9,
# never Table 5's 125 epochs) would explain at most about 0.6 of Central's
# gap, and they raise Local. One Photo config (lr 0.002, weight decay 0.0005,
# commit 688a49fc) lowers every Local cell by about 2 points. That does not
# give the paper's steeper fall with the number of clients. The paper's own
# PubMed numbers are odd too: Central's std is 1.15 (ours 0.21), and its
# Local GNN (Table 6, 75.27) is below its Local MLP (75.98).

# %%
fig = plotting.method_bars(
    results[results.metric == "accuracy"].assign(
        method=lambda f: [ft.row_label(m, s) for m, s in zip(f["method"], f["setting"])]),
    x="method", hue="dataset", ylabel="test accuracy (%)", title="Table 2 (ours): random partition")
plotting.save_figure(fig, out / "3_table2.png")
display(fig)

# %% [markdown]
# ## 4. The paper's claims
#
# As `params/fedstruct/paper.yaml` states them for Table 2, one line per
# claim; judged only on the paper's datasets and numbers of clients (a run with
# another number of clients is a *subset* and is not judged). "(within
# noise)" marks a verdict another draw of seeds could flip; a claim whose
# methods did not all run here has no verdict.

# %%
# NBVAL_CHECK_OUTPUT
display(compare.claims_table(compare.check_claims(results, "fedstruct", tables=["2"])))

# %% [markdown]
# ## 5. What a full Table 2 costs
#
# Each method on the large datasets (PubMed: 19,717 nodes, 125 epochs,
# $L_s = 20$; Photo: 7,650 nodes, 150 epochs), 10 clients, timed twice, with
# `cost_rounds` and twice as many rounds: the difference is the per-round
# cost, the rest the one-off cost (loading, partitioning, FedStruct's Alg. 3,
# FedGCN's exchange). Projected to Table 5's epochs × 3 numbers of clients × 10
# runs. On a shared machine the seconds also measure the other work on it.
#
# **The full profile, measured (2026-11-26, this project's shared two-core CPU
# machine, one thread, CPU seconds of the process, timed outside this
# notebook).** `3_results.full`
# plans 1,400 runs (Amazon-ratings is not offline), 1,280 of them distinct from
# `1_motivation`'s. Seconds per run at Table 5's epochs, 10 clients: PubMed
# FedStruct about 21 (plus 6.4 for Alg. 3, once per partition: the Deg, Fed⋆
# and H2V rows share it), FedSGD GNN 29, Central 39, Local 43, FED-PUB 57,
# FedGCN-2hop 120; Photo FedStruct about 28 (plus 2.8), FedStruct-F 34 (plus
# 12; it was 270 before the unpruned $\bar A$ was applied as $L_s$ products
# with $\hat A$), FedSGD GNN 25, Central 30; Cora, CiteSeer and Chameleon 1-40 (FedGCN-2hop on Chameleon 39).
# Projected from these, the 1,060 runs of measured kinds take **5.9 hours on
# one thread, about 3 on two workers** (`fgl run --workers 2`), 8.3 hours
# before those two changes. Not in that figure: FedSage+ (150 runs), Photo's
# FedGCN-2hop and FED-PUB (60 runs), and FedStruct (H2V)-F on PubMed (30
# runs): its Alg. 3 exchanges PubMed's dense $\hat A^{20}$ (all 389 million
# values) block by block for the ledger, 217-312 GiB of blocks, about 490 s
# of CPU alone with 5 clients; a whole run with 10 clients took 612 CPU s and
# 7.3 GiB at the peak (2026-11-27; seed 0: 85.98 % against the paper's 85.79).
# Its memory estimate (8.9 GB) makes it a heavy run on a 24 GB machine: the
# workers compute one at a time (§1).
# FedSage+ (2026-11-27, one thread, CPU seconds): a reply to a client whose
# loss nodes ask for no generated neighbour is a zero gradient, sent but not
# computed, which cut its NeighGen phase 8-fold (Cora, 20 clients: 1,150 ->
# 141 s a run; 10 clients: 326 -> 79 s). Its memory is every client's fGen
# with Adam's moments at once, and the peers' replies: 12.4 GB resident for
# CiteSeer at 20 clients, so the
# workers compute those runs one at a time (README, "Long sweeps"). Fed⋆'s random-walk features of
# PubMed come from block powers instead of a dense eigendecomposition (130
# CPU s and 0.72 GB at the peak, cached afterwards; the eigendecomposition
# needed about 12 GB).

# %%
if plan["cost"]:
    experiment.sweep(plan["cost"], out / "results.csv", progress=progress, desc="timed runs")
    projection = ft.cost_projection(plan["cost"], ResultStore(out / "results.csv").run_log())
    print(projection.to_string(index=False))
    print(projection.groupby("dataset")["projected hours"].sum().round(1).to_string())
else:
    print("no timed runs in this profile (cost_datasets is empty)")

# %% [markdown]
# ## 6. Report
#
# `comparison.csv` and `claims.csv` gather every table of the paper from all
# rows of this folder's `results.csv` (the other FedStruct notebooks add
# theirs); the counts below cover this notebook's tables, `4_ablations` prints
# the whole report.

# %%
# NBVAL_CHECK_OUTPUT
all_rows = ResultStore(out / "results.csv").read()
report, report_claims = compare.write_report(out, all_rows, "fedstruct")
this_notebook = report[report["table"].isin(["2"])]  # the other notebooks' tables depend on what ran before
print(this_notebook.groupby(["table", "status"]).size().unstack(fill_value=0).to_string())

# %%
print(ResultStore(out / "results.csv").cost().to_string())
