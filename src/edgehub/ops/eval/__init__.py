"""Accuracy evaluation: datasets, metrics against a float reference, and goals (see `run`)."""

from edgehub.ops.eval.report import EvalReport
from edgehub.ops.eval.run import EVAL_RUNTIMES, EvalRequest, evaluate, evaluate_and_fix

__all__ = ["EVAL_RUNTIMES", "EvalReport", "EvalRequest", "evaluate", "evaluate_and_fix"]
