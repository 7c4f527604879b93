"""bobcat: yod launcher and evaluation CLI for the SMARTMAP runtime."""
__version__ = "0.1.0"
