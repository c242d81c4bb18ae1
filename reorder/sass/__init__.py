"""The SASS instruction model: control codes, opcode facts, operand read/write sets, decoding
(`model`), renaming inside instruction words, listings, and writing a kernel's instructions
back into a cubin (`writer`)."""
