"""The examples in the docstrings of rankci.sequential run and give what they show."""

import doctest

import pytest

from rankci.sequential import monitor, orders, replay, wealth


@pytest.mark.parametrize("module", [wealth, orders, monitor, replay], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
