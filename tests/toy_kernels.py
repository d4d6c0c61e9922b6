"""Predicting an Intel-syntax kernel on a toy model with chosen machine facts: the engine
rules' tests assert hand-computed cycles for a few instructions under given facts."""

from __future__ import annotations

from dataclasses import replace

from pmpredict.asm.kernel import select_kernel
from pmpredict.asm.parse import parse
from pmpredict.model.machine import MachineModel
from pmpredict.predict.predictor import Predictor


def predict_on(model: MachineModel, body: str, **pipeline):
    """The report of `body` (Intel syntax, the whole kernel) on `model` with `pipeline` as its
    machine facts (none given: every fact as assumed)."""
    text = "# OSACA-BEGIN\n" + body + "# OSACA-END\n"
    return Predictor(replace(model, pipeline=pipeline)).predict(
        select_kernel(parse(text, "intel", "k.s")), "intel", "k.s")
