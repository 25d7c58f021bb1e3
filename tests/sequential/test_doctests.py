"""The examples in the docstrings of rankci.sequential run and give what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "wealth",
    "updating",
    "intake",
    "statements",
    "orders",
    "monitor",
    "replay",
    "freezing",
    "certifier",
    "certify",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"rankci.sequential.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
