"""asv benchmarks of dperm's compiled core (see ../asv.conf.json)."""
