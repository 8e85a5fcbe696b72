"""One module per job; each `main(args)` reads, applies pure transforms from `ctlplane.pipeline.transforms`, writes."""
