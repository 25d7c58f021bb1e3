"""MonitorSpec: every setting checked once (Python and CLI words), one list of settings for the
monitor, replay, the CLI and the service, JSON round trips that re-run to the same looks, the
spec on every anytime-valid Ranking, and saved state of the first format still loading."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import rankci
from rankci.cli import main
from rankci.method import MethodSpec
from rankci.sequential import Monitor, replay
from rankci.sequential.spec import SETTINGS, MonitorSpec, spec_from_dict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: For every setting: values that must be refused (and one that must be accepted).
INVALID = {
    "alpha": [0, 1, 1.5, -0.1, "0.05", True, None],
    "sampling": ["bootstrap", "", None, 1],
    "n_items": [0, -3, 2.5, True, "100"],
    "bet": ["kelly", None],
    "lam": [0, 0.95, -0.2, True, "0.25"],
    "grid": [(), (0.5, 1.2), (0.0,), "0.1", 0.25, {"a": 0.1}],
    "eps": [0, 1, 1.5, True, None],
    "certifier": ["magic", None],
    "retire": ["sometimes", None],
    "k": [0, -1, 1.5, True, "2"],
    "width": [-1, 0.5, True, None],
    "look_every": [0, -5, 2.5, True, "0%", "150%", "often", ""],
    "freeze": ["sometimes", 1, 0, None, "on"],
    "entry": ["ajar", None, True, "open"],  # "open" with the default sampling finite: refused
}
VALID = {
    "alpha": 0.1,
    "sampling": "iid",
    "n_items": 300,
    "bet": "fixed",
    "lam": 0.3,
    "grid": [0.1, 0.2],
    "eps": 0.05,
    "certifier": "shortcut",
    "retire": "resolved",
    "k": 2,
    "width": 1,
    "look_every": "5%",
    "freeze": False,
    "entry": "closed",
}


def test_every_setting_is_tested():
    assert set(INVALID) == set(SETTINGS) == set(VALID)
    assert SETTINGS == tuple(f.name for f in dataclasses.fields(MonitorSpec))


@pytest.mark.parametrize("name", sorted(INVALID))
def test_an_invalid_value_is_refused_naming_the_setting(name):
    for value in INVALID[name]:
        with pytest.raises(ValueError, match=rf"\b{name}\b") as info:
            MonitorSpec(**{name: value})
        assert str(info.value).startswith((name, f"unknown {name}")), str(info.value)
        # the monitor and replay refuse it the same way, when they are given the keyword
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            Monitor(["a", "b", "c"], **{name: value})
    spec = MonitorSpec(**{name: VALID[name]})
    assert getattr(spec, name) == (tuple(VALID[name]) if name == "grid" else VALID[name])


def test_cross_setting_and_model_checks():
    for rule in ("topk", "topk-safe", "stop-at-goal"):
        with pytest.raises(ValueError, match=f"retire='{rule}' needs k"):
            MonitorSpec(retire=rule)
    with pytest.raises(ValueError, match=r"k must be smaller than the number of models \(3\)"):
        Monitor(["a", "b", "c"], k=3, sampling="iid")
    with pytest.raises(ValueError, match="percentage of n_items"):
        Monitor(["a", "b"], sampling="iid", look_every="5%")
    assert Monitor(["a", "b"], n_items=200, look_every="5%").look_every == 10


def test_values_are_normalised():
    spec = MonitorSpec(alpha=1 / 8, grid=[0.1, 0.2], look_every="25", freeze=np.True_,
                       k=np.int64(2), retire="topk")  # fmt: skip
    assert spec.grid == (0.1, 0.2) and spec.look_every == 25 and spec.freeze is True
    assert type(spec.k) is int and spec.look_every == MonitorSpec(look_every=25).look_every
    assert MonitorSpec(look_every=" 3% ").look_every == "3%"


def test_monitor_takes_the_spec_or_its_keywords():
    spec = MonitorSpec(sampling="iid", certifier="exact", retire="topk", k=1, look_every=50)
    by_keywords = Monitor(["a", "b", "c"], sampling="iid", certifier="exact", retire="topk", k=1,
                          look_every=50)  # fmt: skip
    by_spec = Monitor(["a", "b", "c"], spec)
    assert by_spec.spec is spec and by_keywords.spec == spec
    x = (np.random.default_rng(5).random((600, 3)) < [0.7, 0.5, 0.3]).astype(float)
    by_spec.update_block(x)
    by_keywords.update_block(x)
    assert by_spec.looks == by_keywords.looks and len(by_spec.looks) >= 2
    assert Monitor(["a", "b", "c"], spec, k=1).spec is spec  # an agreeing keyword is accepted
    with pytest.raises(ValueError, match=r"conflicts with the spec's k=1.*spec.replace\(k=2\)"):
        Monitor(["a", "b", "c"], spec, k=2)
    with pytest.raises(TypeError, match="unexpected keyword 'betting'"):
        Monitor(["a", "b", "c"], betting="ons")
    with pytest.raises(TypeError, match="spec must be a MonitorSpec"):
        Monitor(["a", "b", "c"], {"alpha": 0.1})
    with pytest.raises(ValueError, match="conflicts"):
        replay(rankci.Scores.from_matrix(x), spec, alpha=0.1)


def test_every_anytime_valid_ranking_carries_the_spec():
    x = (np.random.default_rng(6).random((400, 4)) < [0.75, 0.6, 0.5, 0.3]).astype(float)
    mon = Monitor(["a", "b", "c", "d"], n_items=400, look_every=40)
    mon.update_block(x[:200])
    look = mon.look()
    assert look.spec is mon.spec and look.spec.n_items == 400
    assert look.to_dict()["spec"] == {**mon.spec.to_dict(), "flow": "anytime"}
    run = replay(rankci.Scores.from_matrix(x), look_every="7%", order_seed=2)
    assert run.spec is run.ranking.spec
    # the spec the monitor ran: N and the look schedule of this replay, resolved
    assert run.ranking.spec == MonitorSpec(n_items=400, look_every=28)
    assert run.ranking.to_dict()["spec"]["look_every"] == 28
    fixed = rankci.rank(rankci.Scores.from_matrix(x))
    assert isinstance(fixed.spec, MethodSpec) and "flow" not in fixed.to_dict()["spec"]


SPECS = [
    MonitorSpec(look_every="5%"),
    MonitorSpec(sampling="iid", bet="fixed", lam=0.4, certifier="shortcut", retire="width",
                width=1, look_every=30, freeze=True),  # fmt: skip
    MonitorSpec(alpha=0.1, grid=(0.05, 0.3), eps=0.05, certifier="exact", retire="topk-safe",
                k=1, look_every="3%", freeze=False),  # fmt: skip
    MonitorSpec(bet="ons", retire="stop-at-goal", k=2, certifier="bonferroni"),
]


@pytest.mark.parametrize("spec", SPECS, ids=range(len(SPECS)))
def test_a_spec_written_to_json_reruns_to_the_identical_looks(spec):
    x = (np.random.default_rng(7).random((500, 5)) < [0.75, 0.6, 0.55, 0.4, 0.3]).astype(float)
    scores = rankci.Scores.from_matrix(x)
    run = replay(scores, spec, order_seed=4)
    for written in (spec.to_dict(), run.ranking.to_dict()["spec"]):
        text = json.dumps(written, allow_nan=False)
        again = spec_from_dict(json.loads(text))
        assert isinstance(again, MonitorSpec)
        rerun = replay(scores, again, order_seed=4)
        assert rerun.looks == run.looks
        assert rerun.ranking.to_dict() == run.ranking.to_dict()
        assert rerun.order == run.order
    # the same run from the keywords (the old call style)
    keywords = {k: v for k, v in spec.to_dict().items() if k not in ("flow", "version")}
    assert replay(scores, order_seed=4, **keywords).looks == run.looks


def test_from_dict_defaults_missing_fields_and_refuses_unknown_ones():
    assert MonitorSpec.from_dict({}) == MonitorSpec()
    assert MonitorSpec.from_dict({"version": 1, "k": 3}).k == 3
    with pytest.raises(ValueError, match="unknown field 'entries'.*its fields are flow, version"):
        MonitorSpec.from_dict({**MonitorSpec().to_dict(), "entries": "open"})
    # entry (issue 29): a dict written before it loads closed; a closed spec writes no entry key
    assert MonitorSpec.from_dict({"version": 1, "alpha": 0.1}).entry == "closed"
    assert "entry" not in MonitorSpec().to_dict()
    with pytest.raises(ValueError, match="version 99, written by a newer rankci"):
        MonitorSpec.from_dict({"version": 99})
    with pytest.raises(ValueError, match="its flow is 'fixed'"):
        MonitorSpec.from_dict({"flow": "fixed"})
    with pytest.raises(ValueError, match="MonitorSpec has no setting 'betting'"):
        MonitorSpec().replace(betting="ons")
    assert spec_from_dict(MethodSpec(test="yuen").to_dict()) == MethodSpec(test="yuen")
    with pytest.raises(ValueError, match="unknown field"):
        spec_from_dict({"test": "t", "k": 2})  # no flow: a MethodSpec, which has no k


def test_describe_says_the_settings():
    text = MonitorSpec(sampling="iid", bet="fixed", lam=0.3, retire="topk", k=2, look_every=10,
                       freeze=False).describe()  # fmt: skip
    for words in ("alpha = 0.05", "sampling iid", "fixed bet (lambda = 0.3)", "retire topk",
                  "k = 2", "a look every 10 items", "exact mode"):  # fmt: skip
        assert words in text, words


def test_order_seed_is_the_one_name_of_the_item_order():
    x = (np.random.default_rng(8).random((60, 3)) < 0.5).astype(float)
    items = [f"q{i}" for i in range(60)]
    scores = rankci.Scores.from_matrix(x, items=items)
    expected = [sorted(items)[p] for p in np.random.default_rng(5).permutation(60)]
    assert list(replay(scores, order_seed=5).order) == expected
    assert list(replay(scores).order) == [sorted(items)[p] for p in np.random.default_rng(0).permutation(60)]  # noqa: E501
    with pytest.raises(TypeError, match="seed"):  # one name: no pre-release alias
        replay(scores, seed=5)
    with pytest.raises(ValueError, match="order_seed must be an integer"):
        replay(scores, order_seed="5")


# ---------------------------------------------------------------------- the command line
@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    x = (np.random.default_rng(3).random((40, 3)) < [0.7, 0.5, 0.3]).astype(float)
    path = tmp_path_factory.mktemp("spec") / "small.csv"
    rankci.Scores.from_matrix(x).to_frame().to_csv(path, index=False)
    return path


#: Per flag: an invalid value and what the error must say (argparse's, or the spec's in flags).
CLI_INVALID = {
    "alpha": (["--alpha", "1.5"], "--alpha must be"),
    "sampling": (["--sampling", "bootstrap"], "argument --sampling: invalid choice"),
    "bet": (["--bet", "kelly"], "argument --bet: invalid choice"),
    "lam": (["--lam", "0.95"], "--lam must be a bet in (0, 0.9]"),
    "grid": (["--grid", "0.5,1.2"], "--grid value must be a bet"),
    "eps": (["--eps", "1"], "--eps must be"),
    "certifier": (["--certifier", "magic"], "argument --certifier: invalid choice"),
    "retire": (["--retire", "sometimes"], "--retire 'sometimes': unknown retirement rule"),
    "k": (["--retire", "topk", "--k", "0"], "--k must be an integer >= 1"),
    "width": (["--retire", "width:-1"], "the T of --retire width:T must be an integer >= 0"),
    "look_every": (["--look-every", "150%"], "--look-every '150%': the percentage"),
    "freeze": (["--freeze", "sometimes"], "argument --freeze: invalid choice"),
    "entry": (["--entry", "fixed"], "argument --entry: invalid choice"),
}


@pytest.mark.parametrize("name", sorted(CLI_INVALID))
def test_the_cli_refuses_an_invalid_setting_naming_its_flag(name, small_file, capsys):
    argv, message = CLI_INVALID[name]
    try:
        status = main(["monitor", str(small_file), *argv])
    except SystemExit as exit_info:  # argparse's own checks
        status = exit_info.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert f"{name}=" not in err and (name == "k" or f" {name} " not in err)  # not the keyword


def test_the_cli_flags_cover_every_setting(small_file, capsys):
    from rankci.cli import build_parser
    from rankci.commands.monitor import setting_flags

    flags = setting_flags()
    # N: from the data (--entry open: the open-entry levels; no model joins in a table)
    assert set(CLI_INVALID) == set(flags) == set(SETTINGS) - {"n_items"}
    parser = build_parser()
    monitor = next(
        a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "monitor"
    )[1]
    options = {s for action in monitor._actions for s in action.option_strings}
    for name, flag in flags.items():
        assert flag.split()[0] in options, (name, flag)
    argv = ["monitor", str(small_file), "--format", "json", "--lam", "0.4", "--bet", "fixed",
            "--grid", "0.1,0.2", "--eps", "0.05", "--order-seed", "3", "--look-every", "10"]  # noqa: E501
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    spec = MonitorSpec(bet="fixed", lam=0.4, grid=(0.1, 0.2), eps=0.05, look_every=10)
    expected = replay(rankci.read_scores(small_file), spec, order_seed=3).to_dict()
    assert payload["looks"] == expected["looks"] and payload["order_seed"] == 3
    assert payload["lam"] == 0.4


# ---------------------------------------------------------------------- saved state
def _fixture_items() -> np.ndarray:
    # as tests/fixtures/monitor_state_v1/make_state.py draws them
    return (np.random.default_rng(2024).random((400, 4)) < [0.7, 0.55, 0.5, 0.3]).astype(float)


FIXTURE_SETTINGS = dict(alpha=0.1, n_items=400, grid=(0.05, 0.2, 0.4), lam=0.3, eps=0.02,
                        certifier="exact", retire="topk-safe", k=1, look_every=20,
                        freeze=True)  # fmt: skip


def test_state_saved_before_the_spec_still_loads_and_continues_exactly():
    path = FIXTURES / "monitor_state_v1" / "state.npz"
    with np.load(path) as data:
        assert json.loads(str(data["meta"]))["config"]["format"] == "rankci-monitor-1"
    restored = Monitor.restore(path)
    assert restored.spec == MonitorSpec(**FIXTURE_SETTINGS)
    assert restored.t == 150 and restored.models == ("a", "b", "c", "d")
    # the file froze the reverses of certified pairs too (before issue 25): they stay frozen
    # at their saved wealth, every other pair continues exactly
    old_reverses = restored._wealth.frozen_pairs & restored._dominance.T
    assert old_reverses.sum() == 3
    saved = restored.log_wealth()
    x = _fixture_items()
    whole = Monitor(["a", "b", "c", "d"], **FIXTURE_SETTINGS)
    whole.update_block(x)
    restored.update_block(x[150:])
    assert restored.looks == whole.looks and restored.retired == whole.retired
    same = ~old_reverses
    assert np.array_equal(restored.log_wealth()[same], whole.log_wealth()[same], equal_nan=True)
    assert np.array_equal(restored.log_wealth()[old_reverses], saved[old_reverses])
    assert restored.ranking().to_dict() == whole.ranking().to_dict()


def test_saved_state_records_the_spec(tmp_path):
    spec = MonitorSpec(sampling="iid", bet="agrapa", certifier="shortcut", look_every=25,
                       freeze=True, eps=0.03)  # fmt: skip
    mon = Monitor(["a", "b", "c"], spec)
    mon.update_block(np.random.default_rng(1).random((60, 3)))
    mon.save(tmp_path / "state.npz")
    with np.load(tmp_path / "state.npz") as data:
        config = json.loads(str(data["meta"]))["config"]
    assert config["format"] == "rankci-monitor-2" and config["spec"] == spec.to_dict()
    again = Monitor.restore(tmp_path / "state.npz")
    assert again.spec == spec and again.ranking().spec == spec


@pytest.mark.parametrize("spec", SPECS, ids=range(len(SPECS)))
def test_the_flags_of_a_spec_give_the_spec_back(spec):
    from rankci.cli import build_parser
    from rankci.commands.monitor import monitor_spec

    spec = spec.replace(alpha=1 / 3, look_every=spec.look_every or 40)
    args = build_parser().parse_args(["monitor", "scores.csv", *spec.to_flags()])
    assert monitor_spec(args) == spec


def test_the_package_names_are_the_functions_after_the_submodules_are_imported():
    import importlib
    import types

    importlib.import_module("rankci.sequential.replay")  # binds the submodule's name too
    import rankci.sequential as package
    from rankci.sequential import replay as function

    assert isinstance(function, types.FunctionType) and function is package.replay
    assert function.__module__ == "rankci.sequential.replay"
    assert package.MonitorSpec is MonitorSpec and "MonitorSpec" in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        package.nothing  # noqa: B018
