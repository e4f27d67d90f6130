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
# # FedSpray, Table 2: overall and minority accuracy
#
# FedSpray (Fu et al., KDD 2024) keeps a **personalized GNN** on every client and
# trains, across clients, a light **feature–structure encoder** plus one
# **structure proxy** $\mathbf s_j$ per class. The encoder's soft targets
# $p_i = \mathrm{softmax}(g_p(g_e(x_i) + s_i))$ regularise each client's GNN
# (Eq. 7):
#
# $$\mathcal L_G^{(k)} = \frac{1}{|\mathcal V_L^{(k)}|}\sum_{v_i\in\mathcal V_L^{(k)}}\mathrm{CE}(y_i,\hat y_i)
#   + \lambda_1 \frac{1}{|\mathcal V^{(k)}|}\sum_{v_i\in\mathcal V^{(k)}}\mathrm{KL}(p_i\,\Vert\,\hat y_i).$$
#
# The paper's Table 2 compares it with six baselines on four datasets and
# three backbones. Two numbers per cell, both pooled over all clients' test
# nodes and read at the round with the lowest pooled validation loss:
#
# * **Overall** accuracy $\sum_k \#\{\text{correct test nodes of } k\} / \sum_k |\mathcal V^{(k)}_{\text{test}}|$;
# * **Minority** accuracy: the same over test nodes whose class is *not* their
#   client's majority class $m_k = \arg\max_c |\{v\in\mathcal V^{(k)}_{\text{train}}: y_v = c\}|$.
#
# The paper's claim: FedSpray beats every baseline on both, and by a notable
# margin on minority nodes. This notebook runs the grid with `fglcore`, sets
# our numbers next to the paper's and checks the claims. (FedSpray as another
# paper, O-pFGL, ran it is in `notebooks/opfgl/3_results`.)

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/fedspray
datasets = ["PubMed", "WikiCS", "Physics", "Flickr", "Cora", "CiteSeer", "Chameleon"]  # paper datasets, then stand-ins; missing ones (WikiCS, Flickr) are skipped
stand_in_clients = 7  # clients of a stand-in: its 7 largest Louvain communities (PubMed has 7)
models = ["gcn", "sage"]  # backbones (paper: gcn, sgc, sage)
methods = ["local", "fedavg", "apfl", "gcfl", "fedstar_node", "fedlit", "fedspray"]  # Table 2's rows
variants = ["", "code"]  # FedSpray readings: empty string for the paper Algorithm 1, code for the official code
rounds = 50  # communication rounds (paper: 300)
seeds = [0, 1]  # repetitions (paper: 5)
reading_datasets = ["PubMed"]  # where FedSpray's two readings are compared one code detail at a time (GCN); [] skips
longer_rounds = [500]  # Local, FedAvg and FedSpray again with these rounds (500: the official code's; the paper: 300)
longer_datasets = []  # where they run longer (full: PubMed); [] skips
longer_models = ["sgc"]  # backbones of the longer runs
progress = True  # show progress bars

# %%
import pandas as pd
from IPython.display import display

from fglcore import compare, experiment, paths, plotting, runtime
from fglcore.papers.fedspray import motivation as fm
from fglcore.papers.fedspray import tables as ft
from fglcore.results import ResultStore

plan = ft.results_plan(datasets, stand_in_clients, models, methods, variants, rounds, seeds, reading_datasets,
                       longer_rounds, longer_datasets, longer_models)  # every run below, validated before any runs
