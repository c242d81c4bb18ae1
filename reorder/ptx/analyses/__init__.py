"""The PTX analyses of one function, over the model: blocks, dominators and loops (cfg),
reaching definitions and liveness (dataflow), address provenance, memory order, the
dependency graph, all of it at once (analysis), block guards, whether a load may move
(legality) and counted loops (counted). They read the model; they move nothing."""
