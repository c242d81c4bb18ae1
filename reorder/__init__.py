"""reorder: a search-based optimizer for NVIDIA GPU machine code (SASS in cubins)."""

__version__ = "0.1.0"
