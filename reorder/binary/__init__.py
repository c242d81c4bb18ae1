"""Cubin bytes: the ELF and its tables (`cubin`, `cubincheck`, `nvinfo`), kernel names, branch
immediates, and the NVIDIA tools that read them. Imports only `reorder.base`."""