out = paths.resolve_output_dir(output_dir, profile, "fedspray")
runtime.set_threads()
plotting.set_style()
pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 30)
pd.set_option("display.max_colwidth", None)  # claim verdicts in full
print(f"profile {profile}: results go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. Data: the paper's datasets and what stands in
#
# The paper partitions PubMed (7 clients), WikiCS, Coauthor-Physics (12) and
# Flickr (20) into Louvain communities and keeps the largest ones; its
# official node lists are in the mirror (`FedSpray/partition`) and are used
# whenever the dataset itself is available. **PubMed and Physics are in the
# mirror: Table 2 is judged on the paper's own data and clients there.**
# WikiCS and Flickr are not available offline; their columns stay as the
# paper's reference. Cora, CiteSeer and Chameleon also run, as **stand-ins**
# partitioned by the paper's recipe (the `stand_in_clients` largest Louvain
# communities, each one client, `louvain_largest`): Cora's seven largest
# communities have 158–390 nodes, so every client keeps some minority test
# nodes, and Chameleon is heterophilous. Their verdicts are labelled
# stand-in throughout; §6 compares their clients with the paper's.

# %%
# NBVAL_CHECK_OUTPUT
availability = ft.dataset_availability(datasets, stand_in_clients)
print(availability.to_string(index=False))
ready = plan["ready"]
missing = [d for d in datasets if d in ft.PAPER_DATASETS and d not in ready]
stand_ins = [d for d in ready if d not in ft.PAPER_DATASETS]
print(f"paper datasets missing: {', '.join(missing) or 'none'}; standing in: {', '.join(stand_ins) or 'none'}")

# %% [markdown]
# ## 2. The protocol and the two readings of FedSpray
#
# Every method shares the paper's protocol (§5.1; where the paper is silent,
# the official code): 2 layers, 64 hidden units (SGC: one `SGConv(K=2)`),
# Adam with lr 0.003, E = 5 local epochs a round, no dropout or weight
# decay, a random 40/30/30 split inside each client drawn anew for each seed
# while the partition stays fixed. $\lambda_1 = 1$, as the code runs it
# (the paper states 5; the authors' own λ1 curves reproduce Table 2 at 1).
#
# The paper's Algorithm 1 and the official code differ in ways that matter,
# so FedSpray runs twice, told apart by the `setting` column:
#
# | | paper (`setting=""`) | official code (`setting="code"`) |
# |---|---|---|
# | labeled node's proxy | restarts from its class's global proxy $\mathbf s_{y_i}$ each round | a per-node vector kept across rounds, never reset from $\mathbf S$ |
# | GNN distils on | all nodes (Eq. 6) | training nodes + unlabeled nodes with projector confidence > 0.7 |
# | local projector $g_q$ starts from | the global $g_q$ | the global classifier $g_p$ |
# | GNN / encoder initialisation | PyG / PyTorch defaults | $U[0,1)$ / the code's uniform layers |
#
# The paper's reading distils every node towards the encoder's soft target,
# including unlabeled nodes whose proxy $q_i^\top\mathbf S$ comes from a
# feature-only guess; where that guess is poor the GNN is pulled towards
# wrong labels. The code keeps only confident nodes and lets each labeled
# node learn its own proxy. Our results show which of the two behaves as
# Table 2 says.

# %%
# NBVAL_CHECK_OUTPUT
print(pd.Series(ft.PROTOCOL).to_string())
print(f"this run: rounds={rounds}, seeds={seeds}, backbones={models}")
print("official-code options:", ft.CODE_OPTIONS)
configs = plan["table2"]
print(ft.count_runs(configs).to_string(index=False))

# %% [markdown]
# ## 3. Running Table 2
#
# Each finished run is written to `results.csv` at once; an interrupted run
# resumes where it stopped.

# %%
results = experiment.sweep(configs, out / "results.csv", progress=progress, desc="Table 2")

# %% [markdown]
# Our Table 2, in the paper's layout (mean ± std over seeds, %):

# %%
# NBVAL_CHECK_OUTPUT
ours = ft.layout(results, row_order=methods)
print(ours.to_string())
ours.to_csv(out / "3_table2.csv")

# %% [markdown]
# The paper's Table 2 for comparison. Where a paper dataset ran here, the
# side-by-side table below gives paper, ours, delta and status
# (`match` when |delta| ≤ max(1.5, 2·√(std²_paper + std²_ours))).

# %%
display(ft.paper_table("fedspray", "2", row_order=ft.TABLE2_METHODS))
comparison = compare.compare(results, "fedspray", table="2")
coinciding = comparison[comparison["status"] != "missing"]
if coinciding.empty:
    print("no paper dataset ran here: the paper's numbers above stand alone; ours are on the stand-ins")
else:
    display(compare.side_by_side(ft.labelled(coinciding), rows=("dataset", "method", "model"), columns="metric"))

# %% [markdown]
# ## 4. How far is each method from FedAvg?
#
# Gaps in points (ours; positive = better than FedAvg with the same
# backbone). The paper's PubMed/GCN row reads FedSpray +0.65 overall and
# +6.35 on minority nodes.

# %%
# NBVAL_CHECK_OUTPUT
print(ft.gaps(results, {"method": "fedavg"}).round(2).to_string())

# %%
fig = plotting.method_bars(
    results[results.metric == "minority_accuracy"].assign(
        method=lambda f: [ft.method_label(m, s) for m, s in zip(f["method"], f["setting"])]),
    x="method", hue="dataset", ylabel="minority accuracy (%)", title="Table 2: minority nodes")
plotting.save_figure(fig, out / "3_table2_minority.png")
display(fig)

# %% [markdown]
# ### Which round is reported?
#
# Every method is read at the round with the lowest pooled validation loss
# (the official code's rule; the paper does not say). Without dropout or
# weight decay a personalised GNN that trains E = 5 epochs a round can reach
# that minimum within a few rounds and then overfit, so a method whose
# benefit needs many rounds (FedSpray's proxies are aligned on the server
# once per round) may be read before the benefit arrives. Mean, min and max
# of the selected round over seeds:

# %%
# NBVAL_CHECK_OUTPUT
print(ft.selected_rounds(results).to_string())

# %% [markdown]
# GCFL is FedAvg until its first cluster split (the mean client update norm
# below ε1 = 0.05 while the largest is above ε2 = 0.1, after 20 rounds).
# Methods whose numbers equal FedAvg's in every seed were read before any
# such difference arose. A side run of Table 2's GCFL/GCN configuration,
# seed 0 (`experiment.run_full(config)[1].extras["splits"]`), shows both
# ways this happens: on PubMed no cluster splits in 300 rounds, so GCFL *is*
# FedAvg there; on Cora the first split comes at round 288, long after the
# selected round 33. The paper's GCFL rows differ from its FedAvg rows, so
# its GCFL split, or ran with other thresholds; the paper gives neither.

# %%
# NBVAL_CHECK_OUTPUT
identical = ft.same_as(results, "fedavg")
print(identical.to_string(index=False) if not identical.empty else "none")

# %% [markdown]
# ## 5. The paper's claims
#
# The claims of Table 2 as `params/fedspray/paper.yaml` states them, each
# checked per dataset and backbone, one line per claim. They are judged only
# on the paper's datasets and on the stand-ins `paper.yaml` names (column
# `data`); "(within noise)" marks a verdict whose margin another draw of
# seeds could flip, and "without data" a group where a method did not run.

# %%
# NBVAL_CHECK_OUTPUT
display(compare.claims_table(compare.check_claims(results, "fedspray", tables=["2"])))

# %% [markdown]
# ## 6. Real data and stand-ins: when do structure proxies help?
#
# The paper's explanation of its gains (§3, Table 1) is about the clients:
# each is dominated by one class, and its minority nodes sit among majority
# neighbours, so message passing pulls them towards the wrong class; the
# global class-wise proxies are meant to pull them back. Whether the
# clients look like that is measured below, for every dataset that ran: the
# majority class's share of a client's nodes (label skew), the share of
# minority nodes, and the average node homophily of each group on the
# client's subgraph (means over clients).

# %%
# NBVAL_CHECK_OUTPUT
profiles = fm.client_profiles(ready, stand_in_clients)
print(profiles.round(3).to_string(index=False))

# %% [markdown]
# FedSpray's lead over the best other method of the same backbone (points;
# positive = FedSpray wins, as Table 2 claims), with the method that is
# best otherwise:

# %%
# NBVAL_CHECK_OUTPUT
margins = ft.fedspray_margins(results).merge(profiles[["dataset", "role"]], on="dataset")
print(margins.round(2).to_string(index=False))

# %% [markdown]
# How to read it. The paper's datasets have strongly skewed clients (on the
# official partitions about four in five of a client's nodes are in its
# majority class) whose majority nodes are very homophilous, while Cora's and
# CiteSeer's seven largest communities are mixed (about two in three) and
# Chameleon's are not dominated by any class. So the stand-ins are a weaker
# test of the mechanism, and their verdicts must not be read as the paper's.
#
# What is known about the stand-in gap from outside this notebook (a
# side-by-side run reported in the issue tracker, issue 28; the script is not
# part of this repository): the official code (xbfu/FedSpray), run on our
# 7-client Cora partition and splits from our initial weights, selects the
# same round and gives the same test numbers as our official-code reading
# (`fedspray [code]`) on all five seeds; from its own initial weights it also
# loses to FedAvg on Cora minority accuracy (46.9 vs 54.1 over five seeds;
# also with 10 clients and with λ1 = 5). On Cora the gap is the method's,
# not our implementation's. On PubMed and Physics, the table in §3 and the
# claims in §5 are the verdict on the paper's own data.

# %% [markdown]
# ## 7. Gaps to the paper, detail by detail
#
# ### FedSpray: which detail of the official code separates the two readings?
#
# The two readings differ in five details (§2). Each is switched alone:
# the paper's reading plus one detail of the code (`paper+…`, points gained
# over the paper's reading) and the code's reading minus one detail
# (`code-…`, points lost against the code's reading). Everything else is
# the same in both readings and in the official code: the round reported
# (lowest pooled validation loss), the model evaluated on test (each
# client's personalised GNN), the server's proxy alignment (Eq. 15) and the
# KD weights λ1 = λ2 = 1. GCN, on `reading_datasets`:

# %%
reading_configs = plan["readings"]
readings = experiment.sweep(reading_configs, out / "results.csv", progress=progress, desc="Readings")

# %%
# NBVAL_CHECK_OUTPUT
steps = ft.reading_steps(readings)
print(steps.round(2).to_string(index=False) if not steps.empty else "reading_datasets is empty or not available here")

# %% [markdown]
# A detail whose `paper+` row moves overall accuracy towards the code's
# reading, and whose `code-` row moves it back, is where the paper's text
# and the authors' code part ways in what they compute.
#
# ### SGC on PubMed: read at the last round
#
# In §4 every SGC run on PubMed is read at round 300, the last one: its
# pooled validation loss is still falling, so the model has not converged
# (one linear layer on $\hat A^2 X$, PubMed's small TF-IDF values, lr
# 0.003; on Physics SGC is read at rounds 40-300). The paper says 300
# rounds (§5.1); the official code runs `server.train(rounds=500)`. Local,
# FedAvg and FedSpray (both readings) run again with `longer_rounds` on
# `longer_datasets` and `longer_models`, everything else equal, next to
# Table 2's runs and the paper's numbers (mean over seeds):

# %%
longer = experiment.sweep(plan["longer"], out / "results.csv", progress=progress, desc="Longer runs")

# %%
# NBVAL_CHECK_OUTPUT
effect = ft.rounds_effect(pd.concat([results, longer]), rounds, compare.paper_entries("fedspray", "2"))
print(effect.round(2).to_string(index=False) if not effect.empty else "longer_datasets is empty or not available here")

# %% [markdown]
# What the full profile's rows show (PubMed, SGC, five seeds). At 300 and
# 500 rounds every run is read at its last round. At 1000 rounds FedSpray
# and Local have converged (mean selected round 957 and 691 for FedSpray's
# two readings, 637 for Local) and FedAvg is still read at its last round.
# With 1000 rounds FedSpray's cells match the paper's in both readings
# (overall/minority 87.4/58.6 and 88.0/57.8; paper 87.1/59.2) and so do
# FedAvg's (83.7/55.5; paper 82.2/56.2), and FedSpray then *leads* FedAvg
# on minority nodes, by 3.0 and 2.2 points (per-seed differences 3.0 ±
# 1.7 and 2.2 ± 1.5), where at 300 rounds it trails by 7.9 and 8.9. Local
# is the exception: its minority accuracy matches the paper's at 300 rounds
# (41.3; paper 40.8) and rises to 50.0 with longer training. So the paper's
# SGC block looks like FedSpray and FedAvg trained far longer than the 300
# rounds of §5.1 (longer than the code's 500, too) beside a Local row that
# was not. The verdicts of §5 keep the stated protocol (300 rounds); this
# table is the evidence for the SGC gap and for where it closes.
#
# ### The paper's baselines: how close is FedStar to a majority-class predictor?
#
# Pooled accuracy mixes majority and minority nodes:
# $O = (1-m)\,A_{maj} + m\,A_{min}$, with $m$ the minority share of the
# test nodes (`minority_share_pooled` in §6). Solving for $A_{maj}$ turns
# Table 2's two numbers per cell into the accuracy on majority nodes. A
# model that predicts its client's majority class everywhere scores
# $A_{maj}=100$ and $A_{min}=0$.

# %%
# NBVAL_CHECK_OUTPUT
paper_rows = compare.paper_entries("fedspray", "2").rename(columns={"mean": "value"})
implied = ft.majority_node_accuracy(paper_rows[paper_rows["setting"] == ""], profiles).assign(source="paper")
implied = pd.concat([implied, ft.majority_node_accuracy(results, profiles).assign(source="ours")])
print(implied.round(2).to_string(index=False) if not implied.empty else "no paper dataset ran here")

# %% [markdown]
# In the paper's table FedStar has the highest majority-node accuracy
# (98.5-99.6 %) and the lowest minority accuracy of every cell (PubMed
# 8-19 %, Physics 33-45 %): close to a classifier that predicts each client's
# majority class, most of all on PubMed. Ours, the architecture of FedStar's
# paper adapted to nodes (structure encoder shared, feature encoder
# personal; `fedstar_node`), also learns the minority nodes, so it sits far
# above the paper's row. The authors' repository holds FedSpray only, not
# their baselines, so which of their settings produced this cannot be
# checked; that their FedStar barely learned minority nodes is in their own
# numbers. The same identity puts the paper's FedLit lowest on majority
# nodes in five of the six cells (60.7 % on PubMed/GCN): an under-trained
# model rather than a minority-blind one, where ours trains like the
# others.

# %% [markdown]
# ## 8. Report
#
# `comparison.csv` and `claims.csv` gather every table of the paper from all
# rows of this folder's `results.csv` (the other FedSpray notebooks add
# theirs); the counts below cover this notebook's tables, `4_ablations` prints
# the whole report.

# %%
# NBVAL_CHECK_OUTPUT
all_rows = ResultStore(out / "results.csv").read()
report, report_claims = compare.write_report(out, all_rows, "fedspray")
this_notebook = report[report["table"].isin(["2"])]  # the other notebooks' tables depend on what ran before
print(this_notebook.groupby(["table", "status"]).size().unstack(fill_value=0).to_string())

# %% [markdown]
# What the runs in `results.csv` cost, from the run index beside it: runs
# computed and copied from another table, compute hours summed over runs
# (what an interrupted, resumed or parallel sweep cannot show on one clock),
# the wall hours during which at least one run was computing (parallel
# workers' runs count once, the idle time between sessions not at all), and
# when the first and last were stored.

# %%
print(ResultStore(out / "results.csv").cost().to_string())

# %% [markdown]
# Seconds per run of Table 2, per dataset, method and backbone, on the
# device that computed it (CPU runs on one thread; runs on a GPU machine
# shared it with 14 others). Physics, with 8,415 sparse feature columns and
# 12 clients, costs several times PubMed; FedStar and FedLit cost most.

# %%
print(ResultStore(out / "results.csv").seconds_per_run(results).to_string(index=False))
