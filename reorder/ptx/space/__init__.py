"""What the search may do at the PTX level: the registry of move kinds, the built-in kinds
(kinds, loopkinds, wgmmakind), the plans used when no move is named, and a candidate's PTX
moves as a walk over the kinds (searchspace)."""
