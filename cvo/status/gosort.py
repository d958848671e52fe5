"""Go's ``sort.Slice``: pattern-defeating quicksort, not stable, in the same order of comparisons and swaps.

A port of Go's ``sort/zsortfunc.go`` (``pdqsort_func`` and its helpers, Go 1.19 and later) and ``sort.Slice``:
where elements compare equal, the order they end in is Go's (Python's stable sort keeps their input order, which
differs from Go's past 12 elements).  oc sorts updates with it (``sortConditionalUpdatesBySemanticVersions``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_MASK = (1 << 64) - 1
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


class _Data(Generic[T]):
    """``lessSwap`` over a list: ``less(i, j)`` compares the elements at positions i and j now."""

    def __init__(self, items: list[T], less: Callable[[T, T], bool]) -> None:
        self.items = items
        self.less_items = less

    def less(self, i: int, j: int) -> bool:
        return self.less_items(self.items[i], self.items[j])

    def swap(self, i: int, j: int) -> None:
        self.items[i], self.items[j] = self.items[j], self.items[i]


def go_sort_slice(items: list[T], less: Callable[[T, T], bool]) -> None:
    """``sort.Slice(items, less)``, in place."""
    _pdqsort(_Data(items, less), 0, len(items), len(items).bit_length())


def _insertion_sort(data: _Data[Any], a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and data.less(j, j - 1):
            data.swap(j, j - 1)
            j -= 1


def _sift_down(data: _Data[Any], lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and data.less(first + child, first + child + 1):
            child += 1
        if not data.less(first + root, first + child):
            return
        data.swap(first + root, first + child)
        root = child


def _heap_sort(data: _Data[Any], a: int, b: int) -> None:
    first, lo, hi = a, 0, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(data, i, hi, first)
    for i in range(hi - 1, -1, -1):
        data.swap(first, first + i)
        _sift_down(data, lo, i, first)


def _pdqsort(data: _Data[Any], a: int, b: int, limit: int) -> None:
    max_insertion = 12
    was_balanced = was_partitioned = True
    while True:
        length = b - a
        if length <= max_insertion:
            _insertion_sort(data, a, b)
            return
        if limit == 0:
            _heap_sort(data, a, b)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(data, a, b)
        if hint == _DECREASING:
            _reverse_range(data, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING and _partial_insertion_sort(data, a, b):
            return
        if a > 0 and not data.less(a - 1, pivot):
            a = _partition_equal(data, a, b, pivot)
            continue
        mid, was_partitioned = _partition(data, a, b, pivot)
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            was_balanced = left >= threshold
            _pdqsort(data, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right >= threshold
            _pdqsort(data, mid + 1, b, limit)
            b = mid


def _partition(data: _Data[Any], a: int, b: int, pivot: int) -> tuple[int, bool]:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and data.less(i, a):
        i += 1
    while i <= j and not data.less(j, a):
        j -= 1
    if i > j:
        data.swap(j, a)
        return j, True
    data.swap(i, j)
    i, j = i + 1, j - 1
    while True:
        while i <= j and data.less(i, a):
            i += 1
        while i <= j and not data.less(j, a):
            j -= 1
        if i > j:
            break
        data.swap(i, j)
        i, j = i + 1, j - 1
    data.swap(j, a)
    return j, False


def _partition_equal(data: _Data[Any], a: int, b: int, pivot: int) -> int:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not data.less(a, i):
            i += 1
        while i <= j and data.less(a, j):
            j -= 1
        if i > j:
            return i
        data.swap(i, j)
        i, j = i + 1, j - 1


def _partial_insertion_sort(data: _Data[Any], a: int, b: int) -> bool:
    max_steps, shortest_shifting = 5, 50
    i = a + 1
    for _ in range(max_steps):
        while i < b and not data.less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < shortest_shifting:
            return False
        data.swap(i, i - 1)
        if i - a >= 2:  # the smaller one to the left
            for j in range(i - 1, 0, -1):
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
        if b - i >= 2:  # the greater one to the right
            for j in range(i + 1, b):
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
    return False


def _break_patterns(data: _Data[Any], a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    random = length  # xorshift(length)
    modulus = 1 << length.bit_length()  # nextPowerOfTwo
    for idx in range(a + (length // 4) * 2 - 1, a + (length // 4) * 2 + 2):
        random ^= (random << 13) & _MASK
        random ^= random >> 7
        random ^= (random << 17) & _MASK
        other = random & (modulus - 1)
        if other >= length:
            other -= length
        data.swap(idx, a + other)


def _choose_pivot(data: _Data[Any], a: int, b: int) -> tuple[int, int]:
    shortest_ninther, max_swaps = 50, 4 * 3
    length = b - a
    swaps = [0]
    i, j, k = a + length // 4 * 1, a + length // 4 * 2, a + length // 4 * 3
    if length >= 8:
        if length >= shortest_ninther:  # Tukey's ninther
            i = _median(data, i - 1, i, i + 1, swaps)
            j = _median(data, j - 1, j, j + 1, swaps)
            k = _median(data, k - 1, k, k + 1, swaps)
        j = _median(data, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == max_swaps:
        return j, _DECREASING
    return j, _UNKNOWN


def _order2(data: _Data[Any], a: int, b: int, swaps: list[int]) -> tuple[int, int]:
    if data.less(b, a):
        swaps[0] += 1
        return b, a
    return a, b


def _median(data: _Data[Any], a: int, b: int, c: int, swaps: list[int]) -> int:
    a, b = _order2(data, a, b, swaps)
    b, c = _order2(data, b, c, swaps)
    a, b = _order2(data, a, b, swaps)
    return b


def _reverse_range(data: _Data[Any], a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        data.swap(i, j)
        i, j = i + 1, j - 1
