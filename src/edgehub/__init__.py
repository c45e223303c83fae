"""edgehub: compile, profile and run ML models on the hardware they ship on."""

__version__ = "0.1.0"
