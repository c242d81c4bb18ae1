"""The PTX moves, each a frozen value with `instances` and `apply` over the analyses: hoist
(with its text in rewrite), peel, reuse, the loop moves (prefetch, unroll, with the
iterations they run ahead: shift, expand, loopfind, loopload, fresh registers) and wgmma."""
