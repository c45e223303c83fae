"""The agent's exit codes (also in :mod:`.protocol`), in a module light enough for the
``--server`` client to import."""

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USER = 2
EXIT_CANCELLED = 130
