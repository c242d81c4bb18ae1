"""The PTX model: text read into values and printed back byte for byte (lexer, instruction,
model), and what each instruction reads, writes and touches in memory (registers, effects).
Imports nothing else of reorder.ptx."""
