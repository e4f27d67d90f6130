"""Every FGL_* variable is read by fglcore.settings with one parser."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from fglcore import settings as settings_module
from fglcore.settings import SETTINGS, SettingError, setting, settings, switches_in_force

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("text, value", [("1", True), ("ON", True), ("Yes", True), ("true", True), (" 0 ", False),
                                         ("off", False), ("NO", False), ("False", False), ("", True)])
def test_a_switch_accepts_every_usual_spelling_in_any_case(monkeypatch, text, value):
    monkeypatch.setenv("FGL_FLUSH_DENORMAL", text)
    assert setting("flush_denormal") is value


@pytest.mark.parametrize("key", [k for k, s in SETTINGS.items() if s.kind == "switch"])
def test_a_bad_switch_names_the_variable_and_the_accepted_values(monkeypatch, key):
    variable = SETTINGS[key].variable
    monkeypatch.setenv(variable, "2")
    with pytest.raises(SettingError, match=rf"{variable}='2' is not accepted; accepted: one of 1, true, yes, on, "
                                           r"0, false, no, off \(any case\)"):
        setting(key)
    with pytest.raises(SettingError, match=variable):
        settings()  # the whole set is validated at once


@pytest.mark.parametrize("variable, text, accepted", [
    ("FGL_THREADS", "two", "an integer >= 0"), ("FGL_THREADS", "-1", "an integer >= 0"),
    ("FGL_THREADS", "1.5", "an integer >= 0"),
    ("FGL_CHECKPOINT_SECONDS", "-5", "a number of seconds >= 0"),
    ("FGL_DOWNLOAD_TIMEOUT", "0", "a number of seconds > 0"), ("FGL_DOWNLOAD_TIMEOUT", "soon", "a number of seconds > 0"),
])
def test_numbers_are_validated(monkeypatch, variable, text, accepted):
    monkeypatch.setenv(variable, text)
    with pytest.raises(SettingError, match=re.escape(f"{variable}={text!r} is not accepted; accepted: {accepted}")):
        settings()


def test_defaults_numbers_and_folders(monkeypatch, tmp_path):
    for spec in SETTINGS.values():
        monkeypatch.delenv(spec.variable, raising=False)
    values = settings()
    assert values == {spec.key: spec.default for spec in SETTINGS.values()}
    assert values["checkpoint_seconds"] == 600.0 and values["download_timeout"] == 15.0 and values["threads"] == 0
    monkeypatch.setenv("FGL_CHECKPOINT_SECONDS", "0")
    monkeypatch.setenv("FGL_THREADS", "3")
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror" / ".."))
    assert setting("checkpoint_seconds") == 0.0 and setting("threads") == 3
    assert setting("data_mirror") == tmp_path.resolve()
    with pytest.raises(KeyError, match="no setting 'colour'"):
        setting("colour")


def test_switches_in_force_are_the_recorded_settings_with_the_threads_in_use(monkeypatch):
    monkeypatch.setenv("FGL_SPARSE_FEATURES", "off")
    monkeypatch.delenv("FGL_GRAPH_FAST", raising=False)
    record = switches_in_force()
    assert list(record) == settings_module.RECORDED
    assert set(record) == {"threads", "flush_denormal", "sparse_features", "graph_fast", "native"}
    assert record["sparse_features"] == "0" and record["graph_fast"] == "1"
    assert record["threads"] == str(torch.get_num_threads())
    assert all(SETTINGS[k].recorded for k in record)
    assert {k for k, s in SETTINGS.items() if s.changes_numbers} <= set(record)


def test_no_module_reads_an_fgl_variable_but_settings():
    """One parser: every FGL_* name in the package is declared in SETTINGS, and only settings.py reads os.environ for it."""
    declared = {spec.variable for spec in SETTINGS.values()}
    for path in (REPO / "fglcore").rglob("*.py"):
        text = path.read_text()
        for name in set(re.findall(r"\bFGL_[A-Z_]+\b", text)):
            assert name in declared, f"{path.relative_to(REPO)} mentions {name}, which fglcore.settings does not declare"
        if path.name != "settings.py":
            assert not re.search(r"environ(\.get)?\W+[\"']FGL_", text), f"{path.relative_to(REPO)} reads FGL_* itself"
