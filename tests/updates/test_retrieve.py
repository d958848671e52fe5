"""calculateAvailableUpdatesStatus: the spec checked in the CVO's order with its reasons and messages, then
the bad answers of the issue's list through a real server, each a RetrievedUpdates=False with the CVO's
reason and "Unable to retrieve available updates: …"."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cvo.updates.client import UpdateServiceOptions
from cvo.updates.model import Release, Retrieved
from cvo.updates.retrieve import Calculated, calculate, parse_uuid
from tests.support.update_service import Answer, FixedRegistry, UpdateService, node

ID = "897f0a22-33ca-4106-a2c4-29b75250255a"
GOOD = {"update_service": "https://example.com/graph", "cluster_id": ID, "desired_arch": "amd64",
        "current_arch": "amd64", "channel": "stable-4.1", "version": "4.1.0"}


def run(**kw: Any) -> Calculated:
    args = {**GOOD, **kw}
    service = args.pop("update_service")
    return asyncio.run(calculate(service, registry=FixedRegistry(), options=UpdateServiceOptions(timeout=5), **args))


@pytest.mark.parametrize(("change", "reason", "message"), [
    ({"update_service": ""}, "NoUpstream", "No updateService server has been set to retrieve updates."),
    ({"update_service": "::"}, "InvalidURI", 'failed to parse update service URL: parse "::": missing protocol scheme'),
    ({"update_service": "https://x\n/graph"}, "InvalidURI",
     'failed to parse update service URL: parse "https://x\\n/graph": net/url: invalid control character in URL'),
    ({"update_service": "https://example.com:http/graph"}, "InvalidURI",
     'failed to parse update service URL: parse "https://example.com:http/graph": invalid port ":http" after host'),
    ({"update_service": "https://example.com/%zz"}, "InvalidURI",
     'failed to parse update service URL: parse "https://example.com/%zz": invalid URL escape "%zz"'),
    ({"update_service": "1http://x"}, "InvalidURI",
     'failed to parse update service URL: parse "1http://x": first path segment in URL cannot contain colon'),
    ({"update_service": "http://[::1/graph"}, "InvalidURI",
     'failed to parse update service URL: parse "http://[::1/graph": missing \']\' in host'),
    ({"update_service": "http://a b/graph"}, "InvalidURI",
     'failed to parse update service URL: parse "http://a b/graph": invalid character " " in host name'),
    ({"update_service": "https://us er@x/graph"}, "InvalidURI",
     'failed to parse update service URL: parse "https://us er@x/graph": net/url: invalid userinfo'),
    ({"cluster_id": ""}, "InvalidID", "invalid cluster ID: invalid UUID length: 0"),
    ({"cluster_id": "not-a-uuid"}, "InvalidID", "invalid cluster ID: invalid UUID length: 10"),
    ({"cluster_id": "897f0a22x33ca-4106-a2c4-29b75250255a"}, "InvalidID", "invalid cluster ID: invalid UUID format"),
    ({"cluster_id": "urx:uuid:897f0a22-33ca-4106-a2c4-29b75250255a"}, "InvalidID",
     'invalid cluster ID: invalid urn prefix: "urx:uuid:"'),
    ({"desired_arch": ""}, "NoArchitecture", "Architecture has not been configured."),
    ({"version": ""}, "NoCurrentVersion",
     "The cluster version does not have a semantic version assigned and cannot calculate valid upgrades."),
    ({"channel": ""}, "NoChannel", "The update channel has not been configured."),
    ({"version": "4.1"}, "InvalidCurrentVersion",
     "The current cluster version is not a valid semantic version and cannot be used to calculate upgrades."),
    # the order: the first failing check decides
    ({"cluster_id": "", "channel": "", "version": ""}, "InvalidID", "invalid cluster ID: invalid UUID length: 0"),
    ({"channel": "", "version": "x"}, "NoChannel", "The update channel has not been configured."),
])
def test_the_spec_is_checked_in_the_cvos_order(change: dict[str, str], reason: str, message: str) -> None:
    assert run(**change) == Calculated(retrieved=Retrieved("False", reason, message))


@pytest.mark.parametrize("text", ["{897f0a22-33ca-4106-a2c4-29b75250255a}", "urn:uuid:897f0a22-33ca-4106-a2c4-29b75250255a",
                                  "897f0a2233ca4106a2c429b75250255a", "897F0A22-33CA-4106-A2C4-29B75250255A"])
def test_the_uuid_forms_google_uuid_accepts(text: str) -> None:
    assert parse_uuid(text) == ID


def served(answer: Answer | None = None, graph: Any = None, **kw: Any) -> Calculated:
    with UpdateService() as service:
        if graph is not None:
            service.graph = graph
        if answer is not None:
            service.answer = answer
        return run(update_service=service.url, **kw)


GRAPH = {"nodes": [node("4.1.0"), node("4.1.2"), node("4.1.1")], "edges": [[0, 1], [0, 2]]}


def test_a_graph_is_retrieved() -> None:
    got = served(graph=GRAPH)
    assert got.retrieved == Retrieved("True")
    assert got.current == Release("4.1.0", "quay.io/openshift-release-dev/ocp-release:4.1.0")
    assert [r.version for r in got.updates or ()] == ["4.1.2", "4.1.1"]  # sorted later, by setAvailableUpdates


def test_no_updates_is_null_not_empty() -> None:
    assert served(graph={"nodes": [node("4.1.0")]}).updates is None


@pytest.mark.parametrize(("answer", "reason", "message"), [
    (Answer(body=b"<!DOCTYPE html><html>Service Unavailable</html>"), "ResponseInvalid",
     "invalid character '<' looking for beginning of value"),
    (Answer(body=json.dumps(GRAPH).encode()[:40]), "ResponseInvalid", "unexpected end of JSON input"),
    (Answer(body=b'{"kind": "Status", "items": []}'), "VersionNotFound",
     'currently reconciling cluster version 4.1.0 not found in the "stable-4.1" channel'),
    (Answer(body=b'[{"version": "4.1.0"}]'), "ResponseInvalid",
     "json: cannot unmarshal array into Go value of type cincinnati.graph"),
    (Answer(status=503, body=b"busy"), "ResponseFailed", "unexpected HTTP status: 503 Service Unavailable"),
    (Answer(body=json.dumps({"nodes": [node("4.1.0"), node("4.1.0.1")]}).encode()), "ResponseInvalid",
     'Invalid character(s) found in patch number "0.1"'),
    (Answer(body=json.dumps({"nodes": [node("4.1.0")], "edges": [[0, 3]]}).encode()), "ResponseInvalid",
     "invalid recommended update node: edge [0,3] points to no node (the graph has 1)"),
])
def test_bad_answers_keep_the_cvos_reasons(answer: Answer, reason: str, message: str) -> None:
    got = served(answer)
    assert got == Calculated(retrieved=Retrieved("False", reason, f"Unable to retrieve available updates: {message}"))


def test_a_graph_without_the_current_version_is_version_not_found() -> None:
    got = served(graph={"nodes": [node("4.1.1")], "edges": []})
    assert got.retrieved == Retrieved("False", "VersionNotFound", "Unable to retrieve available updates: currently "
                                      'reconciling cluster version 4.1.0 not found in the "stable-4.1" channel')


def test_the_query_carries_the_canonical_cluster_id_and_version() -> None:
    with UpdateService() as service:
        service.graph = GRAPH
        run(update_service=service.url, cluster_id="{897F0A22-33CA-4106-A2C4-29B75250255A}", desired_arch="Multi",
            current_arch="Multi")
    assert service.requests[0].query == {"arch": ["multi"], "channel": ["stable-4.1"], "id": [ID], "version": ["4.1.0"]}
