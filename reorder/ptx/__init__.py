"""The PTX level: PTX read into values, analysed, moved, printed and compiled by its producer's ptxas.

Five rooms, each importing only the rooms below it (the import contract in pyproject.toml):

  space      what the search may do: the registry of move kinds (name, stage, instances,
             apply), the built-in kinds (kinds, loopkinds, wgmmakind), plans (which moves
             when none are named) and searchspace (a candidate's PTX moves: a walk over the
             kinds, sampled by the search and rebuilt from its picks)
  moves      the moves: hoist (its text in rewrite), peel, reuse, prefetch and unroll (with
             shift, expand, loopfind, loopload and fresh registers), wgmma
  analyses   over one function: cfg (blocks, dominators, loops), dataflow (reaching
             definitions, liveness), provenance (which kernel parameter an address derives
             from), memory (ordering rules), graph (the dependency graph in NetworkX),
             analysis (all of it at once), guards (when a block runs, as a predicate),
             legality (may a load move there?), counted (loops whose iterations can be named)
  model      lexer, instruction -> model (parse/print, byte-identical round trip) ->
             registers, effects (what each instruction reads, writes and touches in memory)
  toolchain  compile (PTX -> cubin as its producer would) and cuda (.cu -> PTX), beside the
             model: neither imports the other

A candidate (moves applied, printed, compiled, verified) is reorder.build's; the commands
are reorder.cli's. Registers are virtual at this level and ptxas allocates and schedules,
so a PTX move carries no under-stall risk; its legality is memory, barriers and control flow.
"""
