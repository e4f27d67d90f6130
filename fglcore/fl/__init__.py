"""The federated engine: channel and ledger, aggregation, secure aggregation, round loop."""
from fglcore.fl.channel import Channel, Ledger, Message
from fglcore.fl.engine import Client, RunResult, Server, TrainingDiverged, run_rounds
from fglcore.fl.secure import SecureAggregator

__all__ = ["Channel", "Ledger", "Message", "Client", "Server", "RunResult", "TrainingDiverged", "run_rounds", "SecureAggregator"]
