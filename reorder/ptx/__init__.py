"""The PTX level: PTX read into values, analysed, moved, printed and compiled by its producer's ptxas.

Data flow (each module imports only those above it):

  lexer, instruction -> model (parse/print, byte-identical round trip)
  -> registers, effects (what each instruction reads, writes and touches in memory)
  -> cfg (blocks, dominators, loops), dataflow (reaching definitions, liveness),
     provenance (which kernel parameter an address derives from), memory (ordering rules)
  -> graph (the dependency graph in NetworkX), analysis (all of it for one function)
  -> guards (when a block runs, as a predicate), legality (may a load move there?)
  -> rewrite (the moved text), peel and hoist (moves: values with `instances` and `apply`)
  -> plans (which moves when none are named), candidate (moves applied, printed, compiled
     with reorder.ptx.toolchain.compile, verified), command (`reorder ptx-hoist`)
  -> registry (the move kinds the search may make: name, stage, instances, apply),
     kinds (the built-in kinds registered), searchspace (a candidate's PTX moves: a walk
     over the kinds, sampled by the search and rebuilt from its picks)

Registers are virtual at this level and ptxas allocates and schedules, so a PTX move
carries no under-stall risk; its legality is memory, barriers and control flow.
"""
