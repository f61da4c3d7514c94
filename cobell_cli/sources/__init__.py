"""Where runs come from besides `cobell submit`: the cluster's own record (YARN's finished apps,
the Spark History Server, Spark event logs)."""
