"""A body checked once (saved objects, when their file is read) is not checked again as a view of its kind, and
one changed at its top level, or checked for another kind, is."""

from __future__ import annotations

import copy
from typing import Any

from cvo.objects import MachineConfigPool, Node
from cvo.objects.base import CheckedBody, checked


def node() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"a": "b"}},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def test_a_checked_body_and_its_deep_copies_are_not_checked_again(monkeypatch: Any) -> None:
    body = checked(Node.KIND, node())
    assert type(body) is CheckedBody
    copied = copy.deepcopy(body)
    assert type(copied) is CheckedBody and copied == body
    copied["status"]["conditions"][0]["type"] = "Changed"  # a deep copy: the original is untouched
    assert body["status"]["conditions"][0]["type"] == "Ready"
    calls: list[Any] = []
    import cvo.objects.base as base

    real = base.check
    monkeypatch.setattr(base, "check", lambda *a, **k: calls.append(a) or real(*a, **k))
    view = Node.read(copy.deepcopy(body))
    assert view.name == "n" and calls == [] and type(view.body) is dict
    MachineConfigPool.read({**body, "kind": "MachineConfigPool"})  # another kind: checked
    assert len(calls) == 1


def test_a_change_at_the_top_level_makes_it_checked_again(monkeypatch: Any) -> None:
    body = checked(Node.KIND, node())
    body["status"] = 5  # no longer what the schema passed
    assert body.kind is None
    view = Node.read(body)  # read as absent, with its warning, not trusted
    assert view.status.conditions == ()
