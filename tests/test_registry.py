"""The registries of the paired tests and multiplicity procedures (issue 24).

* **Invalid values.** Every option of every test and procedure, given an invalid value, is refused
  when the method specification is made: through ``MethodSpec(...)``, ``MethodSpec.from_dict``,
  ``rankci.rank(...)`` and the command line (naming the flag, before the data are read). The
  invalid values are listed here by hand (:data:`INVALID`), and a test fails when the registry has
  an option the list does not cover.
* **Completeness.** The registry, ``MethodSpec`` (``TESTS``, ``TEST_OPTIONS``,
  ``MULTIPLICITIES``), the functions the entries name, the command line's flags and the docs
  (docs/guide.md) list the same tests and options.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit

import rankci
from rankci.cli import build_parser, main
from rankci.method import MULTIPLICITIES, MULTIPLICITY_OPTIONS, TEST_OPTIONS, TESTS, MethodSpec
from rankci.registry import MULTIPLICITY_REGISTRY, TEST_REGISTRY
from rankci.simulate import simulate_scores

ROOT = Path(__file__).resolve().parents[1]
CHEMBENCH = ROOT / "src" / "rankci" / "datasets" / "chembench.parquet"
GUIDE = ROOT / "docs" / "guide.md"

#: (kind, entry, option) -> values that must be refused, written by hand from the documented
#: ranges (docs/guide.md). Every option is also tried with values derived from its declaration
#: (:func:`_derived`), so an option added later is covered without an entry here.
INVALID = {
    ("test", "auto", "exact_bound_n"): [-1, 2.5, True, "30", None],
    ("test", "t", "exact_bound_n"): [-1, 2.5, True, "30", None],
    ("test", "z", "exact_bound_n"): [-1, 2.5, True],
    ("test", "wilcoxon", "zero_method"): ["bogus", "zsplit", 1, None],
    ("test", "wilcoxon", "correction"): ["yes", 1, None],
    ("test", "wilcoxon", "distribution"): ["bogus", "normal", None],
    ("test", "yuen", "trim"): [0.9, 0.5, -0.1, math.nan, math.inf, "0.2", True, None],
    ("test", "bootstrap", "reps"): [0, -5, 99.5, True, "99"],
    ("test", "permutation", "reps"): [0, -5, 99.5],
    ("test", "bootstrap-t", "trim"): [0.5, 0.7, -0.2, math.nan, "0.1", None],
    ("test", "bootstrap-t", "reps"): [0, -1, 19.5, True, "199"],
    ("multiplicity", "max-t", "resampling"): ["jackknife", "Gaussian", 1],
    ("multiplicity", "max-t", "draws"): [0, -5, 10.5, True, "1000"],
    ("multiplicity", "max-t", "covariance"): ["robust", "clustered", None],
    ("multiplicity", "max-t", "stepdown"): ["no", 0, None],
    ("multiplicity", "max-t", "small_sample"): ["yes", 2, None],
}

#: (entry, option) -> a value that is allowed (and not the default), written by hand
VALID = {
    ("auto", "exact_bound_n"): 30,
    ("t", "exact_bound_n"): 30,
    ("z", "exact_bound_n"): 5,
    ("wilcoxon", "zero_method"): "pratt",
    ("wilcoxon", "correction"): True,
    ("wilcoxon", "distribution"): "approx",
    ("yuen", "trim"): 0.0,
    ("bootstrap", "reps"): 1,
    ("permutation", "reps"): 499,
    ("bootstrap-t", "trim"): 0.1,
    ("bootstrap-t", "reps"): 199,
    ("max-t", "resampling"): "bootstrap",
    ("max-t", "draws"): 1,
    ("max-t", "covariance"): "cluster",
    ("max-t", "stepdown"): False,
    ("max-t", "small_sample"): False,
}

#: flag -> command-line values that must be refused (exit status 2, a message naming the flag)
CLI_INVALID = {
    "--exact-bound-n": ["-1", "2.5", "many"],
    "--zero-method": ["bogus"],
    "--distribution": ["bogus"],
    "--trim": ["0.9", "0.5", "-0.1", "nan", "inf", "a"],
    "--reps": ["0", "-5", "2.5"],
    "--resampling": ["jackknife"],
    "--draws": ["0", "-5", "x"],
    "--covariance": ["robust"],
}

KINDS = {"test": TEST_REGISTRY, "multiplicity": MULTIPLICITY_REGISTRY}


def _registry_options():
    return {
        (kind, entry.name, option.name)
        for kind, registry in KINDS.items()
        for entry in registry.values()
        for option in entry.options
    }


def _spec_fields(kind: str, entry: str, options: dict) -> dict:
    if kind == "test":
        return {"test": entry, "test_options": options}
    return {"multiplicity": entry, "multiplicity_options": options}


def _derived(option) -> list:
    """Invalid values derived from an option's declaration: every option of the registry, a new
    one included, is covered by these (on top of the hand-written :data:`INVALID`)."""
    if option.kind == "choice":
        return ["no-such-" + option.name, 1, None]
    if option.kind == "bool":
        return ["yes", 2, None]
    if option.kind == "int":
        return [option.minimum - 1, option.minimum + 0.5, True, str(option.default), None]
    out = [math.nan, math.inf, str(option.default), True, None]
    if option.minimum is not None:
        out.append(option.minimum - 0.01)
    if option.below is not None:
        out += [option.below, option.below + 1]
    return out


def _cases():
    cases = []
    for kind, entry, name in sorted(_registry_options()):
        option = KINDS[kind][entry].option(name)
        values = INVALID.get((kind, entry, name), []) + _derived(option)
        unique = {repr(v): v for v in values}
        cases += [(kind, entry, name, v) for v in unique.values()]
    return cases


def _cli_derived(option) -> list[str]:
    if option.kind == "choice":
        return ["no-such-" + option.name]
    if option.kind == "int":
        return [str(option.minimum - 1), "x"]
    return [str(option.below if option.below is not None else option.minimum - 1), "x"]


def _flag(option_name: str):
    for registry in KINDS.values():
        for entry in registry.values():
            for option in entry.options:
                if option.name == option_name:
                    return option
    raise KeyError(option_name)


@pytest.fixture(scope="module")
def small():
    return simulate_scores([0.8, 0.0, -0.8], 40, n_clusters=8, rng=1).scores


# ---------------------------------------------------------------------- invalid values
def test_the_hand_written_lists_name_options_of_the_registry():
    """The explicit values (written from docs/guide.md, not from the code) are for options that
    exist: a renamed or removed option fails here."""
    assert set(INVALID) <= _registry_options()
    assert set(VALID) <= {(entry, option) for _, entry, option in _registry_options()}
    assert set(CLI_INVALID) <= {_flag(name).cli_flag for _, _, name in _registry_options()}
    # every option rankci had when the registry was made has its hand-written values (and the
    # exact_bound_n of auto, the default test since issue 25, and bootstrap-t's, issue 26)
    assert len(INVALID) == 16 and len(VALID) == 16 and len(CLI_INVALID) == 8


@pytest.mark.parametrize(("kind", "entry", "option", "value"), _cases())
def test_an_invalid_value_is_refused_when_the_spec_is_made(kind, entry, option, value):
    fields = _spec_fields(kind, entry, {option: value})
    with pytest.raises(ValueError, match=rf"\b{option}\b") as error:
        MethodSpec(**fields)
    allowed = KINDS[kind][entry].option(option).allowed()
    assert allowed in str(error.value), "the message states the allowed values"
    with pytest.raises(ValueError, match=rf"\b{option}\b"):  # the JSON form of a spec too
        MethodSpec.from_dict(json.loads(json.dumps({**MethodSpec().to_dict(), **fields})))


@pytest.mark.parametrize(("kind", "entry", "option", "value"), _cases())
def test_an_invalid_value_is_refused_by_rank(kind, entry, option, value, small):
    keyword = {"test": entry} if kind == "test" else {"multiplicity": entry}
    with pytest.raises(ValueError, match=rf"\b{option}\b"):
        rankci.rank(small, **keyword, **{option: value})


@pytest.mark.parametrize(("kind", "entry", "option"), sorted(_registry_options()))
def test_valid_values_and_defaults_are_kept(kind, entry, option):
    declared = KINDS[kind][entry].option(option)
    for value in [declared.default] + (
        [VALID[(entry, option)]] if (entry, option) in VALID else []
    ):
        spec = MethodSpec(**_spec_fields(kind, entry, {option: value}))
        stored = (spec.test_options if kind == "test" else spec.multiplicity_options)[option]
        assert stored == value and type(stored) is type(value)


def test_numpy_numbers_are_values_like_any_other():
    spec = MethodSpec(test="yuen", test_options={"trim": np.float64(0.1)})
    assert spec.test_options["trim"] == 0.1 and type(spec.test_options["trim"]) is float
    spec = MethodSpec(
        multiplicity="max-t",
        multiplicity_options={"draws": np.int64(300), "stepdown": np.bool_(False)},
    )
    assert spec.multiplicity_options == {"draws": 300, "stepdown": False}
    assert json.dumps(spec.to_dict())  # JSON-safe


def test_the_issue_examples_are_refused():
    for fields, words in [
        ({"test": "yuen", "test_options": {"trim": 0.9}}, "trim must be in [0, 0.5), got 0.9"),
        ({"test": "bootstrap", "test_options": {"reps": 0}}, "reps must be an integer >= 1"),
        ({"test": "permutation", "test_options": {"reps": -5}}, "reps must be an integer >= 1"),
        (
            {"test": "wilcoxon", "test_options": {"zero_method": "bogus"}},
            "unknown zero_method 'bogus'; choose one of 'wilcox', 'pratt'",
        ),
        (
            {"multiplicity": "max-t", "multiplicity_options": {"draws": -5}},
            "draws must be an integer >= 1, got -5",
        ),
    ]:
        with pytest.raises(ValueError) as error:
            MethodSpec(**fields)
        assert words in str(error.value)


def test_the_direct_functions_check_through_the_registry(small):
    units = small.units("item")
    with pytest.raises(ValueError, match=re.escape("trim must be in [0, 0.5), got 0.9")):
        rankci.pairwise_tests(units, "yuen", trim=0.9)
    with pytest.raises(ValueError, match="test='t' takes the options exact_bound_n; got trim"):
        rankci.pairwise_tests(units, "t", trim=0.1)
    from rankci.certify.maxt import certify_maxt, maxt_ranking_from_cov

    for bad, words in [
        ({"draws": 0}, "draws must be an integer >= 1, got 0"),
        ({"resampling": "jackknife"}, "unknown resampling 'jackknife'"),
        ({"stepdown": "no"}, "stepdown must be True or False"),
        ({"small_sample": "yes"}, "small_sample must be True or False"),
    ]:
        with pytest.raises(ValueError, match=re.escape(words)):
            certify_maxt(units, **bad)
    with pytest.raises(ValueError, match="draws must be an integer >= 1"):
        maxt_ranking_from_cov([0.1, 0.2], np.eye(2), draws=0)


def test_shims_removed_before_the_first_release_are_plain_errors(small):
    units = small.units("item")
    with pytest.raises(TypeError, match="unexpected keyword argument 'method'"):
        rankci.pairwise_tests(units, "wilcoxon", method="approx")
    for old in ("kind", "method"):
        with pytest.raises(TypeError, match=old):
            rankci.plan(small, **{old: "cluster"})


# ---------------------------------------------------------------------- the command line
def _cli_cases():
    tests = {}
    for entry in TEST_REGISTRY.values():
        for option in entry.options:
            tests.setdefault(option.cli_flag, ("--test", entry.name))
    for entry in MULTIPLICITY_REGISTRY.values():
        for option in entry.options:
            tests.setdefault(option.cli_flag, ("--multiplicity", entry.name))
    cases = []
    for _, _, name in sorted(_registry_options()):
        option = _flag(name)
        if option.kind == "bool":  # a flag without a value: nothing invalid to give it
            continue
        values = CLI_INVALID.get(option.cli_flag, []) + _cli_derived(option)
        cases += [(option.cli_flag, v, tests[option.cli_flag]) for v in dict.fromkeys(values)]
    return sorted(set(cases))


@pytest.mark.parametrize(("flag", "value", "choice"), _cli_cases())
def test_the_command_line_refuses_an_invalid_value_naming_the_flag(flag, value, choice, capsys):
    argv = ["rank", str(CHEMBENCH), *choice, flag, value]
    try:
        status = main(argv)
    except SystemExit as done:  # argparse: a value that is not a number, or not a choice
        status = done.code
    assert status == 2
    err = capsys.readouterr().err
    assert flag in err
    name = flag[2:].replace("-", "_")
    assert not re.search(rf"(?<!-)\b{name}\b", err.replace(flag, "")), err  # flag words only
    assert "rankci: read" not in err  # refused before the data were read


def test_an_invalid_value_is_refused_before_the_data_are_read(tmp_path, capsys):
    assert main(["rank", str(tmp_path / "absent.csv"), "--trim", "0.9"]) == 2
    assert "--trim must be in [0, 0.5), got 0.9" in capsys.readouterr().err


def test_a_flag_of_another_test_or_procedure_is_an_error(capsys):
    for argv, words in [
        (
            ["--trim", "0.1"],
            "--trim is an option of --test yuen or bootstrap-t; this run uses --test auto",
        ),
        (
            ["--test", "yuen", "--reps", "99"],
            "--reps is an option of --test bootstrap, "
            "bootstrap-t or permutation; this run uses "
            "--test yuen",
        ),
        (["--correction"], "--correction is an option of --test wilcoxon"),
        (["--single-step"], "--single-step is an option of --multiplicity max-t"),
        (
            ["--draws", "100"],
            "--draws is an option of --multiplicity max-t; this run uses --multiplicity holm",
        ),
    ]:
        assert main(["rank", str(CHEMBENCH), *argv]) == 2
        assert words in capsys.readouterr().err


def test_python_m_rankci_names_the_flag():
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "rank", str(CHEMBENCH), "--trim", "0.9"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode != 0
    assert "--trim must be in [0, 0.5), got 0.9" in done.stderr


def test_flags_reach_the_spec(tmp_path):
    out = tmp_path / "r.json"
    argv = [
        "rank",
        str(CHEMBENCH),
        "--test",
        "wilcoxon",
        "--zero-method",
        "pratt",
        "--correction",
        "--distribution",
        "approx",
        "--format",
        "json",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    spec = MethodSpec.from_dict(json.loads(out.read_text())["spec"])
    assert dict(spec.test_options) == {
        "zero_method": "pratt",
        "correction": True,
        "distribution": "approx",
    }
    argv = [
        "rank",
        str(CHEMBENCH),
        "--multiplicity",
        "max-t",
        "--draws",
        "200",
        "--single-step",
        "--no-small-sample",
        "--format",
        "json",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    spec = MethodSpec.from_dict(json.loads(out.read_text())["spec"])
    assert dict(spec.multiplicity_options) == {
        "draws": 200,
        "stepdown": False,
        "small_sample": False,
    }


# ---------------------------------------------------------------------- completeness
def test_method_spec_reads_the_registry():
    assert TESTS == tuple(TEST_REGISTRY) and MULTIPLICITIES == tuple(MULTIPLICITY_REGISTRY)
    assert dict(TEST_OPTIONS) == {n: e.option_names for n, e in TEST_REGISTRY.items()}
    assert dict(MULTIPLICITY_OPTIONS) == {
        n: e.option_names for n, e in MULTIPLICITY_REGISTRY.items()
    }
    # the tests the issue names, each with the options rankci has always had
    assert set(TESTS) == {
        "auto",
        "t",
        "wilcoxon",
        "yuen",
        "z",
        "sign",
        "bootstrap",
        "permutation",
        "bootstrap-t",
    }  # bootstrap-t: issue 26 (the seed's trimmed-mean test); auto: issue 25
    assert set(MULTIPLICITIES) == {"holm", "bonferroni", "max-t"}


@pytest.mark.parametrize("name", sorted(TEST_REGISTRY))
def test_each_test_function_takes_exactly_its_options(name):
    entry = TEST_REGISTRY[name]
    parameters = inspect.signature(entry.load()).parameters
    keyword_only = [p for p, v in parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY]
    expected = [*entry.option_names, *(["rng"] if entry.random else [])]
    assert sorted(keyword_only) == sorted(expected)
    for option in entry.options:  # the function's own defaults are the registry's
        assert parameters[option.name].default == option.default, option.name


@pytest.mark.parametrize("name", sorted(MULTIPLICITY_REGISTRY))
def test_each_certifier_takes_scores_spec_and_rng(name):
    parameters = list(inspect.signature(MULTIPLICITY_REGISTRY[name].load()).parameters)
    assert parameters == ["scores", "spec", "rng"]


def _parser(command: str):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command]


def _actions(parser) -> dict:
    return {flag: action for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize("command", ["rank", "taubest", "report"])
def test_the_command_line_has_a_flag_for_every_option(command):
    actions = _actions(_parser(command))
    assert tuple(actions["--test"].choices) == TESTS
    assert tuple(actions["--multiplicity"].choices) == MULTIPLICITIES
    for registry in KINDS.values():
        for entry in registry.values():
            for option in entry.options:
                action = actions[option.cli_flag]
                assert action.dest == option.name
                assert action.default is None  # only what is given reaches the spec
                if option.kind == "choice":
                    assert tuple(action.choices) == option.choices
                if option.kind == "bool":
                    assert action.const is option.flag_sets


def test_benchmarks_and_check_have_the_flags_of_their_tests():
    benchmarks = _actions(_parser("benchmarks"))
    assert tuple(benchmarks["--test"].choices) == TESTS
    for entry in TEST_REGISTRY.values():
        for option in entry.options:
            assert benchmarks[option.cli_flag].dest == option.name
    check = _actions(_parser("check"))
    assert set(check["--test"].choices) == {"auto", "t", "z"}
    assert check["--test"].default == "auto"
    assert check["--exact-bound-n"].dest == "exact_bound_n"


def _doc_table() -> list[list[str]]:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("### Options of the tests and multiplicity procedures", 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("| `"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_guide_lists_every_option_with_its_flag_default_and_range():
    documented = {}
    for users, option, flag, default, allowed in _doc_table():
        for user in re.findall(r"`([^`]+)`", users):
            documented[(user, option.strip("`"))] = (flag, default.strip("`"), allowed)
    expected = {}
    for registry in KINDS.values():
        for entry in registry.values():
            for o in entry.options:
                flag = f"`{o.cli_flag}`" + (f" (sets {o.flag_sets})" if o.kind == "bool" else "")
                expected[(entry.name, o.name)] = (
                    flag,
                    repr(o.default),
                    o.allowed().replace(">=", "≥"),
                )
    assert documented == expected


def test_the_guide_lists_every_test():
    text = GUIDE.read_text(encoding="utf-8")
    table = text.split("## Choosing the paired test", 1)[1].split("###", 1)[0]
    body = table.split("|---|", 1)[1]  # the rows below the header
    listed = re.findall(r"^\| `([\w-]+)`", body, flags=re.MULTILINE)
    assert sorted(listed) == sorted(TESTS)
    options = text.split("### Options of the tests and multiplicity procedures", 1)[1]
    for name in (*TESTS, *MULTIPLICITIES):  # in the options table, or named as taking none
        assert f"`{name}`" in options, name


def test_the_registry_and_the_spec_import_nothing_heavy(tmp_path):
    code = (
        "import sys, rankci.registry, rankci.method; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'pandas', 'scipy')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert done.stdout.strip() == "[]"
