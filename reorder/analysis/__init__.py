"""Analyses over decoded SASS: basic blocks and the CFG, liveness, def-use webs, pointer
provenance of memory operands, loops, and the static cost model."""
