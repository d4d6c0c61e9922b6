"""A campaign run to its budget, checkpointed as it goes: what `pmpredict anica` runs.

`run_checkpointed` asks the predictors through an Evaluator (the answer store, then the runner),
builds the campaign (from a checkpoint's state when resuming) and runs it until the budget of
seconds or blocks evaluated is spent, both counted over every run of the campaign. The
checkpoint is written every `checkpoint_every_s` seconds between two units of work and once at
the end. Ctrl-C (KeyboardInterrupt) ends the run at the state between the last two units of
work: a unit interrupted inside its predictor call has drawn random numbers it never used, so
the campaign resumed from that checkpoint goes on exactly as if it had not stopped.
"""

from __future__ import annotations

import time

from pmpredict.anica.campaign import Campaign
from pmpredict.anica.executor import Evaluator, FailureLog
from pmpredict.anica.outcome import CampaignOutcome, save_checkpoint


def run_checkpointed(predictors, store, runner, schemes, config, *, saved: dict | None,
                     checkpoint: str, budget_s: float | None, budget_calls: int | None,
                     checkpoint_every_s: float,
                     progress_for=None) -> tuple[CampaignOutcome, str]:
    """(the outcome, how the campaign ended: "budget" or "interrupted").

    saved: a checkpoint to resume (load_checkpoint), else None. progress_for(spent): the
    progress callback of the campaign given the seconds earlier runs spent (an object with
    close()), or None for none. The runner is closed at the end (through the evaluator)."""
    evaluator = None
    try:
        evaluator = Evaluator(predictors, store, runner)
        if saved is not None:
            evaluator.failures = FailureLog.from_json(saved.get("failures"))
        campaign = Campaign(schemes, evaluator, config,
                            state=saved["campaign"] if saved else None)
        spent = saved.get("elapsed_s", 0.0) if saved else 0.0
        start = time.monotonic()
        progress = progress_for(spent) if progress_for else None

        # the state between two units of work: what a stop in the middle of one goes back to
        # (a unit interrupted inside its predictor call has drawn random numbers it never used)
        boundary = {"state": campaign.state(), "saved": time.monotonic()}

        def should_stop() -> bool:
            calls = campaign.counters["calls"]
            boundary["state"] = campaign.state()
            if time.monotonic() - boundary["saved"] >= checkpoint_every_s:
                save("running", campaign)
                boundary["saved"] = time.monotonic()
            return ((budget_s is not None and spent + time.monotonic() - start >= budget_s)
                    or (budget_calls is not None and calls >= budget_calls))

        def save(how: str, at) -> CampaignOutcome:
            outcome = CampaignOutcome.of(at, evaluator, predictors, schemes,
                                         spent + time.monotonic() - start, how, checkpoint)
            save_checkpoint(checkpoint, outcome)
            return outcome

        how = "budget"
        try:
            campaign.run(should_stop, progress)
            at = campaign
        except KeyboardInterrupt:
            how = "interrupted"
            at = Campaign(schemes, evaluator, config, state=boundary["state"])
        outcome = save(how, at)
        if progress:
            progress.close()
    finally:
        if evaluator is not None:
            evaluator.close()
        else:
            runner.close()
    return outcome, how
