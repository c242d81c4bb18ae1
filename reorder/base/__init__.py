"""Bottom layer: the error root, the file-system boundary, process lifetime, the disk cache and
provenance. Imports nothing else of the project."""
