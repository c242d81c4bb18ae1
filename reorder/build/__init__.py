"""Building candidates: a family of moves applied over a kernel and verified (`pipeline`), the
move space of one kernel (`space`), and the PTX level (`ptxlevel`, `ptxcandidate`: PTX moves
compiled by the producer's ptxas and verified)."""
