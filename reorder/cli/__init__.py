"""The `reorder` command line (`main`), its subcommands (`commands`, `ptxhoist`, `ptxloops`) and
`reorder bench` (`bench`). The top layer: nothing imports it."""
