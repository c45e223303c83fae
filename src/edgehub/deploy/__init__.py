"""Model-transformation support: backends of pattern lists (seed 002)."""
