"""The `hub` command line: headless runs for scripts and CI. Imports no Textual."""
