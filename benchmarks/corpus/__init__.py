"""The conformance corpus: real architectures exported to ONNX as users export them.

`build.py` makes the builder venv and the corpus; the other modules run inside that venv.
"""
