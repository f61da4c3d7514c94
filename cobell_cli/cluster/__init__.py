"""Cluster adapters: what is running right now, as plain RunningApp records."""
