"""The test and bench harness: local real Kafka clusters, cut and black-holed links. Only a checkout has it:
nothing here is installed with ctlplane."""
