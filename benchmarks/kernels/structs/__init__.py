"""Suite kernels written the way their libraries write them: structs by value, descriptor
arrays in device memory, mangled template names, a counter cleared before every launch."""
