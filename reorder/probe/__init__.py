"""Probe variants: clock reads put into the compiled code (`templates`, `grow`, `variants`),
run on the GPU (`run`), and turned into a timeline (`timeline`)."""
