"""The accuracy figures and task metrics, kept in `edgehub.toolchains.metrics` (so the
`Evaluator` components share them); named here for the eval modules that import them."""

from edgehub.toolchains.metrics import (
    ENTRY_POINT_GROUP,
    HIGHER_IS_BETTER,
    IDENTICAL_DB,
    OUTPUT_FIGURES,
    TaskMetric,
    output_figures,
    score,
    summarize_figures,
    task_metric,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "HIGHER_IS_BETTER",
    "IDENTICAL_DB",
    "OUTPUT_FIGURES",
    "TaskMetric",
    "output_figures",
    "score",
    "summarize_figures",
    "task_metric",
]
