"""cvo's recommend text against oc's own code on 400 generated cases (tests/golden/recommend/oc-differential.jsonl).

Each line is what oc's ``options.Complete`` and ``options.Run`` (oc ba31c88d, built by hack/oc-recommend/harness.py
with oc's --mock-clusterversion data) wrote for the case :func:`tests.support.recommend_cases.case` makes from the
seed: standard output, the error stream, the returned error.  cvo must write the same, byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cvo.objects import ClusterVersion
from cvo.status.recommend import OptionsError, alert_conditions, complete, no_test_data, recommend
from cvo.status.recommend_alerts import parse_alerts
from tests.support.recommend_cases import ALERTS_FILE, case

RECORDED = Path(__file__).resolve().parents[1] / "golden" / "recommend" / "oc-differential.jsonl"
OC = {r["seed"]: r for r in map(json.loads, RECORDED.read_text().splitlines())}


def cvo_answer(seed: int) -> dict[str, Any]:
    """What cvo writes for the case, in the harness's shape."""
    generated = case(seed)
    flags = generated["options"]
    try:
        options = complete(flags["version"], quiet=flags["quiet"], show_outdated_releases=flags["show"],
                           accept=flags["accept"])
    except OptionsError as err:
        return {"complete_error": str(err), "out": "", "err": ""}
    alerts = generated["alerts"]
    conditions = (alert_conditions(parse_alerts(json.dumps(alerts).encode())) if alerts is not None
                  else [no_test_data(ALERTS_FILE)])
    result = recommend(ClusterVersion.read(generated["cv"]), conditions, options)
    return {"out": result.out, "err": result.err, **({} if result.error is None else {"error": result.error})}


@pytest.mark.parametrize("seed", sorted(OC))
def test_cvo_writes_what_oc_writes(seed: int) -> None:
    expected = {k: v for k, v in OC[seed].items() if k != "seed"}
    assert cvo_answer(seed) == expected


def test_the_cases_cover_what_oc_does() -> None:
    """The recorded answers exercise every path of recommend.go worth having (else regenerate with more seeds)."""
    text = "\n".join(r["out"] + r["err"] + r.get("error", "") + r.get("complete_error", "") for r in OC.values())
    for said in ("And ", "NoConditions", "warning: Cannot parse SemVer available update", "warning: Cannot inject",
                 "accepted Failing", "explicitly accepted via --accept", "Updates to 5.", "  Version: ",
                 "other than the accepted", "no update to", "no updates to", "No updates available",
                 "Cannot refresh available updates", "No current Failing info", "An update is in progress",
                 "CriticalAlerts/", "PodDisruptionBudgetAlerts/", "NodeAlerts/", "VirtAlerts/", "UpdatePrecheckAlerts/",
                 "PodImagePullAlerts/", "Recommended=False", "Recommended=Unknown", "cannot parse SemVer target",
                 "--quiet can only", "unnecessary", "via ConditionalUpdateRisk", "NoTestData", "Upstream update service is unset"):
        assert said in text, said
