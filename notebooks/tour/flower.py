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
# # The same run in one process and on Flower
#
# Every other notebook simulates its clients inside one Python process: fast, and what sweeps need. A real
# federation runs each data owner on its own machine. [Flower](https://flower.ai) is the field's standard
# engine for that:
#
# * a **SuperLink** (the coordinator's server) relays messages;
# * a **SuperNode** on each data owner's machine pulls the messages addressed to it and runs the **ClientApp**
#   on them, with the owner's data;
# * the **ServerApp** (beside the SuperLink) decides what to send to whom.
#
# `fglcore.fl.flower` runs fglcore's own `Client` and `Server` objects there, unchanged: each client becomes
# the ClientApp of its own SuperNode (which loads only that client's file), and the round loop
# `run_rounds` itself runs in the ServerApp, whose stand-in clients turn every call into a Flower message.
# Here both engines run the same configuration: the numbers, the ledger and the bytes Flower carried, side
# by side. The SuperLink and SuperNodes are real OS processes on 127.0.0.1 (insecure mode, local only; the
# README's "Run across machines" shows the same pieces on separate machines, with TLS).

# %% tags=["parameters"]
profile = "quick"  # parameter set of this run: smoke | quick | full
output_dir = ""  # results folder; empty means outputs/<profile>/tour
dataset = "Cora"  # node-classification dataset
algorithm = "fedavg"  # an algorithm whose run is the round loop (fedavg, fedprox, fedspray, fedstar_node, ...)
num_clients = 3  # clients, one SuperNode each
rounds = 3  # communication rounds
local_epochs = 1  # local epochs per round
seed = 0  # seed of the run
message_timeout = 300.0  # seconds the server waits for a client's reply before reporting it lost

# %%
import tempfile
import time

import pandas as pd
from IPython.display import display

from fglcore import paths, runtime
from fglcore.experiment import run_full
from fglcore.papers.tour import flower as tour_flower

try:
    from fglcore.fl.flower import run_on_flower
except ImportError as error:
    raise RuntimeError(f"Flower is not installed ({error}); install it with pip install -e '.[flower]'") from None

config = tour_flower.plan(dataset, algorithm, num_clients, rounds, local_epochs, seed, message_timeout)["config"]
out = paths.resolve_output_dir(output_dir, profile, "tour")
out.mkdir(parents=True, exist_ok=True)
runtime.set_threads()
pd.set_option("display.precision", 6)
print(f"profile {profile}: {algorithm} on {dataset}, {num_clients} clients, {rounds} rounds; "
      f"results go to {paths.display_path(out)}")

# %% [markdown]
# ## 1. In-process
#
# The engine every sweep uses: the server and the clients are objects in this process, and every tensor they
# exchange goes through the channel, which records it in the ledger.

# %%
started = time.perf_counter()
_, local_run = run_full(config)
in_process_seconds = time.perf_counter() - started
print(f"in-process: {in_process_seconds:.1f} s, round {local_run.selected_round} selected, "
      f"test accuracy {local_run.metrics['test_accuracy']:.4f}")

# %% [markdown]
# ## 2. On Flower
#
# `run_on_flower` writes one file per client (its model, optimizer and subgraph, nothing of the others) and
# the server's file, starts a SuperLink and one SuperNode per client, each pointed at its own file and served
# by one long-lived ClientApp process, runs the app with `flwr run`, and stops every process it started.
#
# Two things make the numbers the same. In-process, all clients draw from one global random stream (dropout)
# in the loop's order, so each Flower message carries the global random state and each reply brings it back;
# and the ServerApp sends one message at a time, in the loop's order. The clients therefore train one after
# another, not in parallel: this is a check that the engine's messages are what a real system sends, not a
# faster way to run.

# %%
with tempfile.TemporaryDirectory(prefix="fgl-flower-") as folder:  # job files, logs: not kept
    on_flower = run_on_flower(config, folder, message_timeout=message_timeout)
remote = on_flower.result
print(f"on Flower: {on_flower.seconds:.1f} s in all ({remote.extras['flower_seconds']:.1f} s of rounds), "
      f"round {remote.selected_round} selected")

# %%
side = pd.DataFrame({"in-process": local_run.metrics, "Flower": remote.metrics})
side["difference"] = (side["Flower"] - side["in-process"]).abs()
display(side)
side.to_csv(out / "flower_vs_in_process.csv")

# %%
# NBVAL_CHECK_OUTPUT
same_history = remote.history == local_run.history
same_ledger = remote.ledger.to_frame().equals(local_run.ledger.to_frame())
assert same_history and same_ledger, "Flower and the in-process engine disagree"
print(f"every evaluated round identical: {same_history}; ledgers identical: {same_ledger}")

# %% [markdown]
# ## 3. The ledger and the wire
#
# The ledger counts each tensor's data, `numel * element_size`. On Flower the same tensors travel as NumPy
# arrays (a header of about 128 bytes each), inside records and messages that also carry the round, the
# random state and, in the replies to `evaluate`, the client's predictions on its validation and test nodes,
# which the in-process engine gathers without counting them as communication. Per client, over the run:

# %%
wire = on_flower.wire_vs_ledger()
display(wire)
assert (wire["tensor_download"] == wire["ledger_download"]).all() and (wire["tensor_upload"] == wire["ledger_upload"]).all()

# %% [markdown]
# ## 4. Where the time goes
#
# By default Flower 1.42 starts a fresh ClientApp process for every message, which imports torch and fglcore
# (seconds each). Here each SuperNode runs in Flower's `process` isolation mode with one long-lived ClientApp
# process beside it (`fglcore.fl.flower.worker`), which imports them once and serves every message (it still
# loads the client's saved state, runs the call and saves it again). What remains is Flower's own pace: an idle
# SuperNode asks the SuperLink for work every 3 seconds, so on a small graph each message still costs about
# that much whatever its size (`run_on_flower(..., warm=False)` shows Flower's default):

# %%
messages = on_flower.wire()
per_kind = messages.groupby("kind")["seconds"].agg(["count", "mean", "max"])
display(per_kind)
print(f"per round: {in_process_seconds / rounds:.2f} s in-process, "
      f"{remote.extras['flower_seconds'] / rounds:.1f} s on Flower")

# %% [markdown]
# ## What runs on Flower
#
# Any algorithm whose run is its round loop and whose clients talk only through the server's payloads and
# their updates: FedAvg, FedProx, FedSpray (Algorithm 1), FedStar and most baselines. An algorithm with a loop
# of its own (O-pFGL, FED-PUB, GCFL, ...) or messages sent before the first round is refused with the reason
# (`FlowerUnsupported`). With `secure_aggregation`, Flower's own SecAgg+ runs on the SuperNodes (key
# agreement, secret-shared masks, dropout recovery): the server only sees masked, quantised vectors and their
# weighted mean, which equals fglcore's to the quantisation bound (about 4e-6 per entry with Flower's
# defaults); `secure_aggregation="fglcore"` keeps fglcore's masking, bit for bit as in-process.
