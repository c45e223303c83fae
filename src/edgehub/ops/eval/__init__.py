"""Accuracy evaluation: datasets, metrics against a float reference, and goals (see `run`)."""

from edgehub.ops.eval.report import EvalReport
from edgehub.ops.eval.run import EvalRequest, eval_runtimes, evaluate, evaluate_and_fix

__all__ = ["EvalReport", "EvalRequest", "eval_runtimes", "evaluate", "evaluate_and_fix"]
