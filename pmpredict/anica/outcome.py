"""What a campaign found, as the views show it and the checkpoint keeps it.

`CampaignOutcome` gathers the campaign's ranked discoveries, its counters, the predictors (label,
identity, how many blocks each was asked and how often it failed) and how the campaign ended.
The checkpoint is this outcome's JSON plus the campaign's own state, written atomically: a
campaign resumed from it goes on exactly as if it had not stopped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pmpredict.errors import InputError
from pmpredict.formats.jsonio import read_json, write_json

CHECKPOINT_FORMAT = "pmpredict-anica-checkpoint"
CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class CampaignOutcome:
    predictors: list[dict]          # {"spec", "label", "identity", "asked", "cached"}
    config: dict
    counters: dict
    discoveries: list               # campaign.Discovery, ranked
    failures: list[dict]            # FailureLog.to_json()
    schemes: int                    # instruction schemes blocks were sampled from
    elapsed_s: float
    ended: str                      # "budget" or "interrupted"
    checkpoint: str
    state: dict                     # the campaign's own state (for resuming)

    @classmethod
    def of(cls, campaign, evaluator, predictors, schemes, elapsed_s: float, ended: str,
           checkpoint: str) -> "CampaignOutcome":
        state = campaign.state()
        described = [{"spec": p.spec, "label": p.label, "identity": ident,
                      "asked": asked, "cached": cached}
                     for p, ident, asked, cached in zip(predictors, evaluator.identities,
                                                        evaluator.asked, evaluator.cached)]
        return cls(described, state["config"], dict(state["counters"]),
                   campaign.discoveries_ranked(), evaluator.failures.to_json(), len(schemes),
                   elapsed_s, ended, checkpoint, state)

    @property
    def labels(self) -> list[str]:
        return [p["label"] for p in self.predictors]


def save_checkpoint(path: str, outcome: CampaignOutcome) -> None:
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    write_json(path, {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                      "predictors": outcome.predictors, "elapsed_s": outcome.elapsed_s,
                      "failures": outcome.failures, "campaign": outcome.state}, "checkpoint")


def load_checkpoint(path: str) -> dict:
    data = read_json(path).data
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise InputError(path, "not an AnICA checkpoint (pmpredict anica --checkpoint)")
    if data.get("version") != CHECKPOINT_VERSION:
        raise InputError(path, f"checkpoint version {data.get('version')!r}: this pmpredict "
                               f"reads version {CHECKPOINT_VERSION}")
    if not isinstance(data.get("campaign"), dict):
        raise InputError(path, "the checkpoint has no campaign state")
    return data
