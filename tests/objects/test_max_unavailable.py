"""A pool's ``maxUnavailable`` as the machine-config operator's node controller scales it
(pkg/controller/node/node_controller.go ``maxUnavailable``, apimachinery intstr ``GetScaledValueFromIntOrPercent``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.objects.machineconfigpool import scaled_max_unavailable


@pytest.mark.parametrize(("value", "machines", "expected"), [
    (None, 10, 1),  # no value: 1
    (1, 10, 1), (3, 2, 3),  # an integer is itself, more than the pool's machines too
    (0, 10, 1),  # 0 is 1
    (-1, 10, -1),  # a negative integer stays: the controller finds no room and picks no node
    ("10%", 5, 1),  # floor(0.5) = 0, then 1
    ("10%", 10, 1), ("10%", 397, 39), ("10%", 100, 10),
    ("33%", 7, 2), ("33%", 3, 1), ("33%", 100, 33), ("33%", 10, 3),
    ("50%", 5, 2), ("100%", 7, 7), ("1%", 120, 1), ("150%", 4, 6),  # no cap at 100 %
    ("0%", 10, 1), ("0%", 0, 1),
    ("+20%", 10, 2), ("007%", 100, 7),  # strconv.Atoi takes a sign and leading zeros
    ("-10%", 10, -1), ("-10%", 5, -1),  # floor(-0.5) = -1: no room
])
def test_max_unavailable_scaled_as_the_node_controller_does(value: Any, machines: int, expected: int) -> None:
    assert scaled_max_unavailable(value, machines) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("5", "maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage"),
    ("", "maxUnavailable: invalid value for IntOrString: invalid type: string is not a percentage"),
    ("abc%", 'maxUnavailable: invalid value for IntOrString: invalid value "abc%": strconv.Atoi: parsing "abc": '
             "invalid syntax"),
    ("%", 'maxUnavailable: invalid value for IntOrString: invalid value "%": strconv.Atoi: parsing "": invalid syntax'),
    (" 10%", 'maxUnavailable: invalid value for IntOrString: invalid value " 10%": strconv.Atoi: parsing " 10": '
             "invalid syntax"),
    ("1.5%", 'maxUnavailable: invalid value for IntOrString: invalid value "1.5%": strconv.Atoi: parsing "1.5": '
             "invalid syntax"),
    ("99999999999999999999%", 'maxUnavailable: invalid value for IntOrString: invalid value "99999999999999999999%": '
                              'strconv.Atoi: parsing "99999999999999999999": value out of range'),
    (1.5, "maxUnavailable: invalid value for IntOrString: invalid type: neither int nor percentage"),
    (True, "maxUnavailable: invalid value for IntOrString: invalid type: neither int nor percentage"),
    ([1], "maxUnavailable: invalid value for IntOrString: invalid type: neither int nor percentage"),
    (2**31, "maxUnavailable: invalid value for IntOrString: invalid type: neither int nor percentage"),
])
def test_what_the_node_controller_refuses_is_its_error(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        scaled_max_unavailable(value, 10)
    assert str(err.value) == message


@given(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
       | st.from_regex(r"\A[+-]?[0-9]{1,22}%\Z"), st.integers(0, 1000))
def test_any_max_unavailable_is_a_count_or_one_line(value: Any, machines: int) -> None:
    try:
        count = scaled_max_unavailable(value, machines)
    except ValueError as err:
        assert "\n" not in str(err) and str(err).startswith("maxUnavailable: ")
    else:
        assert count != 0
