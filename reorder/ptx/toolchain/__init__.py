"""PTX to cubin as its producer would compile it (compile: nvcc's or Triton's ptxas, with the
producer's flags), and CUDA source to PTX (cuda). Imports no other room of reorder.ptx."""
