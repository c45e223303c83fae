"""Evaluation datasets, kept in `edgehub.toolchains.datasets` (so the `Evaluator` components
share them); named here for the eval modules that import them."""

from edgehub.toolchains.datasets import Dataset, load_dataset, tensor_specs

__all__ = ["Dataset", "load_dataset", "tensor_specs"]
