"""The one progress display of long jobs (pmpredict/commands/progress.py): plain lines when
stderr is not a terminal, a tqdm bar when it is; an ETA over every planned phase."""

from __future__ import annotations

import io

from pmpredict.commands.progress import ProgressDisplay
from pmpredict.measure.experiment_runs import Progress
from pmpredict.infer.pmevo import InferConfig


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_inference_lines_name_the_start_the_phase_and_an_upper_bound_eta():
    out = io.StringIO()
    show = ProgressDisplay(out, interval=0)
    show.plan_inference(*InferConfig(restarts=2, max_sweeps=10).steps())
    show.inference({"phase": "refine", "restart": 0, "step": 5, "error": 0.0321, "volume": 40,
                    "elapsed": 10.0})
    show.inference({"phase": "refine", "restart": 1, "step": 0, "error": 0.5, "volume": 30,
                    "elapsed": 20.0})
    first, second = out.getvalue().splitlines()
    # 5 of at most 20 sweeps in 10 s: at most 30 s left
    assert first == "infer start 1/2 refine sweep: 5  error 3.21%  volume 40, eta at most 30s"
    # 10 of 20 in 20 s
    assert second == "infer start 2/2 refine sweep: 0  error 50.00%  volume 30, eta at most 20s"


def test_inference_steps_count_the_ea_before_refinement():
    assert InferConfig(method="pmevo", generations=40, restarts=3).steps() == (3, 41, 0, 0)
    assert InferConfig(method="pmevo+exact", generations=4, max_sweeps=7).steps() == (1, 5, 7, 0)
    assert InferConfig(restarts=4, distill=100, distill_sweeps=5).steps() == (4, 0, 14, 5)


def test_plain_lines_wait_for_the_interval_but_not_for_the_end_of_a_phase():
    out = io.StringIO()
    show = ProgressDisplay(out, interval=3600)
    for done in range(11):
        show(Progress("experiments", done, 10, 0, float(done)))
    assert out.getvalue().splitlines() == ["measure experiments: 0/10",
                                           "measure experiments: 10/10"]


def test_a_terminal_gets_a_bar_per_phase_and_notes_above_it():
    term = Terminal()
    show = ProgressDisplay(term)
    plan = (("singletons", 4), ("pairs", 6))
    for done in range(5):
        show(Progress("singletons", done, 4, 0, done * 1.0, plan))
    show.note("a note")
    show(Progress("pairs", 3, 6, 0, 3.0, plan))
    show.close()
    text = term.getvalue()
    assert "\r" in text                                   # redrawn in place
    assert "measure singletons (1/2): 4/4" in text and "measure pairs (2/2): 3/6" in text
    assert "a note\n" in text
    assert "eta 3s for all phases" in text                # 3 left at 1 s each (7 in 7 s)
