"""One package per runtime: components.py declares the components; provider modules register
on import."""
